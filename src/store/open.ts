import { setTimeout as sleep } from 'node:timers/promises';
import type { ResolvedStoreConfig } from '../config/load.js';
import type { Logger } from '../lib/logger.js';
import { isStoreUnavailable } from './errors.js';
import type { Store } from './types.js';

/** How `openStore` behaves while the database is not reachable. */
export interface OpenStoreOptions {
  /** Where each failed attempt is reported (a warning per retry). */
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** false: one attempt only, for CLI commands that should fail at once; default true. */
  retry?: boolean;
  /**
   * Stops retrying (a stop signal during start-up): `openStore` then rejects with the signal's
   * reason, at once while it waits between attempts, else when the attempt under way has failed.
   */
  signal?: AbortSignal | undefined;
  /** PostgreSQL: refuse a database without idm-compat's tables instead of creating them (`MissingStoreError`). */
  requireExisting?: boolean;
}

/**
 * Opens the store the configuration names. Each backend's module (and its driver: better-sqlite3
 * or node:sqlite, pg) is loaded only when it is opened, so a SQLite proxy never loads the
 * PostgreSQL driver and the reverse. PostgreSQL is retried with a doubling wait (bounded by
 * `store.startup`) while it is unreachable, logging each retry; other errors fail at once.
 */
export async function openStore(config: ResolvedStoreConfig, options: OpenStoreOptions = {}): Promise<Store> {
  if (config.type === 'sqlite') {
    const { openSqliteStore, isFileAccessError } = await import('./sqlite/index.js');
    try {
      return openSqliteStore(config.path);
    } catch (error) {
      // The driver's and the file system's words name no file ("unable to open database file").
      if (isStoreUnavailable(error)) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      const hint = isFileAccessError(error)
        ? '; check that its folder exists or can be created, and that the file and folder are writable'
        : '';
      throw new Error(`cannot open the SQLite store ${config.path} (store.path): ${reason}${hint}`, {
        cause: error,
      });
    }
  }
  const { openPostgresStore } = await import('./postgres/index.js');
  const { attempts, initialDelayMs, maxDelayMs } = config.startup;
  const maxAttempts = options.retry === false ? 1 : attempts;
  const { signal } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      const store = await openPostgresStore({ ...config, requireExisting: options.requireExisting === true });
      if (attempt > 1) options.logger?.info({ attempt }, 'store (PostgreSQL) reachable, starting');
      return store;
    } catch (error) {
      if (!isStoreUnavailable(error) || attempt >= maxAttempts) throw error;
      // Asked to stop meanwhile: no further attempt (one that succeeded would have started up).
      signal?.throwIfAborted();
      const retryInMs = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1));
      options.logger?.warn(
        { attempt, attempts: maxAttempts, retryInMs, reason: error.message },
        `store (PostgreSQL) not reachable (attempt ${attempt} of ${maxAttempts}); retrying in ${retryInMs} ms`,
      );
      await sleep(retryInMs, undefined, signal ? { signal } : undefined).catch((aborted: unknown) => {
        signal?.throwIfAborted();
        throw aborted;
      });
    }
  }
}
