/**
 * A statement's parameters: positional values, or one object of named values (`@name` in the
 * SQL, `name` as the key). A value is a string, number, bigint, byte array or null. Name exactly
 * the SQL's parameters: a missing one is NULL on node:sqlite and an error on better-sqlite3, an
 * extra one the other way round. Integers beyond 2^53 are an error on node:sqlite when read:
 * select them as text.
 */
export type SqliteParams = unknown[];

/**
 * A prepared statement. `R` is what `get` and `all` give back: a row object, or with `pluck()`
 * the first column's value.
 */
export interface SqliteStatement<P extends SqliteParams = SqliteParams, R = unknown> {
  run(...params: P): { changes: number };
  get(...params: P): R | undefined;
  all(...params: P): R[];
  /** The same statement, answering the first column's value instead of the row. */
  pluck(): SqliteStatement<P, R>;
}

/** `transaction(fn)`: `fn` in a transaction (a savepoint inside another); `.immediate` takes the write lock at once. */
export type SqliteTransaction<A extends unknown[], T> = ((...args: A) => T) & {
  immediate(...args: A): T;
};

/** The part of a SQLite connection the store uses: the same on every driver. */
export interface SqliteDatabase {
  /** Which driver runs it (see sqliteDriverFor). */
  readonly driver: SqliteDriver;
  prepare<P extends SqliteParams = SqliteParams, R = unknown>(sql: string): SqliteStatement<P, R>;
  exec(sql: string): void;
  transaction<A extends unknown[], T>(fn: (...args: A) => T): SqliteTransaction<A, T>;
  close(): void;
  /**
   * The last write that failed for the file or the disk (read-only, full, failing, gone: its
   * SQLite code) and when (ms since the epoch), unless a write changed a row and was committed
   * since; a store's connection keeps it (`unavailableAsStoreError`), a bare one has none.
   */
  writeFailure?(): { code: string; at: number } | undefined;
}

/**
 * How long a store operation waits for another connection's lock: SQLite's own busy timeout while a
 * store opens and migrates (and on every bare connection), then `untilUnlocked`'s, in all.
 */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * `node:sqlite`, the SQLite built into Node.js, or the `better-sqlite3` addon. Node 24 and later
 * use their built-in one: better-sqlite3 12 (the last version that runs on Node 20) aborts the
 * process on Node 24.19 and later when built against their headers (as it is wherever its
 * prebuilt binary cannot be downloaded): the garbage collector's finalizer of a statement trips
 * an assertion of Node's (`RemoveEnvironmentCleanupHook … (env) != nullptr`), seconds after
 * `idm-compat serve` starts. Node 20 has no `node:sqlite`, and Node 22's prints an experimental
 * warning, so those keep better-sqlite3.
 */
export type SqliteDriver = 'node:sqlite' | 'better-sqlite3';

/** The driver for a Node.js version (`process.versions.node`). */
export function sqliteDriverFor(nodeVersion: string): SqliteDriver {
  return Number(nodeVersion.split('.')[0]) >= 24 ? 'node:sqlite' : 'better-sqlite3';
}
