import {
  BUSY_TIMEOUT_MS,
  type SqliteDatabase,
  type SqliteParams,
  type SqliteStatement,
  type SqliteTransaction,
} from './connection.js';

/** What the store uses of `node:sqlite` (Node's own types of it start with @types/node 22). */
interface NodeSqliteModule {
  DatabaseSync: new (file: string, options: { timeout: number }) => DatabaseSync;
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
  // The busy timeout from the start, as better-sqlite3 has it (5 s): a connection that opens the
  // file while another switches it to WAL or recovers it waits instead of failing.
  const db = new sqlite.DatabaseSync(file, { timeout: BUSY_TIMEOUT_MS });
  let savepoints = 0;
  /**
   * `fn` between BEGIN and COMMIT (ROLLBACK when it throws); inside another transaction, a
   * savepoint. As in better-sqlite3: `fn` must not return a promise (the COMMIT would come before
   * what it awaits), and after SQLite has rolled the whole transaction back by itself (a full
   * disk, an I/O error) the error thrown is the one that caused it.
   */
  const transactional =
    <A extends unknown[], T>(fn: (...args: A) => T, begin: string) =>
    (...args: A): T => {
      const outermost = !db.isTransaction;
      const savepoint = outermost ? '' : `nested_${++savepoints}`;
      db.exec(outermost ? begin : `SAVEPOINT ${savepoint}`);
      try {
        const result = fn(...args);
        if (typeof (result as { then?: unknown } | undefined)?.then === 'function')
          throw new TypeError('Transaction function cannot return a promise');
        db.exec(outermost ? 'COMMIT' : `RELEASE ${savepoint}`);
        return result;
      } catch (error) {
        if (db.isTransaction) {
          if (outermost) db.exec('ROLLBACK');
          else {
            db.exec(`ROLLBACK TO ${savepoint}`);
            db.exec(`RELEASE ${savepoint}`);
          }
        }
        throw error;
      } finally {
        if (!outermost) savepoints--;
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
