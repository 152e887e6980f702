import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Migration } from '../types.js';
import { type SqliteDatabase, sqliteDriverFor } from './connection.js';
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
    db.exec('PRAGMA busy_timeout = 5000');
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA foreign_keys = ON');
    db.exec('PRAGMA synchronous = NORMAL');
    migrate(db, migrations);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
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

/** Applies every migration not yet recorded, each in its own transaction. */
export function migrate(db: SqliteDatabase, migrations: readonly Migration[]): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const applied = new Set(db.prepare<[], string>('SELECT id FROM schema_migrations').pluck().all());
  const record = db.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  for (const migration of migrations) {
    if (applied.has(migration.id)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      record.run(migration.id, new Date().toISOString());
    })();
  }
}
