// A PostgreSQL server that stops answering: every one of its processes stopped with SIGSTOP, so
// its connections stay open and the kernel still accepts new ones, but nothing answers (a frozen
// database machine, a network partition). `statement_timeout` runs on the server and cannot fire
// then. Every store operation must still fail as the store being unavailable within
// connectTimeoutMs + statementTimeoutMs + 1 s, a request answers 503, and SIGTERM ends
// `idm-compat serve` within server.shutdownTimeoutMs and the bounds of its last writes.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { StoreUnavailableError } from '../src/store/errors.js';
import { migrate, PostgresDatabase } from '../src/store/postgres/database.js';
import { openPostgresStore } from '../src/store/postgres/index.js';
import type { Migration } from '../src/store/types.js';
import { type CliProcess, spawnCli } from './cli-helpers.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';
import { sandbox, successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

const CONNECT_TIMEOUT_MS = 500;
const STATEMENT_TIMEOUT_MS = 500;
/** What docs/scaling.md promises for one store operation while PostgreSQL does not answer. */
const OPERATION_BOUND_MS = CONNECT_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 1_000;
/** Time for what the bound does not count: scheduling on a busy test machine. */
const SLACK_MS = 1_500;

let db: TestPostgres;
let url = '';
const running: CliProcess[] = [];
before(async () => {
  db = await startPostgres();
  url = await db.createDatabase();
});
after(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await db?.destroy();
});

/** Settles like `work`, or fails the test when it has not settled within `ms` (a hang). */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no outcome within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, hang]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a PostgreSQL server that stops answering', () => {
  it('fails statements, transactions and new connections as unavailable within the bound, then recovers', async () => {
    const store = await openPostgresStore({
      url,
      poolSize: 2,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    });
    try {
      // Two open connections in the pool, idle when the server freezes.
      await Promise.all([store.db.query('SELECT pg_sleep(0.05)'), store.db.query('SELECT pg_sleep(0.05)')]);
      db.freeze();
      try {
        const started = performance.now();
        const outcomes = await within(
          OPERATION_BOUND_MS + SLACK_MS,
          'store operations on a frozen server',
          Promise.allSettled([
            store.ping(),
            store.idMap.assignSequence('group', 'G', 1, randomUUID(), 1),
            // The pool is full: this one waits for a connection, then opens a new one.
            store.apiUsers.get('nobody'),
          ]),
        );
        const elapsed = performance.now() - started;
        for (const outcome of outcomes) {
          assert.equal(outcome.status, 'rejected');
          const error = outcome.status === 'rejected' ? outcome.reason : undefined;
          assert.ok(error instanceof StoreUnavailableError, String(error));
          assert.doesNotMatch(error.message, /postgres:\/\/|127\.0\.0\.1/);
        }
        assert.ok(elapsed < OPERATION_BOUND_MS + SLACK_MS, `${elapsed} ms`);
      } finally {
        db.thaw();
      }
      await within(10_000, 'the store answering again', store.ping());
    } finally {
      await store.close();
    }
  });

  it('fails a start-up migration as unavailable within one operation bound, and leaves no lock behind', async () => {
    // A longer statement timeout than the others here, so that one more wait for an answer (the
    // ROLLBACK or the advisory unlock sent on the connection that did not answer) exceeds the bound.
    const statementTimeoutMs = 1_500;
    const bound = CONNECT_TIMEOUT_MS + statementTimeoutMs + 1_000;
    const database = new PostgresDatabase({
      url,
      poolSize: 1,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      statementTimeoutMs,
    });
    try {
      await database.query('SELECT 1');
      // The server freezes while the step runs: its lock is held and its transaction open.
      const pending: Migration = {
        id: `frozen-${randomUUID()}`,
        sql: `SELECT pg_sleep(1); CREATE TABLE "frozen_${randomUUID()}" (n INT)`,
      };
      const freezing = setTimeout(() => db.freeze(), 300);
      let outcome: unknown;
      const started = performance.now();
      try {
        outcome = await within(
          bound + SLACK_MS,
          'a migration on a frozen server',
          migrate(database, [pending]).catch((error: unknown) => error),
        );
      } finally {
        clearTimeout(freezing);
        db.thaw();
      }
      const elapsed = performance.now() - started;
      assert.ok(outcome instanceof StoreUnavailableError, String(outcome));
      assert.ok(elapsed < bound + SLACK_MS, `${Math.round(elapsed)} ms`);
      // The connection was destroyed with its session's advisory lock: the next attempt gets it.
      assert.equal(await within(10_000, 'the next migration', migrate(database, [pending])), 1);
    } finally {
      await database.close();
    }
  });

  it('closes within a second while the server is frozen, leaving no socket that keeps the process alive', async () => {
    const sockets = () => process.getActiveResourcesInfo().filter((name) => name === 'TCPSocketWrap').length;
    // Connections an earlier test closed are gone by now (a server that answers closes at once).
    await sleep(300);
    const before = sockets();
    const store = await openPostgresStore({
      url,
      poolSize: 2,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    });
    await Promise.all([store.db.query('SELECT pg_sleep(0.05)'), store.db.query('SELECT pg_sleep(0.05)')]);
    assert.equal(sockets(), before + 2, 'two connections open');
    db.freeze();
    try {
      const started = performance.now();
      await within(1_000 + SLACK_MS, 'closing the store', store.close());
      assert.ok(performance.now() - started < 1_000 + SLACK_MS);
      // A socket is gone from the list a moment after it was destroyed.
      await sleep(50);
      assert.equal(sockets(), before, 'no connection left open');
    } finally {
      db.thaw();
    }
  });

  it('serve answers 503 while it is frozen, and SIGTERM ends it within shutdownTimeoutMs and its last writes', async () => {
    const sb: RunningSandbox = await sandbox();
    try {
      const dir = tempDir('frozen');
      const config = path.join(dir, 'config.json');
      const shutdownTimeoutMs = 1_000;
      writeFileSync(
        config,
        JSON.stringify({
          server: { shutdownTimeoutMs },
          successor: successorConfigFor(sb),
          store: {
            type: 'postgres',
            url: { env: 'IDM_TEST_PG_URL' },
            poolSize: 4,
            connectTimeoutMs: CONNECT_TIMEOUT_MS,
            statementTimeoutMs: STATEMENT_TIMEOUT_MS,
          },
          mappings: { dir: path.resolve('test/fixtures/mappings'), profile: 'alt-uuid' },
          // Only the last write at shutdown: the counts are still in memory then.
          usage: { flushIntervalSeconds: 300 },
          logging: { level: 'info', bufferBytes: 0 },
        }),
      );
      const env = { IDM_TEST_PG_URL: url };
      let out = '';
      let err = '';
      const io: CommandIo = { out: (text) => (out += text), err: (text) => (err += text), env };
      assert.equal(
        await runCli(['apiuser', 'add', 'frozen', '--range', '127.0.0.1', '--json', '-c', config], io),
        0,
        err,
      );
      const { password } = JSON.parse(out) as { password: string };
      const cli = spawnCli(['serve', '--config', config], { env: { ...env, HOST: '127.0.0.1', PORT: '0' } });
      running.push(cli);
      const [, base] = await cli.waitFor('stderr', /idm-compat listening on (\S+)/);
      const docs = (pass: string, user = 'frozen') =>
        fetch(`${base}/iserv/api/docs/openapi.json`, {
          headers: { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` },
          signal: AbortSignal.timeout(30_000),
        });
      assert.equal((await docs(password)).status, 200);
      // Requests at once that need the store: the pool opens all its connections, some idle at
      // the freeze until the store closes.
      const names = Array.from({ length: 8 }, (_, i) => `nobody-${i}`);
      await Promise.all(names.map((name) => docs('x', name).then((response) => response.arrayBuffer())));

      db.freeze();
      try {
        // A wrong password needs the store (throttling): 503 within the bound, not a hang.
        const started = performance.now();
        const answer = await within(OPERATION_BOUND_MS + SLACK_MS, 'a request', docs('wrong'));
        const text = await answer.text();
        assert.equal(answer.status, 503, text);
        assert.match(text, /"message":"the store \(PostgreSQL\) is unavailable/);
        assert.ok(performance.now() - started < OPERATION_BOUND_MS + SLACK_MS);

        // SIGTERM with a request in flight: the listener waits shutdownTimeoutMs at most, then the
        // usage inventory's last write (one store operation) and closing the store (1 s).
        const inFlight = docs('wrong again').then(
          (response) => response.status,
          () => 'cut',
        );
        await sleep(100);
        const stopping = performance.now();
        const exit = await within(
          shutdownTimeoutMs + OPERATION_BOUND_MS + 1_000 + SLACK_MS,
          'the process ending on SIGTERM',
          cli.stop('SIGTERM'),
        );
        const took = performance.now() - stopping;
        assert.deepEqual(exit, { code: 0, signal: null }, cli.stderr());
        assert.ok(took < shutdownTimeoutMs + OPERATION_BOUND_MS + 1_000 + SLACK_MS, `${took} ms`);
        assert.ok([503, 'cut'].includes(await inFlight));
        assert.match(cli.stdout(), /usage inventory not written at shutdown; these counts are lost/);
        assert.match(cli.stdout(), /"msg":"idm-compat stopped"/);
      } finally {
        db.thaw();
      }
    } finally {
      await sb.close();
    }
  });
});
