import type { SqliteDatabase, SqliteParams, SqliteStatement, SqliteTransaction } from './connection.js';

/** What the store uses of `node:sqlite` (Node's own types of it start with @types/node 22). */
interface NodeSqliteModule {
  DatabaseSync: new (file: string) => DatabaseSync;
}

interface DatabaseSync {
  readonly isTransaction: boolean;
  prepare(sql: string): StatementSync;
  exec(sql: string): void;
  close(): void;
}

interface StatementSync {
  run(...params: SqliteParams): { changes: number | bigint };
  get(...params: SqliteParams): unknown;
  all(...params: SqliteParams): unknown[];
  setReturnArrays(enabled: boolean): void;
}

/** A SQLite file through `node:sqlite`, the SQLite built into Node.js (Node 24 and later: see SqliteDriver). */
export function openNodeSqlite(file: string): SqliteDatabase {
  const sqlite = process.getBuiltinModule('node:sqlite') as NodeSqliteModule | undefined;
  if (!sqlite) throw new Error(`this Node.js (${process.version}) has no node:sqlite`);
  const db = new sqlite.DatabaseSync(file);
  let savepoints = 0;
  /** `fn` between BEGIN and COMMIT (ROLLBACK when it throws); inside another transaction, a savepoint. */
  const transactional =
    <A extends unknown[], T>(fn: (...args: A) => T, begin: string) =>
    (...args: A): T => {
      if (db.isTransaction) {
        const name = `nested_${++savepoints}`;
        db.exec(`SAVEPOINT ${name}`);
        try {
          const result = fn(...args);
          db.exec(`RELEASE ${name}`);
          return result;
        } catch (error) {
          db.exec(`ROLLBACK TO ${name}`);
          db.exec(`RELEASE ${name}`);
          throw error;
        } finally {
          savepoints--;
        }
      }
      db.exec(begin);
      try {
        const result = fn(...args);
        db.exec('COMMIT');
        return result;
      } catch (error) {
        // SQLite may already have rolled back (a full disk, an interrupted statement).
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
    };
  return {
    driver: 'node:sqlite',
    prepare: <P extends SqliteParams, R>(sql: string) => statement<P, R>(db.prepare(sql), false),
    exec: (sql) => {
      db.exec(sql);
    },
    transaction: <A extends unknown[], T>(fn: (...args: A) => T): SqliteTransaction<A, T> =>
      Object.assign(transactional(fn, 'BEGIN'), { immediate: transactional(fn, 'BEGIN IMMEDIATE') }),
    close: () => {
      db.close();
    },
  };
}

/**
 * A statement as better-sqlite3 answers: rows as plain objects (node:sqlite's have no prototype,
 * which `assert.deepStrictEqual` and spreading into other objects tell apart), `changes` as a
 * number; plucked, the first column's value (node:sqlite's rows as arrays).
 */
function statement<P extends SqliteParams, R>(
  prepared: StatementSync,
  plucked: boolean,
): SqliteStatement<P, R> {
  const row = plucked
    ? (value: unknown) => (value as unknown[])[0] as R
    : (value: unknown) => ({ ...(value as object) }) as R;
  return {
    run: (...params) => ({ changes: Number(prepared.run(...params).changes) }),
    get: (...params) => {
      const value = prepared.get(...params);
      return value === undefined ? undefined : row(value);
    },
    all: (...params) => prepared.all(...params).map(row),
    pluck: () => {
      prepared.setReturnArrays(true);
      return statement<P, R>(prepared, true);
    },
  };
}
