import { MissingStoreError, StoreUnavailableError } from '../errors.js';
import type { Migration, Store } from '../types.js';
import {
  PG_API_USER_REMOVALS_MIGRATION,
  PG_API_USERS_MIGRATION,
  PG_KNOWN_ADDRESSES_MIGRATION,
  PostgresApiUserRepository,
  PostgresLoginThrottleRepository,
} from './api-users.js';
import {
  migrate,
  type PostgresConnectionOptions,
  PostgresDatabase,
  readOnlyError,
  schemaMissingDetail,
} from './database.js';
import { PG_ID_MAP_MIGRATION, PG_NAMES_VERSION_MIGRATION, PostgresIdMapRepository } from './id-map.js';
import { PG_SHADOW_MIGRATION, PostgresShadowRepository } from './shadow.js';
import { PG_SSO_TOKENS_MIGRATION, PostgresSsoTokenRepository } from './sso-tokens.js';
import { PG_USAGE_HOURLY_MIGRATION, PG_USAGE_MIGRATION, PostgresUsageRepository } from './usage.js';

export type { PostgresConnectionOptions } from './database.js';

/** Every PostgreSQL schema step, in order; ids match the SQLite steps of the same area. */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  PG_API_USERS_MIGRATION,
  PG_ID_MAP_MIGRATION,
  PG_SSO_TOKENS_MIGRATION,
  PG_KNOWN_ADDRESSES_MIGRATION,
  PG_USAGE_MIGRATION,
  PG_USAGE_HOURLY_MIGRATION,
  PG_SHADOW_MIGRATION,
  PG_API_USER_REMOVALS_MIGRATION,
  PG_NAMES_VERSION_MIGRATION,
];

/** The tables each migration creates (in the schema the connections' search_path names), by its id. */
const TABLES_BY_MIGRATION = new Map(
  POSTGRES_MIGRATIONS.map(({ id, sql }) => [
    id,
    [...sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/g)].map((match) => match[1] ?? ''),
  ]),
);

/** Every table of the schema. */
const POSTGRES_TABLES = ['schema_migrations', ...new Set([...TABLES_BY_MIGRATION.values()].flat())];

/** The tables of `$1` (names) that are not there. */
const MISSING_TABLES_SQL =
  'ARRAY(SELECT name FROM unnest($1::text[]) AS name WHERE to_regclass(quote_ident(name)) IS NULL)';

/** Options of the PostgreSQL store. */
export interface PostgresStoreOptions extends PostgresConnectionOptions {
  /** How often at most the credentials version row is read (other replicas' changes show within this). */
  credentialsPollMs?: number;
  /**
   * Refuse a database without idm-compat's tables (`MissingStoreError`) instead of creating them:
   * for commands that only read, where a mistyped `store.schema`, or a schema dropped by mistake,
   * would otherwise be created empty and reported as a store with nothing in it.
   */
  requireExisting?: boolean;
}

/** The PostgreSQL store: shared by any number of replicas. */
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  private closed = false;
  readonly apiUsers: PostgresApiUserRepository;
  readonly loginThrottle: PostgresLoginThrottleRepository;
  readonly idMap: PostgresIdMapRepository;
  readonly ssoTokens: PostgresSsoTokenRepository;
  readonly usage: PostgresUsageRepository;
  readonly shadow: PostgresShadowRepository;

  constructor(
    readonly db: PostgresDatabase,
    options: { credentialsPollMs?: number | undefined } = {},
  ) {
    this.apiUsers = new PostgresApiUserRepository(db, options.credentialsPollMs ?? 500);
    this.loginThrottle = new PostgresLoginThrottleRepository(db);
    this.idMap = new PostgresIdMapRepository(db);
    this.ssoTokens = new PostgresSsoTokenRepository(db);
    this.usage = new PostgresUsageRepository(db);
    this.shadow = new PostgresShadowRepository(db);
  }

  /**
   * Reachable, writable and with its tables: a database that takes reads but refuses every write
   * (a standby after a failover) fails every request that records something, and one whose schema
   * was dropped or restored in part fails every request that needs the store, so /readyz reports
   * both.
   */
  async ping(): Promise<void> {
    const { rows } = await this.db.query<{ read_only: string; missing: string[] }>(
      `SELECT current_setting('transaction_read_only') AS read_only, ${MISSING_TABLES_SQL} AS missing`,
      [POSTGRES_TABLES],
    );
    const missing = rows[0]?.missing ?? [];
    if (missing.length > 0)
      throw new StoreUnavailableError(
        `the store (PostgreSQL) is unavailable: ${schemaMissingDetail(`no table ${missing.join(', ')}`)}`,
      );
    if (rows[0]?.read_only === 'on') throw readOnlyError();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }
}

/**
 * Connects to PostgreSQL and brings the schema up to date (under an advisory lock). Rejects with
 * StoreUnavailableError when the server cannot be reached; the pool is closed again then.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const db = new PostgresDatabase(options);
  try {
    if (options.requireExisting) await requireTables(db, options.schema);
    await migrate(db, POSTGRES_MIGRATIONS);
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  return new PostgresStore(db, { credentialsPollMs: options.credentialsPollMs });
}

/**
 * Refuses (`MissingStoreError`) a database without idm-compat's tables, and one restored in part:
 * without tables that migrations it records as applied created. Migrating does not create those
 * again (their steps are recorded), so such a command failed at its first query with "store
 * unavailable (42P01)", exit 1, which sends an operator after the server, not the backup. A table
 * whose migration is not recorded is one a newer version adds; migrating creates it.
 */
async function requireTables(db: PostgresDatabase, schema: string | undefined): Promise<void> {
  const where = schema === undefined ? "on the role's search_path" : `in schema ${schema}`;
  const { rows } = await db.query<{ missing: string[] }>(`SELECT ${MISSING_TABLES_SQL} AS missing`, [
    POSTGRES_TABLES,
  ]);
  const missing = new Set(rows[0]?.missing ?? []);
  if (missing.has('schema_migrations'))
    throw new MissingStoreError(`PostgreSQL has no idm-compat tables ${where}`);
  if (missing.size === 0) return;
  const applied = await db.query<{ id: string }>('SELECT id FROM schema_migrations');
  const lost = applied.rows
    .flatMap(({ id }) => TABLES_BY_MIGRATION.get(id) ?? [])
    .filter((table) => missing.has(table));
  if (lost.length > 0)
    throw new MissingStoreError(
      `PostgreSQL has no table ${lost.join(', ')} ${where}, though its schema_migrations records ${lost.length === 1 ? 'it' : 'them'} as created (a schema restored in part?)`,
      'incomplete',
    );
}
