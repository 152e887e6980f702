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
import { ID_MAP_MIGRATION, SqliteIdMapRepository } from './id-map.js';
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
];

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

  constructor(readonly db: SqliteDatabase) {
    this.apiUsers = waitingOutLocks(new SqliteApiUserRepository(db));
    this.loginThrottle = waitingOutLocks(new SqliteLoginThrottleRepository(db));
    this.idMap = waitingOutLocks(new SqliteIdMapRepository(db), ['upsert']);
    this.ssoTokens = waitingOutLocks(new SqliteSsoTokenRepository(db));
    this.usage = waitingOutLocks(new SqliteUsageRepository(db));
    this.shadow = waitingOutLocks(new SqliteShadowRepository(db));
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

/** Opens the SQLite store at `file` and brings its schema up to date. */
export function openSqliteStore(file: string): SqliteStore {
  return new SqliteStore(openSqliteDatabase(file, SQLITE_MIGRATIONS));
}

export { isFileAccessError } from './database.js';
