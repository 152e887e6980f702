import pg from 'pg';
import { StoreUnavailableError } from '../errors.js';
import type { Migration } from '../types.js';

/** How to reach PostgreSQL. */
export interface PostgresConnectionOptions {
  /** Connection URL (`postgres://user:password@host:5432/db`); a secret, never logged. */
  url: string;
  /** Connections per process at most. */
  poolSize: number;
  /** Schema holding the tables (created if missing); the connection's default when absent. */
  schema?: string | undefined;
  /** Giving up on opening a connection after this long. */
  connectTimeoutMs: number;
  /** The server cancels a statement that runs longer (`statement_timeout`). */
  statementTimeoutMs: number;
}

/** A connection or a pooled client: what repositories run their statements on. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

const INT8_OID = 20;

/**
 * Times are BIGINT milliseconds and counts are BIGINT; both fit a JS number, so they are parsed
 * as numbers for this pool only (not through the global `pg.types`).
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/** SQLSTATE classes and codes that mean "the database is not there right now". */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25P03']);
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
// node-postgres reports a lost or timed-out connection with these messages and no code.
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'connection timeout',
  'is not queryable',
  'Cannot use a pool after calling end',
  'Query read timeout',
];

/** Whether a driver error means the database is unreachable (rather than a bug or bad data). */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_ERRNOS.has(code)) return true;
  }
  if (error instanceof AggregateError) return error.errors.some(isConnectionFailure);
  return UNAVAILABLE_MESSAGES.some((text) => error.message.includes(text));
}

/** Turns a connection failure into a StoreUnavailableError (message without URL or password). */
export function translateError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isConnectionFailure(error)) return error;
  const code = (error as { code?: unknown }).code;
  const detail =
    code === '57014'
      ? 'a statement timed out'
      : typeof code === 'string'
        ? `connection failed (${code})`
        : 'connection failed or lost';
  return new StoreUnavailableError(`the store (PostgreSQL) is unavailable: ${detail}`, { cause: error });
}

/** A pool of connections to one PostgreSQL database, with connection failures made recognisable. */
export class PostgresDatabase {
  readonly pool: pg.Pool;
  readonly schema: string | undefined;

  constructor(options: PostgresConnectionOptions) {
    // Interpolated into CREATE SCHEMA and the search_path option: plain identifiers only.
    if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
      throw new Error(
        `store schema must be a plain lower-case identifier, got ${JSON.stringify(options.schema)}`,
      );
    }
    this.schema = options.schema;
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      // A lock wait counts as part of the statement; idle transactions are never left open.
      idle_in_transaction_session_timeout: Math.max(options.statementTimeoutMs * 2, 10_000),
      application_name: 'idm-compat',
      types,
      // The schema is a plain identifier (the configuration checks it), so it needs no quoting.
      ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema}` }),
    });
    // An idle connection that breaks (server restart) must not crash the process; the pool drops
    // it and the next query opens a new one.
    this.pool.on('error', () => {});
  }

  /** Runs one statement on a pooled connection. */
  async query<Row extends pg.QueryResultRow>(
    text: string,
    values?: readonly unknown[],
  ): Promise<pg.QueryResult<Row>> {
    try {
      return await this.pool.query<Row>(text, values as unknown[] | undefined);
    } catch (error) {
      throw translateError(error);
    }
  }

  /** Runs `work` in one transaction on one connection; rolls back when it throws. */
  async transaction<T>(work: (client: Queryable) => Promise<T>): Promise<T> {
    const { client, release } = await checkOut(this.pool);
    let broken: unknown;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (isConnectionFailure(error)) broken = error;
      else await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
      throw translateError(error);
    } finally {
      release(broken);
    }
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, each in its own transaction,
 * under a session advisory lock: replicas starting at the same moment apply each step once.
 */
export async function migrate(db: PostgresDatabase, migrations: readonly Migration[]): Promise<number> {
  const { client, release } = await checkOut(db.pool);
  let broken: Error | undefined;
  try {
    const lockKey = `idm-compat schema migrations ${db.schema ?? ''}`;
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
    try {
      if (db.schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${db.schema}`);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)',
      );
      const applied = new Set(
        (await client.query<{ id: string }>('SELECT id FROM schema_migrations')).rows.map((row) => row.id),
      );
      let count = 0;
      for (const migration of migrations) {
        if (applied.has(migration.id)) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (id, applied_at) VALUES ($1, now())', [
            migration.id,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
        count++;
      }
      return count;
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch((error: Error) => {
        broken = error;
      });
    }
  } catch (error) {
    if (isConnectionFailure(error)) broken = error as Error;
    throw translateError(error);
  } finally {
    release(broken);
  }
}

/**
 * A connection taken from the pool for several statements. While it is out, the pool's own error
 * listener is off it, so a connection cut between two statements (the server stopped or
 * restarted, an operator terminated the session) would be an 'error' event that nobody listens
 * to, and that ends the process. The cut is kept here instead: the next statement fails with a
 * connection error, and `release` destroys the connection rather than pooling it again.
 */
async function checkOut(pool: pg.Pool): Promise<{ client: pg.PoolClient; release(broken: unknown): void }> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw translateError(error);
  }
  let cut: Error | undefined;
  const onError = (error: Error) => {
    cut ??= error;
  };
  client.on('error', onError);
  return {
    client,
    release(broken) {
      client.off('error', onError);
      // A connection that failed is destroyed instead of going back to the pool.
      client.release(broken instanceof Error ? broken : cut);
    },
  };
}
