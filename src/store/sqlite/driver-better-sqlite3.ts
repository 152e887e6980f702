import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteParams, SqliteStatement, SqliteTransaction } from './connection.js';

const require = createRequire(import.meta.url);

/**
 * A SQLite file through the better-sqlite3 addon (Node 20 and 22: see SqliteDriver). The addon is
 * loaded here, on first use, never on a Node that uses its own SQLite. It is an optional
 * dependency, so that an install on Node 24, which never loads it, does not fail where it cannot
 * be built; where it is needed and missing, this says so.
 */
export function openBetterSqlite(file: string): SqliteDatabase {
  let Database: typeof BetterSqlite3;
  try {
    Database = require('better-sqlite3') as typeof BetterSqlite3;
  } catch (error) {
    throw new Error(
      `the SQLite store needs the better-sqlite3 addon on Node ${process.versions.node} (Node 24 and later have SQLite built in), and it did not load: ${error instanceof Error ? error.message : String(error)}. Install it with build tools at hand (python3, make, g++): npm install better-sqlite3; or run on Node 24, or use store.type "postgres"`,
      { cause: error },
    );
  }
  const db = new Database(file);
  return {
    driver: 'better-sqlite3',
    prepare: <P extends SqliteParams, R>(sql: string) => statement<P, R>(db.prepare<unknown[], R>(sql)),
    exec: (sql) => {
      db.exec(sql);
    },
    transaction: <A extends unknown[], T>(fn: (...args: A) => T): SqliteTransaction<A, T> =>
      db.transaction(fn),
    close: () => {
      db.close();
    },
  };
}

function statement<P extends SqliteParams, R>(
  prepared: BetterSqlite3.Statement<unknown[], R>,
): SqliteStatement<P, R> {
  return {
    run: (...params) => prepared.run(...params),
    get: (...params) => prepared.get(...params),
    all: (...params) => prepared.all(...params),
    pluck: () => statement<P, R>(prepared.pluck()),
  };
}
