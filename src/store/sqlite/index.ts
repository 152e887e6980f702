import { statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { StoreUnavailableError } from '../errors.js';
import type { Migration, Store } from '../types.js';
import {
  API_USER_REMOVALS_MIGRATION,
  API_USERS_MIGRATION,
  KNOWN_ADDRESSES_MIGRATION,
  SqliteApiUserRepository,
  SqliteLoginThrottleRepository,
} from './api-users.js';
import type { SqliteDatabase } from './connection.js';
import { openSqliteDatabase, waitingOutLocks } from './database.js';
import { ID_MAP_MIGRATION, NAMES_VERSION_MIGRATION, SqliteIdMapRepository } from './id-map.js';
import { SHADOW_MIGRATION, SqliteShadowRepository } from './shadow.js';
import { SqliteSsoTokenRepository, SSO_TOKENS_MIGRATION } from './sso-tokens.js';
import { SqliteUsageRepository, USAGE_HOURLY_MIGRATION, USAGE_MIGRATION } from './usage.js';

/** Every SQLite schema step, in order. Each area of the store appends its own. */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  API_USERS_MIGRATION,
  ID_MAP_MIGRATION,
  SSO_TOKENS_MIGRATION,
  KNOWN_ADDRESSES_MIGRATION,
  USAGE_MIGRATION,
  USAGE_HOURLY_MIGRATION,
  SHADOW_MIGRATION,
  API_USER_REMOVALS_MIGRATION,
  NAMES_VERSION_MIGRATION,
];

/**
 * How long readiness fails after a write failed for the file or the disk (SQLITE_FULL, _IOERR,
 * _READONLY, _CANTOPEN) while no write succeeded since. Then it says ready again, so that a
 * replica no traffic reaches is tried anew: its next write shows whether the disk is still full.
 */
const WRITE_FAILURE_READY_AFTER_MS = 30_000;

/** The SQLite store (the default): one file, WAL mode. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private closed = false;
  readonly apiUsers: SqliteApiUserRepository;
  readonly loginThrottle: SqliteLoginThrottleRepository;
  readonly idMap: SqliteIdMapRepository;
  readonly ssoTokens: SqliteSsoTokenRepository;
  readonly usage: SqliteUsageRepository;
  readonly shadow: SqliteShadowRepository;

  /**
   * The file the store was opened from and its identity then (device and inode); none for an
   * in-memory store.
   */
  private readonly opened: { file: string; dev: number; ino: number } | undefined;

  constructor(
    readonly db: SqliteDatabase,
    file?: string,
    private readonly now: () => number = Date.now,
  ) {
    if (file !== undefined && file !== ':memory:') {
      const { dev, ino } = statSync(file);
      this.opened = { file, dev, ino };
    }
    this.apiUsers = waitingOutLocks(new SqliteApiUserRepository(db));
    this.loginThrottle = waitingOutLocks(new SqliteLoginThrottleRepository(db));
    this.idMap = waitingOutLocks(new SqliteIdMapRepository(db), ['upsert']);
    this.ssoTokens = waitingOutLocks(new SqliteSsoTokenRepository(db));
    this.usage = waitingOutLocks(new SqliteUsageRepository(db));
    this.shadow = waitingOutLocks(new SqliteShadowRepository(db));
  }

  /**
   * Readiness: SQLite answers, its writes did not fail for the file or the disk lately (see
   * WRITE_FAILURE_READY_AFTER_MS; a full disk made every SSO token and failed login a 503 while
   * the replica said ready), and `store.path` still names the file the store has open. A file
   * removed, or replaced (a backup restored with `mv`) while the proxy runs, left it serving from
   * the old one, ready, while `apiuser` commands changed the new file: a removed API user kept
   * working. The check is one `stat`.
   */
  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
    const failed = this.db.writeFailure?.();
    if (failed && this.now() - failed.at < WRITE_FAILURE_READY_AFTER_MS) {
      throw new StoreUnavailableError(
        `the store (SQLite) is unavailable: a write failed with ${failed.code} at ${new Date(failed.at).toISOString()} and none succeeded since (a full or failing disk, a file it may not write); ready again ${WRITE_FAILURE_READY_AFTER_MS / 1000} s after the last such failure, or at the next write that succeeds`,
      );
    }
    if (!this.opened) return;
    const { file, dev, ino } = this.opened;
    // Asynchronous: a hung network mount must not stop the event loop (the probe's timeout races it).
    let current: { dev: number; ino: number } | undefined;
    try {
      current = await stat(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (current?.dev === dev && current.ino === ino) return;
    // store.path, not the path itself: /readyz answers without credentials.
    throw new StoreUnavailableError(
      `the store (SQLite) is unavailable: the file at store.path was ${current ? 'replaced' : 'removed'} while the proxy runs, which still has the old file open; API users and IDs changed since are in the new one: restart the proxy (a restored backup takes a restart)`,
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

/** Opens the SQLite store at `file` and brings its schema up to date. */
export function openSqliteStore(file: string, options: { now?: () => number } = {}): SqliteStore {
  const now = options.now ?? Date.now;
  return new SqliteStore(openSqliteDatabase(file, SQLITE_MIGRATIONS, now), file, now);
}

export { isFileAccessError } from './database.js';
