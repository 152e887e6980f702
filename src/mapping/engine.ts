import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { QUOTE_MAX_CHARS, quoteInput, shorten } from '../lib/quote.js';
import type { CallStats, Observer } from '../observe/observer.js';
import type { IdMapRepository } from '../store/id-map.js';
import type { SuccessorClient } from '../successor/client.js';
import { describeUpstreamError, UpstreamError } from '../successor/errors.js';
import type { CompiledField, CompiledProfile } from './compile.js';
import { MappingError, type MappingProblem, TranslationError } from './errors.js';
import { OperationExecutor, type RunInput, type RunResult } from './executor.js';
import { legacyViolations, type RenderedEntity, type UnusableFieldValue } from './fields.js';
import { IdResolver } from './ids.js';
import { loadProfile } from './load.js';
import type { RequiredOperation } from './served-check.js';

/** What the engine talks to. */
export interface MappingDeps {
  successor: SuccessorClient;
  idMap: IdMapRepository;
  clock: Clock;
  logger: Logger;
  /** Path of the successor API on its host, e.g. `/iserv/idm/api/v1`, for IRIs (`{apiBase}`). */
  apiBase: string;
  observer?: Pick<Observer, 'idCacheLookup'> | undefined;
}

/** One loaded profile at work: its tables, its ID resolver (with its cache) and its executor. */
export interface MappingEngine {
  readonly profile: CompiledProfile;
  readonly ids: IdResolver;
  /**
   * Runs a legacy operation (e.g. `user.get`) as the profile's operation table says; every
   * failure is a TranslationError (a successor failure before any write is `upstream`). Every
   * successor API call of the run adds to `calls` when it is given (the request's log line).
   */
  run(operationId: string, input: RunInput, calls?: CallStats): Promise<RunResult>;
  /**
   * Reads the entity of the operation's kind with this successor UUID and renders `fields` through
   * its field table; undefined when the successor has none. A successor failure is a
   * TranslationError (`upstream`), as with `run`.
   */
  readByUuid(
    operationId: string,
    uuid: string,
    fields: readonly string[],
    calls?: CallStats,
  ): Promise<RenderedEntity | undefined>;
}

/** Builds the engine of a compiled profile. */
export function createMappingEngine(profile: CompiledProfile, deps: MappingDeps): MappingEngine {
  const ids = new IdResolver({
    profile,
    successor: deps.successor,
    idMap: deps.idMap,
    clock: deps.clock,
    apiBase: deps.apiBase,
    logger: deps.logger,
    observer: deps.observer,
  });
  const executor = new OperationExecutor(
    profile,
    ids,
    deps.successor,
    deps.apiBase,
    unusableValueWarning(deps.logger),
  );
  return {
    profile,
    ids,
    async run(operationId, input, calls) {
      try {
        return await executor.run(operationId, input, calls);
      } catch (error) {
        throw asTranslationError(profile, operationId, error);
      }
    },
    async readByUuid(operationId, uuid, fields, calls) {
      try {
        return await executor.readByUuid(operationId, uuid, fields, calls);
      } catch (error) {
        throw asTranslationError(profile, operationId, error);
      }
    },
  };
}

/** A successor failure of an operation as a TranslationError; any other error as it is. */
function asTranslationError(profile: CompiledProfile, operationId: string, error: unknown): unknown {
  if (!(error instanceof UpstreamError)) return error;
  // The successor's 404 means the entity went away between resolution and use: not found.
  const violations = legacyViolations(profile.operations.get(operationId), error);
  return new TranslationError(
    error.code === 'not_found' ? 'not_found' : 'upstream',
    describeUpstreamError(error),
    violations === undefined ? { upstream: error } : { upstream: error, violations },
  );
}

/**
 * Warns once per field (per loaded profile: a reload tells again) that the successor sends values
 * its format cannot render: the operator fixes the field table or the successor; each such value
 * renders as null (or the field's default), not once per entity read.
 */
function unusableValueWarning(logger: Logger): UnusableFieldValue {
  const told = new Set<CompiledField>();
  return (resource, field, value) => {
    if (told.has(field)) return;
    told.add(field);
    // A list field sent as no list, in a write's answer (a read fails on it).
    const listField = field.many || field.contains !== undefined;
    logger.warn(
      {
        resource: resource.resource,
        field: field.name,
        attribute: field.attribute.join('.'),
        format: listField ? 'list' : field.format,
        value: unusableValue(value),
        file: resource.file,
      },
      `successor value unusable as a legacy ${listField ? 'list' : field.format}: ${resource.resource}.${field.name} renders as ${field.contains ? 'false' : field.default === undefined ? 'null' : 'its default'} (told once per field)`,
    );
  };
}

/**
 * A value the warning shows: a text quoted, a number as it is, an object or list only by its size,
 * not the data it holds (its keys included), which may be a person's.
 */
function unusableValue(value: unknown): string {
  if (typeof value === 'string') return quoteInput(value);
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (value !== null && typeof value === 'object') return `an object of ${Object.keys(value).length} keys`;
  return shorten(String(JSON.stringify(value)), QUOTE_MAX_CHARS);
}

/** Outcome of a reload: the new profile is live, or the old one stayed live and why. */
export type ReloadResult = { ok: true; profile: string; files: number } | { ok: false; error: MappingError };

/** The live mapping tables of the proxy: swapped as a whole on reload, never half-updated. */
export interface MappingHolder {
  /** The profile folder, e.g. `/etc/idm-compat/mappings/iserv-idm-v1`. */
  readonly folder: string;
  /** The engine requests use now; a request keeps the engine it started with. */
  current(): MappingEngine;
  /** Reads the folder again; on any problem the current tables stay live and the problems are returned. */
  reload(): ReloadResult;
}

export type { RequiredOperation, ServedAnswer } from './served-check.js';

/** The problems of a profile that lacks operations the proxy serves (empty when it has them all). */
export function missingOperations(
  profile: CompiledProfile,
  required: readonly RequiredOperation[],
): MappingProblem[] {
  return required
    .filter((operation) => !profile.operations.has(operation.id))
    .map((operation) => ({
      file: '(operations)',
      path: `$.operations[${JSON.stringify(operation.id)}]`,
      message: `the proxy serves ${operation.label}, which has no operation table entry`,
    }));
}

/** Loads the profile in `folder` and refuses it (MappingError) when it lacks a required operation. */
export function loadServingProfile(folder: string, required: readonly RequiredOperation[]): CompiledProfile {
  const profile = loadProfile(folder, required);
  const problems = missingOperations(profile, required);
  if (problems.length > 0) throw new MappingError(profile.name, problems);
  return profile;
}

/**
 * Holds the profile in `folder`, loaded now (throws a MappingError naming file, JSON path and
 * reason). A profile, at start-up or on reload, must map every operation in `required`: one that
 * does not is refused rather than failing requests later.
 */
export function createMappingHolder(
  folder: string,
  deps: MappingDeps,
  required: readonly RequiredOperation[] = [],
  /** The profile when the caller already loaded (and checked) it. */
  initial?: CompiledProfile,
): MappingHolder {
  let engine = createMappingEngine(initial ?? loadServingProfile(folder, required), deps);
  return {
    folder,
    current: () => engine,
    reload() {
      let profile: CompiledProfile;
      let next: MappingEngine;
      try {
        profile = loadServingProfile(folder, required);
        // Built here too: a profile the engine cannot be built from (its ID cache, say) is refused
        // like a broken file, and the old tables stay live.
        next = createMappingEngine(profile, deps);
      } catch (error) {
        return { ok: false, error: asMappingError(folder, error) };
      }
      engine = next;
      return { ok: true, profile: profile.name, files: profile.files.length };
    },
  };
}

/** Any failure to load or build a profile as a MappingError: the operator sees one kind of report. */
function asMappingError(folder: string, error: unknown): MappingError {
  if (error instanceof MappingError) return error;
  return new MappingError(folder, [
    {
      file: '(profile)',
      path: '$',
      message: `the mapping engine cannot be built from it: ${error instanceof Error ? error.message : String(error)}`,
    },
  ]);
}

/** The path of the successor API on its host (`{apiBase}` in IRI templates), from its base URL. */
export function apiBasePath(baseUrl: string): string {
  return new URL(baseUrl).pathname.replace(/\/+$/, '');
}
