import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { StoreUnavailableError } from '../errors.js';
import type { Migration } from '../types.js';
import { BUSY_TIMEOUT_MS, type SqliteDatabase, sqliteDriverFor } from './connection.js';
import { openBetterSqlite } from './driver-better-sqlite3.js';
import { openNodeSqlite } from './driver-node-sqlite.js';

/**
 * Opens (creating if needed) a SQLite file in WAL mode with a busy timeout, so the server and
 * CLI commands can use the same file at once, and applies the pending migrations.
 */
export function openSqliteDatabase(file: string, migrations: readonly Migration[]): SqliteDatabase {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
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
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
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

/**
 * SQLite's primary result codes that mean "not now" rather than "not this": busy or locked beyond
 * the busy timeout, a read-only file, a failing disk, a full one, a file it cannot open.
 */
const UNAVAILABLE_CODES = new Map<number, string>([
  [5, 'SQLITE_BUSY'],
  [6, 'SQLITE_LOCKED'],
  [8, 'SQLITE_READONLY'],
  [10, 'SQLITE_IOERR'],
  [13, 'SQLITE_FULL'],
  [14, 'SQLITE_CANTOPEN'],
]);
const UNAVAILABLE_NAMES = new Set(UNAVAILABLE_CODES.values());

/** The name of the primary result code of a driver's error (`SQLITE_BUSY`), or undefined for another error. */
function primaryCode(error: unknown): string | undefined {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  // better-sqlite3: its code, extended codes named after their primary one (SQLITE_IOERR_WRITE);
  // node:sqlite: its errcode, whose low byte is the primary code.
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return code.split('_', 2).join('_');
  if (typeof errcode === 'number')
    return UNAVAILABLE_CODES.get(errcode & 0xff) ?? `SQLITE code ${errcode & 0xff}`;
  return undefined;
}

/** Whether a driver's error is SQLite's SQLITE_BUSY. */
function isBusyError(error: unknown): boolean {
  return primaryCode(error) === 'SQLITE_BUSY';
}

/**
 * Runs a write whose caller keeps what it could not write for later (a write-behind): an answer of
 * SQLite's that the same write may pass later (UNAVAILABLE_CODES) is thrown as a
 * StoreUnavailableError, like PostgreSQL's connection failures; any other error as it is.
 */
export function whenAvailable<T>(write: () => T): T {
  try {
    return write();
  } catch (error) {
    const code = primaryCode(error);
    if (code === undefined || !UNAVAILABLE_NAMES.has(code)) throw error;
    throw new StoreUnavailableError(`the store (SQLite) is unavailable: ${code}`, { cause: error });
  }
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
