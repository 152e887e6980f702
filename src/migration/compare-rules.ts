import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { type AppConfig, ConfigError } from '../config/load.js';
import { JsonFileError, parseJsonFile } from '../lib/json-syntax.js';
import {
  mostSpecific,
  OPERATION_PATTERN,
  OPERATION_PATTERN_RULE,
  unknownPatterns,
} from '../lib/operation-patterns.js';
import { utf8Text } from '../lib/utf8-text.js';
import { type CompiledPath, compilePath, JsonPathError } from './json-path.js';

/** The compare rules shipped with the package (known harmless differences). */
export const DEFAULT_COMPARE_RULES_FILE = fileURLToPath(
  new URL('../../mappings/compare-rules.default.json', import.meta.url),
);

const jsonPath = z.string().superRefine((value, ctx) => {
  try {
    compilePath(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof JsonPathError ? error.message : String(error) });
  }
});

/** How values are normalised before they are compared. */
export const normaliseSchema = z.strictObject({
  idsCaseInsensitive: z
    .boolean()
    .optional()
    .describe('Compare legacy IDs (_id, createdBy, deletedBy, owner, and the ID lists) case-insensitively'),
  datesToDay: z.boolean().optional().describe('Compare date-times only by their day (YYYY-MM-DD)'),
  dateTimesToUtc: z
    .boolean()
    .optional()
    .describe('Compare date-times as instants: +01:00 and Z forms of the same time are equal'),
  trimTrailingWhitespace: z.boolean().optional().describe('Ignore whitespace at the end of strings'),
});

/** The rules for one operation (or the default): what to ignore and how to normalise. */
export const compareRuleSchema = z.strictObject({
  ignore: z.array(jsonPath).optional().describe('JSON paths whose values are not compared'),
  unorderedArrays: z
    .union([z.boolean(), z.array(jsonPath)])
    .optional()
    .describe('Arrays compared regardless of order: JSON paths, or true for every array'),
  normalise: normaliseSchema.optional(),
});

/** A compare rules file: `default` for every operation, `operations` by operation id or glob. */
export const compareRulesSchema = z.strictObject({
  $schema: z.string().optional(),
  description: z.string().optional(),
  default: compareRuleSchema.optional(),
  operations: z
    .record(z.string().regex(OPERATION_PATTERN, OPERATION_PATTERN_RULE), compareRuleSchema)
    .optional()
    .describe('Per operation id or glob (user.get, user.*); the most specific one adds to the default'),
});

/** A compare rules file as written. */
export type CompareRulesFile = z.infer<typeof compareRulesSchema>;
/** Normalisation switches. */
export type Normalise = Required<z.infer<typeof normaliseSchema>>;

/** The rules that apply to one operation, compiled. */
export interface ResolvedRule {
  ignore: CompiledPath[];
  unorderedArrays: true | CompiledPath[];
  normalise: Normalise;
}

/** Compare rules ready to use: resolves (and caches) the rule of each operation. */
export interface CompareRules {
  readonly file: CompareRulesFile;
  forOperation(operation: string): ResolvedRule;
}

/** A rules file that cannot be read or is invalid: `file JSON-path: reason`. */
export class CompareRulesError extends Error {
  override readonly name = 'CompareRulesError';
}

/** Compiles validated rules; an operation gets the default merged with its most specific entry. */
export function compileCompareRules(file: CompareRulesFile): CompareRules {
  const cache = new Map<string, ResolvedRule>();
  const operations = file.operations ?? {};
  const base = file.default ?? {};
  return {
    file,
    forOperation(operation) {
      const cached = cache.get(operation);
      if (cached) return cached;
      const key = mostSpecific(Object.keys(operations), operation);
      const rule = mergeRules(base, key === undefined ? {} : (operations[key] ?? {}));
      cache.set(operation, rule);
      return rule;
    },
  };
}

type Rule = z.infer<typeof compareRuleSchema>;

// The operation's rule adds to the default: ignore lists and unordered paths are joined (true
// wins), normalise switches set on the operation override the default's.
function mergeRules(base: Rule, own: Rule): ResolvedRule {
  const paths = (list: string[] | undefined) => (list ?? []).map(compilePath);
  const unordered = (value: Rule['unorderedArrays']) =>
    value === true ? true : value === false || value === undefined ? [] : paths(value);
  const a = unordered(base.unorderedArrays);
  const b = unordered(own.unorderedArrays);
  const normalise = { ...base.normalise, ...own.normalise };
  return {
    ignore: [...paths(base.ignore), ...paths(own.ignore)],
    unorderedArrays: own.unorderedArrays === false ? [] : a === true || b === true ? true : [...a, ...b],
    normalise: {
      idsCaseInsensitive: normalise.idsCaseInsensitive ?? false,
      datesToDay: normalise.datesToDay ?? false,
      dateTimesToUtc: normalise.dateTimesToUtc ?? false,
      trimTrailingWhitespace: normalise.trimTrailingWhitespace ?? false,
    },
  };
}

/**
 * Validates parsed JSON as a rules file; throws {@link CompareRulesError} naming every problem.
 * With `operationIds` (the legacy operations; this folder may not import their table), an entry
 * of `operations` that covers none of them is a problem too, worded as the configuration's
 * (`migration.recording.operations`): a typo such as `user.lsit` would apply to nothing, unseen.
 */
export function parseCompareRules(
  value: unknown,
  label: string,
  operationIds?: readonly string[],
): CompareRules {
  const parsed = compareRulesSchema.safeParse(value);
  if (parsed.success && operationIds !== undefined) {
    const unknown = unknownPatterns(Object.keys(parsed.data.operations ?? {}), operationIds, (p) =>
      jsonPathOf(['operations', p]),
    );
    if (unknown.length > 0)
      throw new CompareRulesError(
        unknown.map(({ path, message }) => `${label} ${path}: ${message}`).join('\n'),
      );
  }
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const where = jsonPathOf(issue.path);
      // A bad record key (an operation pattern) carries the reason in its nested issue.
      const message =
        issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
      return `${label} ${where}: ${message}`;
    });
    throw new CompareRulesError(problems.join('\n'));
  }
  return compileCompareRules(parsed.data);
}

/** Where a problem is in a rules file, as its messages name it: `$.operations.user.get.ignore[0]`. */
function jsonPathOf(keys: readonly PropertyKey[]): string {
  return ['$', ...keys.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))].join('');
}

/**
 * Reads and validates a rules file (default: the shipped rules); with `operationIds`, an
 * operation entry that covers none of them is refused ({@link parseCompareRules}).
 */
export function loadCompareRules(
  file: string = DEFAULT_COMPARE_RULES_FILE,
  operationIds?: readonly string[],
): CompareRules {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new CompareRulesError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  // Another encoding's `ü` in a path or a value would be read as U+FFFD, matching nothing.
  const read = utf8Text(bytes);
  if ('problem' in read) throw new CompareRulesError(`${file}: the file ${read.problem}`);
  const text = read.text;
  let value: unknown;
  try {
    value = parseJsonFile(text);
  } catch (error) {
    if (!(error instanceof JsonFileError)) throw error;
    throw new CompareRulesError(`${file}: ${error.message}`);
  }
  return parseCompareRules(value, file, operationIds);
}

/**
 * The compare rules shadow mode runs with, read as `serve` reads them (at start, and only with a
 * legacy upstream, `migration.legacy`, since only shadow mode uses them): `migration.compare.rules`
 * or the shipped file. A file that cannot be read, does not validate or names an operation none of
 * `operationIds` is, is a {@link ConfigError} at `migration.compare.rules`, so `config check`
 * refuses what `serve` would.
 */
export function shadowCompareRules(
  config: Pick<AppConfig, 'migration' | 'source'>,
  operationIds: readonly string[],
): CompareRules | undefined {
  if (!config.migration.legacy) return undefined;
  try {
    return loadCompareRules(config.migration.compare.rules, operationIds);
  } catch (error) {
    if (!(error instanceof CompareRulesError)) throw error;
    throw new ConfigError(
      config.source ?? '(embedded defaults)',
      error.message.split('\n').map((message) => ({ path: 'migration.compare.rules', message })),
    );
  }
}

/** Rules that compare everything exactly. */
export const EXACT_RULES: CompareRules = compileCompareRules({});
