// A PostgreSQL connection that is cut while a transaction holds it, between two of its statements
// (the server restarted, an operator terminated the session): the transaction fails as the store
// being unavailable (503 for the caller), the process lives on, and the pool opens a new
// connection for what comes next. A real server, its session ended with pg_terminate_backend.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { StoreUnavailableError } from '../src/store/errors.js';
import { PostgresDatabase } from '../src/store/postgres/database.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';

describe('a PostgreSQL connection cut while a transaction holds it', () => {
  let server: TestPostgres;
  let url: string;
  before(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
  });
  after(async () => {
    await server?.destroy();
  });

  it('fails that transaction as the store being unavailable, and the next statement succeeds', async () => {
    const db = new PostgresDatabase({ url, poolSize: 2, connectTimeoutMs: 5_000, statementTimeoutMs: 5_000 });
    const operator = new pg.Client({ connectionString: url });
    await operator.connect();
    try {
      const outcome = db.transaction(async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await operator.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
        // The cut arrives while none of the transaction's statements runs.
        await sleep(300);
        await client.query('SELECT 1');
      });
      await assert.rejects(outcome, (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError, String(error));
        return true;
      });
      const { rows } = await db.query<{ one: number }>('SELECT 1 AS one');
      assert.equal(rows[0]?.one, 1);
    } finally {
      await operator.end();
      await db.close();
    }
  });
});
