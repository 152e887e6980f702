import { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { StoreUnavailableError } from '../errors.js';
import type { Migration } from '../types.js';
import { SCHEMA_NAME, SCHEMA_NAME_RULE } from './schema-name.js';

/** How to reach PostgreSQL. */
export interface PostgresConnectionOptions {
  /** Connection URL (`postgres://user:password@host:5432/db`); a secret, never logged. */
  url: string;
  /** Connections per process at most. */
  poolSize: number;
  /** Schema holding the tables (created if missing); the connection's default when absent. */
  schema?: string | undefined;
  /** Giving up on opening a connection, or on waiting for a free one, after this long. */
  connectTimeoutMs: number;
  /**
   * The server cancels a statement that runs longer (`statement_timeout`); a server that does not
   * answer at all is given up on ANSWER_MARGIN_MS later.
   */
  statementTimeoutMs: number;
}

/**
 * How much longer than `statement_timeout` the driver waits for an answer before it gives up on
 * the connection (`query_timeout`): only a server that does not answer at all (frozen, or cut off
 * by a network partition) gets there, since a running one cancels the statement itself first.
 */
const ANSWER_MARGIN_MS = 1_000;
/** How long closing waits for PostgreSQL to close its side of each connection before cutting it. */
const CLOSE_GRACE_MS = 1_000;
/** TCP keep-alive probes on a connection start after it has been quiet this long. */
const KEEP_ALIVE_DELAY_MS = 10_000;

/** A connection or a pooled client: what repositories run their statements on. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

const INT8_OID = 20;
/** read_only_sql_transaction: a write sent to a database that accepts none. */
const READ_ONLY = '25006';
const READ_ONLY_DETAIL = 'it accepts no writes (read-only: a standby, or default_transaction_read_only)';

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

/**
 * serialization_failure (40001: a single statement under `default_transaction_isolation`
 * serializable or repeatable read; the transactions run at read committed, see `transaction`) and
 * deadlock_detected (40P01): another session changed the same rows at the same moment, and the
 * server rolled this statement or transaction back. Run again (SERIALIZATION_ATTEMPTS in all), as
 * the server asks; still failing, the store is busy for now (503), not broken (500).
 */
const SERIALIZATION_SQLSTATES = new Set(['40001', '40P01']);
const SERIALIZATION_ATTEMPTS = 4;
/** lock_not_available (55P03): a lock not granted within the server's `lock_timeout`. */
const LOCK_TIMEOUT = '55P03';

/** SQLSTATE classes and codes that mean "the database is not there right now". */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57P05', '53300', '57014', '25P03']);
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
// What node-postgres says when `query_timeout` ran out; the connection is destroyed then.
const NO_ANSWER = 'Query read timeout';
// node-postgres reports a lost or timed-out connection with these messages and no code.
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'connection timeout',
  'is not queryable',
  'Cannot use a pool after calling end',
  NO_ANSWER,
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

/**
 * Whether the database refused a statement for its own state, not for the statement, on a
 * connection that stays usable: it accepts no writes (25006: a standby after a failover,
 * `default_transaction_read_only`), it is out of resources (class 53: disk full, out of memory),
 * other sessions held the rows past `lock_timeout` (55P03), or kept changing them through every
 * attempt (SERIALIZATION_SQLSTATES). The same statement may pass later, as after a connection
 * failure.
 */
function isRefusedForNow(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return (
    typeof code === 'string' &&
    (code === READ_ONLY ||
      code.startsWith('53') ||
      code === LOCK_TIMEOUT ||
      SERIALIZATION_SQLSTATES.has(code))
  );
}

/** Whether the server rolled a transaction back for a concurrent one (SERIALIZATION_SQLSTATES). */
function isSerializationFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && SERIALIZATION_SQLSTATES.has(code);
}

/**
 * Runs `attempt` again while the server rolls it back for a concurrent transaction (see
 * SERIALIZATION_SQLSTATES), after a short random pause, so that the sessions that met do not meet
 * again; the last failure is thrown as it came.
 */
async function againWhileSerializing<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isSerializationFailure(error) || tries >= SERIALIZATION_ATTEMPTS) throw error;
      await sleep(Math.random() * 10 * tries);
    }
  }
}

/**
 * The server refused the proxy's login, or has no such database: a password rotated (or a role
 * dropped) while the replicas run, the database renamed or dropped (invalid_authorization_
 * specification 28000, invalid_password 28P01, invalid_catalog_name 3D000); or store.url has no
 * password and the server asks for one (node-postgres says so without a code); or it refused the
 * user's access to the database or a table (insufficient_privilege 42501: CONNECT or a grant
 * revoked). Every request
 * that needs the store fails so until an operator mends it, as when the server is down: 503,
 * not 500, and a cached credential goes on working.
 */
const LOGIN_REFUSED_SQLSTATES = new Set(['28000', '28P01', '3D000', '42501']);
const NO_PASSWORD_MESSAGES = ['client password must be a', 'empty password returned by client'];

function isLoginRefused(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return LOGIN_REFUSED_SQLSTATES.has(code);
  return NO_PASSWORD_MESSAGES.some((text) => error.message.includes(text));
}

/**
 * Why the login was refused, by its SQLSTATE only: the message reaches callers in their 503, and
 * the server's own words name the user, the database or the replica's address (they are in the
 * log line, as the error's cause).
 */
function loginRefusedDetail(code: unknown): string {
  if (code === '3D000') return 'the database does not exist (3D000): check store.url';
  if (code === '42501')
    return "it refused the proxy's access (42501): check the rights of store.url's user on the database";
  if (typeof code === 'string')
    return `it refused the login (${code}): check the user and password in store.url`;
  return 'it asks for a password, and store.url has none';
}

/**
 * The connection's TLS failed: `sslmode` (or `ssl`) in store.url asks for TLS and the server
 * offers none (node-postgres says so without a code), or the server's certificate is not trusted
 * (Node's certificate error codes). Not mended by waiting, but a store that cannot be reached all
 * the same: retried at start-up, a 503 later, with store.url named.
 */
const TLS_ERROR_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function tlsFailure(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (TLS_ERROR_CODES.has(code) || code.startsWith('ERR_SSL_'))) return code;
  return error.message.includes('does not support SSL') ? 'the server offers no TLS' : undefined;
}

/**
 * The server ended the session at its start for what the connection asked (severity FATAL, not a
 * refused login, not the server going away or full): store.url's `options` (`-c
 * statement_timeout=abc`: invalid_parameter_value 22023; an unknown parameter: undefined_object
 * 42704; one that needs a restart: 55P02; `--nosuch`: a syntax error 42601). A statement's error
 * of the same codes is an ERROR, and stays the statement's.
 */
function isSettingRefused(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  // Class 57 (operator intervention: shut down, terminated, an idle session timed out) is the
  // session ending, whenever it comes.
  return (
    typeof code === 'string' &&
    severity === 'FATAL' &&
    !code.startsWith('57') &&
    !isConnectionFailure(error) &&
    !isRefusedForNow(error)
  );
}

/**
 * SQLSTATEs of a statement naming a table or schema the database lacks (undefined_table,
 * invalid_schema_name): its schema was dropped, or restored only in part, while the proxy ran.
 * Every request that needs the store fails so until an operator restores it. Not undefined_column
 * (42703), which is rather a bug or a database of another version; and not while the migrations
 * run (see `migrate`), where a missing table is theirs to create.
 */
const SCHEMA_MISSING_SQLSTATES = new Set(['42P01', '3F000']);

function isSchemaMissing(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && SCHEMA_MISSING_SQLSTATES.has(code);
}

/** The detail of a store whose tables are missing (see `isSchemaMissing`, `PostgresStore.ping`). */
export function schemaMissingDetail(what: string): string {
  return `its tables are missing (${what}): restore the schema from a backup`;
}

/** The error of a store that accepts no writes (see `PostgresStore.ping`). */
export function readOnlyError(): StoreUnavailableError {
  return new StoreUnavailableError(`the store (PostgreSQL) is unavailable: ${READ_ONLY_DETAIL}`, {
    refusesWrites: true,
  });
}

/**
 * Turns a connection failure, a refusal for the database's own state (`isRefusedForNow`), a
 * refused login (`isLoginRefused`), or a statement on tables the database lacks
 * (`isSchemaMissing`) into a StoreUnavailableError (message without URL or password).
 */
export function translateError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  const code = (error as { code?: unknown }).code;
  if (isLoginRefused(error))
    return new StoreUnavailableError(`the store (PostgreSQL) is unavailable: ${loginRefusedDetail(code)}`, {
      cause: error,
    });
  const tls = tlsFailure(error);
  if (tls !== undefined)
    return new StoreUnavailableError(
      `the store (PostgreSQL) is unavailable: the TLS connection failed (${tls}): check sslmode in store.url and the server's certificate`,
      { cause: error },
    );
  if (isSettingRefused(error))
    return new StoreUnavailableError(
      `the store (PostgreSQL) is unavailable: it refused a setting of the connection (${code}): check the options parameter of store.url`,
      { cause: error },
    );
  if (!(isConnectionFailure(error) || isRefusedForNow(error) || isSchemaMissing(error))) return error;
  const detail = unavailableDetail(code, error);
  return new StoreUnavailableError(`the store (PostgreSQL) is unavailable: ${detail}`, {
    cause: error,
    refusesWrites:
      code === READ_ONLY || (typeof code === 'string' && code.startsWith('53') && code !== '53300'),
  });
}

/** What a StoreUnavailableError of `translateError` says went wrong, by the error's code. */
function unavailableDetail(code: unknown, error: unknown): string {
  if (typeof code === 'string') {
    if (SCHEMA_MISSING_SQLSTATES.has(code)) return schemaMissingDetail(code);
    if (code === '57014') return 'a statement timed out';
    if (code === '53300')
      return "it refused another connection (53300: too many connections): its max_connections, or the connection limit of store.url's user or database, must allow store.poolSize for each replica";
    if (code === LOCK_TIMEOUT)
      return 'a lock was not granted within its lock_timeout (55P03): other sessions hold the rows';
    if (SERIALIZATION_SQLSTATES.has(code)) return `other sessions kept changing the same rows (${code})`;
    if (code === READ_ONLY) return READ_ONLY_DETAIL;
    if (code.startsWith('53') && code !== '53300') return `it is out of resources (${code}: disk or memory)`;
    return `connection failed (${code})`;
  }
  return error instanceof Error && error.message.includes(NO_ANSWER)
    ? 'no answer in time'
    : 'connection failed or lost';
}

/**
 * The sockets of a pool's connections. Closing a connection asks the server to end it and waits
 * for the server to close its side; a server that does not answer never does, and the open socket
 * would keep the process alive after shutdown. So closing cuts what is left after a grace period.
 */
class OpenSockets {
  readonly #open = new Set<Socket>();
  #emptied: (() => void) | undefined;

  /** A new socket for a connection (node-postgres's `stream` option), tracked until it closes. */
  readonly create = (): Socket => {
    const socket = new Socket();
    this.#open.add(socket);
    socket.once('close', () => {
      this.#open.delete(socket);
      if (this.#open.size === 0) this.#emptied?.();
    });
    return socket;
  };

  /** Waits until every socket has closed, at most `graceMs`, then destroys those still open. */
  async closeAll(graceMs: number): Promise<void> {
    if (this.#open.size > 0) {
      const grace = new AbortController();
      const emptied = new Promise<void>((resolve) => {
        this.#emptied = resolve;
      });
      await Promise.race([emptied, sleep(graceMs, undefined, { signal: grace.signal }).catch(() => {})]);
      grace.abort();
    }
    for (const socket of this.#open) socket.destroy();
  }
}

/**
 * A pool of connections to one PostgreSQL database, with connection failures made recognisable.
 * Every operation ends within a bound, also when the server does not answer at all (frozen, or
 * cut off by a network partition), where its own `statement_timeout` cannot fire: waiting for a
 * connection or opening one gives up after connectTimeoutMs (`connectionTimeoutMillis`), and a
 * statement after statementTimeoutMs + ANSWER_MARGIN_MS (`query_timeout`); its connection is then
 * destroyed, not reused.
 */
export class PostgresDatabase {
  readonly pool: pg.Pool;
  readonly schema: string | undefined;
  readonly #sockets = new OpenSockets();

  constructor(options: PostgresConnectionOptions) {
    if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
      throw new Error(`store schema must be ${SCHEMA_NAME_RULE}, got ${JSON.stringify(options.schema)}`);
    }
    this.schema = options.schema;
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      query_timeout: options.statementTimeoutMs + ANSWER_MARGIN_MS,
      // A quiet connection whose server went away is noticed (a partition, a machine gone) and
      // dropped by the pool.
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
      stream: this.#sockets.create,
      // A lock wait counts as part of the statement; idle transactions are never left open.
      idle_in_transaction_session_timeout: Math.max(options.statementTimeoutMs * 2, 10_000),
      application_name: 'idm-compat',
      types,
      // Quoted: a reserved word (`user`) is a valid schema name too.
      ...(options.schema === undefined
        ? {}
        : { options: `-c search_path=${pg.escapeIdentifier(options.schema)}` }),
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
      return await againWhileSerializing(() => this.pool.query<Row>(text, values as unknown[] | undefined));
    } catch (error) {
      throw translateError(error);
    }
  }

  /**
   * Runs `work` in one transaction on one connection; rolls back when it throws. A transaction the
   * server rolled back for a concurrent one runs again (`againWhileSerializing`): `work` does
   * nothing outside the database that a second run would repeat. It runs at read committed, whatever
   * the database's `default_transaction_isolation`: the store's transactions take their own locks
   * (an advisory lock, row locks, `ON CONFLICT`) and rely on each statement seeing what committed
   * before it. Under repeatable read or serializable, a sequence assignment that waited for another
   * replica's lock kept the snapshot taken before the wait, never saw the number it had just been
   * given, and failed as a serialization failure on every run.
   */
  async transaction<T>(work: (client: Queryable) => Promise<T>): Promise<T> {
    try {
      return await againWhileSerializing(() => this.#transactionOnce(work));
    } catch (error) {
      throw translateError(error);
    }
  }

  async #transactionOnce<T>(work: (client: Queryable) => Promise<T>): Promise<T> {
    const { client, release } = await checkOut(this.pool);
    let broken: unknown;
    try {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (isConnectionFailure(error)) broken = error;
      else await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
      throw error;
    } finally {
      release(broken);
    }
  }

  /**
   * Closes every connection: waits for those in use (each within its bound), asks the server to
   * end each one, and cuts those it has not closed within CLOSE_GRACE_MS.
   */
  async close(): Promise<void> {
    await this.pool.end();
    await this.#sockets.closeAll(CLOSE_GRACE_MS);
  }
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, each in its own transaction,
 * under a session advisory lock: replicas starting at the same moment apply each step once. After
 * a connection failure (lost, or no answer within `query_timeout`) nothing more is sent on the
 * connection: each ROLLBACK or unlock would wait its own `query_timeout` on a server that does not
 * answer. The connection is destroyed instead, and the server, when it notices, ends the session,
 * which rolls the open transaction back and frees the advisory lock.
 */
export async function migrate(db: PostgresDatabase, migrations: readonly Migration[]): Promise<number> {
  const { client, release } = await checkOut(db.pool);
  let broken: Error | undefined;
  const lost = (error: unknown) => {
    if (isConnectionFailure(error)) broken ??= error as Error;
    return broken !== undefined;
  };
  try {
    const lockKey = `idm-compat schema migrations ${db.schema ?? ''}`;
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
    try {
      if (db.schema !== undefined)
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${pg.escapeIdentifier(db.schema)}`);
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
          if (!lost(error)) await client.query('ROLLBACK').catch(lost);
          throw error;
        }
        count++;
      }
      return count;
    } catch (error) {
      lost(error);
      throw error;
    } finally {
      if (!broken)
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch((error: Error) => {
          broken = error;
        });
    }
  } catch (error) {
    lost(error);
    // A missing table here is a migration's own failure (or a bug), not an outage to wait out.
    throw isSchemaMissing(error) ? error : translateError(error);
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
