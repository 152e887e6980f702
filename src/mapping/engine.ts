import type { Clock } from '../clock.js';
import type { Logger } from '../log/logger.js';
import type { IdMapRepository } from '../store/id-map.js';
import type { SuccessorClient } from '../successor/client.js';
import { describeUpstreamError, UpstreamError } from '../successor/errors.js';
import type { CompiledProfile } from './compile.js';
import { MappingError, TranslationError } from './errors.js';
import { OperationExecutor, type RunInput, type RunResult } from './executor.js';
import { IdResolver } from './ids.js';
import { loadProfile } from './load.js';

/** What the engine talks to. */
export interface MappingDeps {
  successor: SuccessorClient;
  idMap: IdMapRepository;
  clock: Clock;
  logger: Logger;
  /** Path of the successor API on its host, e.g. `/iserv/idm/api/v1`, for IRIs (`{apiBase}`). */
  apiBase: string;
}

/** One loaded profile at work: its tables, its ID resolver (with its cache) and its executor. */
export interface MappingEngine {
  readonly profile: CompiledProfile;
  readonly ids: IdResolver;
  /**
   * Runs a legacy operation (e.g. `user.get`) as the profile's operation table says; every
   * failure is a TranslationError (a successor failure before any write is `upstream`).
   */
  run(operationId: string, input: RunInput): Promise<RunResult>;
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
  });
  const executor = new OperationExecutor(profile, ids, deps.successor, deps.apiBase);
  return {
    profile,
    ids,
    async run(operationId, input) {
      try {
        return await executor.run(operationId, input);
      } catch (error) {
        // The successor's 404 means the entity went away between resolution and use: not found.
        if (error instanceof UpstreamError)
          throw new TranslationError(
            error.code === 'not_found' ? 'not_found' : 'upstream',
            describeUpstreamError(error),
            { upstream: error },
          );
        throw error;
      }
    },
  };
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

/**
 * Holds the profile in `folder`: `initial` when already loaded, else loaded now (throws a
 * MappingError naming file, JSON path and reason).
 */
export function createMappingHolder(
  folder: string,
  deps: MappingDeps,
  initial?: CompiledProfile,
): MappingHolder {
  let engine = createMappingEngine(initial ?? loadProfile(folder), deps);
  return {
    folder,
    current: () => engine,
    reload() {
      let profile: CompiledProfile;
      try {
        profile = loadProfile(folder);
      } catch (error) {
        if (error instanceof MappingError) return { ok: false, error };
        throw error;
      }
      engine = createMappingEngine(profile, deps);
      return { ok: true, profile: profile.name, files: profile.files.length };
    },
  };
}

/** The path of the successor API on its host (`{apiBase}` in IRI templates), from its base URL. */
export function apiBasePath(baseUrl: string): string {
  return new URL(baseUrl).pathname.replace(/\/+$/, '');
}
