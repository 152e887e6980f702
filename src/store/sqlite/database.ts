import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError } from '../errors.js';
import type { Migration } from '../types.js';
import {
  BUSY_TIMEOUT_MS,
  type SqliteDatabase,
  type SqliteParams,
  type SqliteStatement,
  type SqliteTransaction,
  sqliteDriverFor,
} from './connection.js';
import { openBetterSqlite } from './driver-better-sqlite3.js';
import { openNodeSqlite } from './driver-node-sqlite.js';

/**
 * Opens (creating if needed) a SQLite file in WAL mode, so the server and CLI commands can use the
 * same file at once, and applies the pending migrations (waiting up to the busy timeout for
 * another process's lock, as start-up work may). Once open, SQLite itself never waits for a lock:
 * a statement that meets one fails at once, and the repositories wait for it without blocking the
 * event loop (`waitingOutLocks`); every "not now" answer of SQLite's is a StoreUnavailableError
 * (`unavailableAsStoreError`). Opening itself fails with SQLite's own error, as a start-up should.
 */
export function openSqliteDatabase(
  file: string,
  migrations: readonly Migration[],
  now: () => number = Date.now,
): SqliteDatabase {
  if (file !== ':memory:') {
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    // A new file readable by its owner only: it holds the API users' password hashes, SSO and
    // OIDC login state and shadow samples. SQLite gives its -wal and -shm files the same mode.
    // A file that exists is not touched: it keeps the mode its operator gave it, and a user who
    // may only read it (a group's 0640) still opens it for the commands that only read.
    try {
      closeSync(openSync(file, 'wx', 0o600));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const db = openSqliteConnection(file);
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Switching a new file to WAL takes its exclusive lock, and SQLite answers SQLITE_BUSY at once,
    // without waiting, when another process opening the same new file holds it (seen on Node 24's
    // driver): tried again, as long as the busy timeout, once the other has switched it.
    whileBusy(() => db.exec('PRAGMA journal_mode = WAL'));
    db.exec('PRAGMA foreign_keys = ON');
    db.exec('PRAGMA synchronous = NORMAL');
    migrate(db, migrations);
    // SQLite's busy handler sleeps on the only thread: while another process held the lock for
    // seconds (an operator's open transaction, a VACUUM), every request would stand still, each
    // write-behind's flush blocking the process for the whole busy timeout again.
    db.exec('PRAGMA busy_timeout = 0');
  } catch (error) {
    db.close();
    throw error;
  }
  return unavailableAsStoreError(db, now);
}

/** Runs `statement`, again every 10 ms while SQLite answers SQLITE_BUSY, for up to the busy timeout. */
function whileBusy(statement: () => void): void {
  const until = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      statement();
      return;
    } catch (error) {
      if (!isBusyError(error) || Date.now() >= until) throw error;
      // Opening a store is start-up work: blocking this thread for a moment is what SQLite's own
      // busy handler does too.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/** What the proxy makes of one of SQLite's primary result codes. */
interface PrimaryCode {
  /** Its number, as node:sqlite's `errcode` holds it in its low byte. */
  code: number;
  /**
   * "Not now" rather than "not this": the same statement may pass later (busy or locked beyond the
   * busy timeout, a read-only file, a failing or full disk, a file it cannot open). Thrown as a
   * StoreUnavailableError (`whenAvailable`).
   */
  unavailable: boolean;
  /** A write that failed for the file or the disk, not for another connection's lock (store readiness). */
  writeFailure: boolean;
  /** The store takes no writes now, though it may answer reads (StoreUnavailableError `refusesWrites`). */
  refusesWrites: boolean;
  /** Opening the store failed for its file's place or rights (`isFileAccessError`). */
  fileAccess: boolean;
}

/** The primary result codes the proxy tells apart, by name; any other is an error as it is. */
const PRIMARY_CODES: Readonly<Record<string, PrimaryCode>> = {
  SQLITE_PERM: { code: 3, unavailable: false, writeFailure: false, refusesWrites: false, fileAccess: true },
  SQLITE_BUSY: { code: 5, unavailable: true, writeFailure: false, refusesWrites: false, fileAccess: false },
  SQLITE_LOCKED: { code: 6, unavailable: true, writeFailure: false, refusesWrites: false, fileAccess: false },
  SQLITE_READONLY: { code: 8, unavailable: true, writeFailure: true, refusesWrites: true, fileAccess: true },
  SQLITE_IOERR: { code: 10, unavailable: true, writeFailure: true, refusesWrites: false, fileAccess: false },
  SQLITE_FULL: { code: 13, unavailable: true, writeFailure: true, refusesWrites: true, fileAccess: false },
  SQLITE_CANTOPEN: {
    code: 14,
    unavailable: true,
    writeFailure: true,
    refusesWrites: false,
    fileAccess: true,
  },
};
const NAME_OF_CODE = new Map(Object.entries(PRIMARY_CODES).map(([name, { code }]) => [code, name]));

/** The name of the primary result code of a driver's error (`SQLITE_BUSY`), or undefined for another error. */
function primaryCode(error: unknown): string | undefined {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  // better-sqlite3: its code, extended codes named after their primary one (SQLITE_IOERR_WRITE);
  // node:sqlite: its errcode, whose low byte is the primary code.
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return code.split('_', 2).join('_');
  if (typeof errcode === 'number') return NAME_OF_CODE.get(errcode & 0xff) ?? `SQLITE code ${errcode & 0xff}`;
  return undefined;
}

/** What the proxy makes of a driver's error's primary code; undefined for one it does not tell apart. */
function primaryCodeOf(error: unknown): (PrimaryCode & { name: string }) | undefined {
  const name = primaryCode(error);
  const known = name === undefined ? undefined : PRIMARY_CODES[name];
  return known && name !== undefined ? { ...known, name } : undefined;
}

/** File system errors of a file or folder that cannot be made, reached or written. */
const FILE_ACCESS_CODES = new Set(['ENOENT', 'EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR']);

/**
 * Whether opening a store failed for its file's place or rights (the folder cannot be created or
 * reached, the file cannot be opened or written), as opposed to what the file holds.
 */
export function isFileAccessError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && FILE_ACCESS_CODES.has(code)) return true;
  return primaryCodeOf(error)?.fileAccess === true;
}

/** Whether a driver's error is SQLite's SQLITE_BUSY. */
function isBusyError(error: unknown): boolean {
  return primaryCode(error) === 'SQLITE_BUSY';
}

/**
 * Runs a statement; an answer of SQLite's that the same statement may pass later (`unavailable`
 * in PRIMARY_CODES: another connection holding the lock, a read-only, failing or full disk) is thrown as a
 * StoreUnavailableError, like PostgreSQL's connection failures, so that a request answers 503 with
 * Retry-After and a write-behind keeps its batch; any other error as it is.
 */
function whenAvailable<T>(statement: () => T): T {
  try {
    return statement();
  } catch (error) {
    const code = primaryCodeOf(error);
    if (!code?.unavailable) throw error;
    throw new StoreUnavailableError(`the store (SQLite) is unavailable: ${code.name}`, {
      cause: error,
      refusesWrites: code.refusesWrites,
    });
  }
}

/**
 * The connection with every statement, transaction and `exec` run through `whenAvailable`, so that
 * no repository has to remember it: an API user's, a throttle counter's or an SSO token's write
 * that cannot be made now answers 503 like the ID table's and the write-behinds' do.
 */
function unavailableAsStoreError(db: SqliteDatabase, now: () => number): SqliteDatabase {
  // The last write that failed for the file or the disk, until a write changes a row and is
  // committed (store readiness). A statement that changed nothing proves nothing (an UPDATE of a
  // login time for a user that is gone writes no page), nor does one whose transaction then fails.
  let failure: { code: string; at: number } | undefined;
  let depth = 0;
  let changedInTransaction = false;
  const watching = <T>(work: () => T): T => {
    try {
      return whenAvailable(work);
    } catch (error) {
      const code = error instanceof StoreUnavailableError ? primaryCodeOf(error.cause) : undefined;
      if (code?.writeFailure) failure = { code: code.name, at: now() };
      throw error;
    }
  };
  const run = (write: () => { changes: number }): { changes: number } => {
    const done = watching(write);
    if (done.changes > 0) {
      if (depth === 0) failure = undefined;
      else changedInTransaction = true;
    }
    return done;
  };
  const inTransaction = <T>(work: () => T): T => {
    if (depth === 0) changedInTransaction = false;
    depth += 1;
    try {
      const done = watching(work);
      if (depth === 1 && changedInTransaction) failure = undefined;
      return done;
    } finally {
      depth -= 1;
    }
  };
  const statement = <P extends SqliteParams, R>(prepared: SqliteStatement<P, R>): SqliteStatement<P, R> => ({
    run: (...params) => run(() => prepared.run(...params)),
    get: (...params) => whenAvailable(() => prepared.get(...params)),
    all: (...params) => whenAvailable(() => prepared.all(...params)),
    pluck: () => statement(prepared.pluck()),
  });
  return {
    driver: db.driver,
    prepare: <P extends SqliteParams, R>(sql: string) =>
      statement(whenAvailable(() => db.prepare<P, R>(sql))),
    exec: (sql) => watching(() => db.exec(sql)),
    transaction: <A extends unknown[], T>(fn: (...args: A) => T): SqliteTransaction<A, T> => {
      const transaction = db.transaction(fn);
      return Object.assign((...args: A) => inTransaction(() => transaction(...args)), {
        immediate: (...args: A) => inTransaction(() => transaction.immediate(...args)),
      });
    },
    close: () => db.close(),
    writeFailure: () => failure,
  };
}

/** Whether `error` is a StoreUnavailableError for SQLITE_BUSY: another connection holds the lock. */
function isLockedOut(error: unknown): boolean {
  return error instanceof StoreUnavailableError && isBusyError(error.cause);
}

/**
 * Runs `work` (one transaction or one statement, so that nothing of a try that met a lock was
 * written), again while another connection holds the lock, with a doubling pause (1 ms up to
 * 100 ms) between tries, for up to the busy timeout in all; the event loop serves everything else
 * meanwhile. Still locked out then: the StoreUnavailableError for SQLITE_BUSY (a request answers
 * 503 with Retry-After).
 */
export async function untilUnlocked<T>(work: () => T | Promise<T>): Promise<T> {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, 100)) {
    try {
      return await work();
    } catch (error) {
      if (!isLockedOut(error) || Date.now() + pause > deadline) throw error;
      await sleep(pause);
    }
  }
}

/**
 * The repository with each of its methods run through `untilUnlocked`, but for `notRetried`: a
 * write in several transactions, which waits for each of them itself. Every other method of a
 * SQLite repository is async and makes its writes in one transaction or one statement, and
 * whatever it reads after them it reads in that transaction too, so trying it again repeats
 * nothing that was written. A write-behind's batch waits like any write (without blocking), so
 * its last flush at shutdown does not lose counts to a moment's lock.
 */
export function waitingOutLocks<T extends object>(
  repository: T,
  notRetried: readonly (keyof T & string)[] = [],
): T {
  const once = new Set<PropertyKey>(notRetried);
  return new Proxy(repository, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      // Called on the repository itself, whose private fields a proxy does not have.
      return once.has(property)
        ? (...args: unknown[]) => method.apply(target, args)
        : (...args: unknown[]) => untilUnlocked(() => method.apply(target, args));
    },
  });
}

/**
 * A bare connection to a SQLite file (created when missing), through this Node's driver
 * (sqliteDriverFor): no settings, no migrations.
 */
export function openSqliteConnection(file: string): SqliteDatabase {
  return sqliteDriverFor(process.versions.node) === 'node:sqlite'
    ? openNodeSqlite(file)
    : openBetterSqlite(file);
}

/**
 * Applies every migration not yet recorded, each in its own transaction. Processes that open a new
 * or upgraded store at the same moment (the server and a CLI command) take turns: each migration
 * runs under the write lock (IMMEDIATE) and only when it is still unrecorded once the lock is held.
 */
export function migrate(db: SqliteDatabase, migrations: readonly Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const applied = new Set(db.prepare<[], string>('SELECT id FROM schema_migrations').pluck().all());
  const recorded = db.prepare('SELECT 1 FROM schema_migrations WHERE id = ?');
  const record = db.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  for (const migration of migrations) {
    if (applied.has(migration.id)) continue;
    db.transaction(() => {
      if (recorded.get(migration.id)) return;
      db.exec(migration.sql);
      record.run(migration.id, new Date().toISOString());
    }).immediate();
  }
}
