import { getNodePath, type Node, type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';
import { causeChain } from './cause-chain.js';
import { nestedDeeperThan } from './json-depth.js';

/**
 * What is wrong with a text that is not JSON, without any of the text: V8's own `SyntaxError`
 * message quotes it around the error (`Unexpected token 'S', "SecretPass"... is not valid JSON`),
 * which may be a secret — a password sent as plain text or with an unquoted value, or the
 * temporary password in a successor's broken answer. Only the position is kept:
 * `not valid JSON at position 12`, or `not valid JSON` when the message names none.
 */
export function jsonSyntaxMessage(error: unknown): string {
  const position = error instanceof Error ? /\bat position (\d+)/.exec(error.message)?.[1] : undefined;
  return position === undefined ? 'not valid JSON' : `not valid JSON at position ${position}`;
}

/**
 * {@link jsonSyntaxMessage} for a file an operator fixes: where `text` stops being JSON, as line
 * and column, and what was expected there, in words of its own (`not valid JSON at line 3, column
 * 17: comma expected`). V8's message names no position for the commonest mistakes (an unquoted
 * value, a comment, single quotes) and quotes the text instead, which may be a secret (`"clientSecret":
 * s3cr3t`): jsonc-parser, strict, finds the place; `error` is the fallback.
 */
export function jsonFileSyntaxMessage(error: unknown, text: string): string {
  const errors: ParseError[] = [];
  parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const [first] = errors;
  const message = error instanceof Error ? error.message : '';
  const stated = /\bat position (\d+)/.exec(message)?.[1];
  const position =
    first?.offset ??
    (stated !== undefined
      ? Number(stated)
      : /Unexpected end of JSON/.test(message)
        ? text.length
        : undefined);
  if (position === undefined) return 'not valid JSON';
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  const what = first === undefined ? '' : `: ${words(printParseErrorCode(first.error))}`;
  return `not valid JSON at line ${line}, column ${column}${position === text.length ? ' (the end)' : ''}${what}`;
}

/** jsonc-parser's error code in words: `CommaExpected` → `comma expected`; the common slips said plainly. */
function words(code: string): string {
  if (code === 'InvalidSymbol') return 'not a JSON value (text needs double quotes)';
  if (code === 'InvalidCommentToken') return 'a comment (JSON has none)';
  return code.replace(/(?<=[a-z])(?=[A-Z])/g, ' ').toLowerCase();
}

/**
 * An error fit to be kept as a cause, which the log's error serializer writes with the message
 * of every cause in its chain: when the chain holds a `SyntaxError` (a JSON parser's, whose message
 * quotes the text it failed on: the token of a broken token answer, say), a plain error with the
 * top message and the parser's position only, without the chain; otherwise the error itself.
 */
export function withoutParsedText(error: unknown): unknown {
  const syntax = causeChain(error).find((link): link is SyntaxError => link instanceof SyntaxError);
  if (syntax === undefined) return error;
  const position = jsonSyntaxMessage(syntax);
  const message = syntax === error ? position : `${(error as Error).message} (${position})`;
  const cleaned = new Error(message);
  cleaned.name = (error as Error).name;
  return cleaned;
}

/** How deep an operator's file (configuration, mapping table, compare rules, fixture) may nest. */
export const MAX_FILE_DEPTH = 100;

/** Why the text of an operator's JSON file cannot be used; the message names where, never the text. */
export class JsonFileError extends Error {
  override readonly name = 'JsonFileError';
}

/**
 * Parses the text of a JSON file an operator writes. A leading byte order mark is skipped (editors
 * on Windows write one). Refused, with JsonFileError: text that is not JSON (where, in words:
 * jsonFileSyntaxMessage); a key given twice in one object, which JSON.parse takes the last of
 * without a word, so that an edit of the first went unseen; a key `__proto__` (firstKeyProblem);
 * nesting deeper than MAX_FILE_DEPTH,
 * which the checks after parsing would overflow the stack on.
 */
export function parseJsonFile(text: string): unknown {
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new JsonFileError(jsonFileSyntaxMessage(error, json));
  }
  if (nestedDeeperThan(value, MAX_FILE_DEPTH))
    throw new JsonFileError(`nested deeper than ${MAX_FILE_DEPTH} levels`);
  const problem = firstKeyProblem(json);
  if (problem) throw new JsonFileError(problem);
  return value;
}

/**
 * The first object in `json` (valid JSON, nested within MAX_FILE_DEPTH) that has a key twice, or
 * a key `__proto__`, in words. No setting, operation or field has that name, and the checks after
 * parsing could not see it: copied into an object (zod does), it sets the copy's prototype instead
 * of a key, so an entry under it was dropped without a word.
 */
function firstKeyProblem(json: string): string | undefined {
  const root = parseTree(json);
  const pending: Node[] = root ? [root] : [];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (node.type === 'object') {
      const seen = new Set<string>();
      for (const property of node.children ?? []) {
        const key = property.children?.[0]?.value;
        if (typeof key !== 'string') continue;
        if (seen.has(key) || key === '__proto__') {
          const at = getNodePath(node)
            .map((part) => (typeof part === 'number' ? `[${part}]` : `.${part}`))
            .join('');
          return key === '__proto__'
            ? `the key "__proto__" in $${at} names nothing (no setting, operation or field has that name)`
            : `the key ${JSON.stringify(key)} appears twice in $${at} (JSON keeps only the last)`;
        }
        seen.add(key);
      }
    }
    for (const child of node.children ?? []) pending.push(child);
  }
  return undefined;
}
