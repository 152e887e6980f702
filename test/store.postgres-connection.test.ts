// A PostgreSQL connection that is cut while a transaction holds it, between two of its statements
// (the server restarted, an operator terminated the session): the transaction fails as the store
// being unavailable (503 for the caller), the process lives on, and the pool opens a new
// connection for what comes next. A real server, its session ended with pg_terminate_backend.
// And a server that refuses the login, the database or the user's access: unavailable too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { StoreUnavailableError } from '../src/store/errors.js';
import { PostgresDatabase } from '../src/store/postgres/database.js';
import { openPostgresStore } from '../src/store/postgres/index.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';

// One server for the file; each suite on a database of its own.
let server: TestPostgres;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.destroy();
});

/** A pool of one connection to `url`, with the timeouts of a replica's defaults. */
const oneConnection = (url: string) =>
  new PostgresDatabase({ url, poolSize: 1, connectTimeoutMs: 5_000, statementTimeoutMs: 5_000 });

describe('a PostgreSQL connection cut while a transaction holds it', () => {
  let url: string;
  before(async () => {
    url = await server.createDatabase();
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

describe('a PostgreSQL that refuses the login, or has no such database', () => {
  let url: string;
  before(async () => {
    url = await server.createDatabase();
  });

  // A password rotated or a database renamed while the replicas run: every request that needs the
  // store failed with a 500 (the driver's error passed through), and a cached credential with it.
  for (const [what, change, why] of [
    [
      'a wrong password',
      (target: URL) => {
        target.password = 'Not-The-Password-42';
      },
      /^the store \(PostgreSQL\) is unavailable: it refused the login \(28P01\): check the user and password in store\.url$/,
    ],
    [
      'a database that does not exist',
      (target: URL) => {
        target.pathname = '/no_such_database';
      },
      /^the store \(PostgreSQL\) is unavailable: the database does not exist \(3D000\): check store\.url$/,
    ],
    [
      // "permission denied for database" fell through as a statement's failure too.
      "the user's access refused (CONNECT revoked: 42501)",
      async (target: URL) => {
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        try {
          await admin.query("CREATE ROLE locked_out LOGIN PASSWORD 'Locked-Out-1'");
          await admin.query(`REVOKE CONNECT ON DATABASE ${target.pathname.slice(1)} FROM PUBLIC`);
        } finally {
          await admin.end();
        }
        target.username = 'locked_out';
        target.password = 'Locked-Out-1';
      },
      /^the store \(PostgreSQL\) is unavailable: it refused the proxy's access \(42501\): check the rights of store\.url's user on the database$/,
    ],
    [
      // "connection failed (53300)" pointed nowhere.
      "the role's connection limit taken (53300)",
      async (target: URL) => {
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        try {
          await admin.query("CREATE ROLE limited LOGIN PASSWORD 'Limited-1' CONNECTION LIMIT 0");
        } finally {
          await admin.end();
        }
        target.username = 'limited';
        target.password = 'Limited-1';
      },
      /^the store \(PostgreSQL\) is unavailable: it refused another connection \(53300: too many connections\): its max_connections, or the connection limit of store\.url's user or database, must allow store\.poolSize for each replica$/,
    ],
  ] as const) {
    it(`is unavailable (a 503), not a failure of the statement: ${what}`, async () => {
      const target = new URL(url);
      await change(target);
      const db = oneConnection(target.href);
      try {
        await assert.rejects(db.query('SELECT 1'), (error: unknown) => {
          assert.ok(error instanceof StoreUnavailableError, String(error));
          assert.match(error.message, why);
          assert.doesNotMatch(error.message, /Not-The-Password-42/);
          // The server's own words (user, database) are the cause's, for the log line only: the
          // message is what callers get in their 503.
          assert.doesNotMatch(error.message, /"postgres"|no_such_database/);
          assert.match(
            String((error.cause as Error).message),
            /postgres|no_such_database|permission denied|too many connections/,
          );
          return true;
        });
      } finally {
        await db.close();
      }
    });
  }

  // They ended `serve` at once with the driver's bare words ("The server does not support SSL
  // connections"), neither retried nor naming the store.
  for (const [what, query, why] of [
    [
      'sslmode asking for TLS the server does not offer',
      '?sslmode=verify-full',
      /^the store \(PostgreSQL\) is unavailable: the TLS connection failed \(the server offers no TLS\): check sslmode in store\.url and the server's certificate$/,
    ],
    [
      'a value the server refuses in the options parameter',
      `?options=${encodeURIComponent('-c statement_timeout=abc')}`,
      /^the store \(PostgreSQL\) is unavailable: it refused a setting of the connection \(22023\): check the options parameter of store\.url$/,
    ],
    [
      'a parameter the server takes only at its own start',
      `?options=${encodeURIComponent('-c max_connections=5')}`,
      /^the store \(PostgreSQL\) is unavailable: it refused a setting of the connection \(55P02\): check the options parameter of store\.url$/,
    ],
    [
      'options that are no setting at all',
      `?options=${encodeURIComponent('--nosuch')}`,
      /^the store \(PostgreSQL\) is unavailable: it refused a setting of the connection \(42601\): check the options parameter of store\.url$/,
    ],
    [
      'an unknown parameter in the options parameter',
      `?options=${encodeURIComponent('-c no_such_setting=1')}`,
      /^the store \(PostgreSQL\) is unavailable: it refused a setting of the connection \(42704\): check the options parameter of store\.url$/,
    ],
  ] as const) {
    it(`is unavailable, naming store.url: ${what}`, async () => {
      const db = oneConnection(`${url}${query}`);
      try {
        await assert.rejects(db.query('SELECT 1'), (error: unknown) => {
          assert.ok(error instanceof StoreUnavailableError, String(error));
          assert.match(error.message, why);
          return true;
        });
      } finally {
        await db.close();
      }
    });
  }

  it("leaves a statement's own error of those codes the statement's, not the store unavailable", async () => {
    const db = oneConnection(url);
    try {
      for (const statement of [
        "SET statement_timeout = 'abc'",
        "SELECT current_setting('no_such_setting')",
      ]) {
        await assert.rejects(db.query(statement), (error: unknown) => {
          assert.ok(!(error instanceof StoreUnavailableError), `${statement}: ${String(error)}`);
          assert.match(String((error as { code?: string }).code), /^(22023|42704)$/);
          return true;
        });
      }
      assert.equal((await db.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one, 1);
    } finally {
      await db.close();
    }
  });
});

describe('a PostgreSQL whose sessions meet on the same rows', () => {
  let url: string;
  before(async () => {
    url = await server.createDatabase();
    const setup = new pg.Client({ connectionString: url });
    await setup.connect();
    await setup.query('CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)');
    await setup.query('INSERT INTO counter VALUES (1, 0)');
    await setup.end();
  });

  /** The pool with the server settings a DBA may choose, in store.url's options. */
  const withSettings = (settings: string) => oneConnection(`${url}?options=${encodeURIComponent(settings)}`);

  /** Holds the counter's row in another session's open transaction, which has changed it. */
  async function holding(): Promise<{ commit(): Promise<void>; end(): Promise<void> }> {
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query('BEGIN');
    await other.query('UPDATE counter SET n = n + 1 WHERE id = 1');
    return {
      commit: async () => {
        await other.query('COMMIT');
      },
      end: () => other.end(),
    };
  }

  it('runs a statement again that the server rolled back under serializable isolation (40001); a transaction runs at read committed', async () => {
    // Each waits for the other session's row lock; its commit made them serialization failures.
    const db = withSettings('-c default_transaction_isolation=serializable');
    try {
      const start = (await db.query<{ n: number }>('SELECT n FROM counter')).rows[0]?.n ?? 0;
      for (const run of [
        () => db.query<{ n: number }>('UPDATE counter SET n = n + 1 WHERE id = 1 RETURNING n'),
        () =>
          db.transaction(async (client) => {
            const { rows } = await client.query<{ transaction_isolation: string }>(
              'SHOW transaction_isolation',
            );
            assert.equal(rows[0]?.transaction_isolation, 'read committed');
            return client.query<{ n: number }>('UPDATE counter SET n = n + 1 WHERE id = 1 RETURNING n');
          }),
      ]) {
        const other = await holding();
        try {
          const outcome = run();
          await sleep(200);
          await other.commit();
          await outcome;
        } finally {
          await other.end();
        }
      }
      const end = (await db.query<{ n: number }>('SELECT n FROM counter')).rows[0]?.n;
      assert.equal(end, start + 4, 'both ran once more after the other session committed');
    } finally {
      await db.close();
    }
  });

  it('assigns distinct sequence IDs to many at once under serializable isolation, none refused', async () => {
    // The transaction that waited for the sequence lock kept the snapshot from before its wait: it
    // never saw the number the one before it committed, and failed on every run (503s, after the
    // successor had created the group).
    const store = await openPostgresStore({
      url: `${url}?options=${encodeURIComponent('-c default_transaction_isolation=serializable')}`,
      poolSize: 8,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 5_000,
    });
    try {
      const assigned = await Promise.all(
        Array.from({ length: 24 }, () =>
          store.idMap.assignSequence('group', 'G', 1, randomUUID(), Date.now()),
        ),
      );
      assert.deepEqual(
        assigned.map((row) => row.legacyId).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))),
        Array.from({ length: 24 }, (_, index) => `G${index + 1}`),
      );
    } finally {
      await store.close();
    }
  });

  it('is unavailable (a 503), not a failure of the statement, when a lock is not granted within lock_timeout (55P03)', async () => {
    const db = withSettings('-c lock_timeout=100');
    const other = await holding();
    try {
      await assert.rejects(db.query('UPDATE counter SET n = n + 1 WHERE id = 1'), (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError, String(error));
        assert.match(error.message, /a lock was not granted within its lock_timeout \(55P03\)/);
        return true;
      });
    } finally {
      await other.end();
      await db.close();
    }
  });
});
