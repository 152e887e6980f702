import { mkdirSync } from 'node:fs';
import path from 'node:path';
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

/** Whether a driver's error is SQLite's SQLITE_BUSY (better-sqlite3: its code; node:sqlite: its errcode). */
function isBusyError(error: unknown): boolean {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  return (
    (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) ||
    (typeof errcode === 'number' && (errcode & 0xff) === 5)
  );
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
