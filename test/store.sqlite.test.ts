// The SQLite store on real files: creation with its folder, WAL mode, versioned migrations applied
// once each and recorded, reopening, and two connections on one file (the server and a CLI command).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { StoreUnavailableError } from '../src/store/errors.js';
import { sqliteDriverFor } from '../src/store/sqlite/connection.js';
import { migrate, openSqliteConnection, openSqliteDatabase } from '../src/store/sqlite/database.js';
import { openSqliteStore, SQLITE_MIGRATIONS, type SqliteStore } from '../src/store/sqlite/index.js';
import type { Migration } from '../src/store/types.js';
import { tempDir } from './temp-dir.js';

const run = promisify(execFile);

const UUID = '0b6f5c1e-8a4e-4c3b-9a57-3f1d2e4c5b6a';
const open: SqliteStore[] = [];
after(async () => {
  await Promise.all(open.map((store) => store.close()));
});

/** A store file in a folder that does not exist yet. */
function freshFile(): string {
  return path.join(tempDir('store'), 'nested', 'deeper', 'store.db');
}

function openStore(file: string): SqliteStore {
  const store = openSqliteStore(file);
  open.push(store);
  return store;
}

function appliedMigrations(store: SqliteStore): { id: string; applied_at: string }[] {
  return store.db.prepare('SELECT id, applied_at FROM schema_migrations ORDER BY rowid').all() as {
    id: string;
    applied_at: string;
  }[];
}

const user = (name: string) => ({
  name,
  passwordHash: 'scrypt$16384$8$1$c2FsdA$aGFzaA',
  ranges: ['127.0.0.1/32'],
  createdAt: 1_700_000_000_000,
});

describe('SQLite store', () => {
  it('creates the file and its folder', async () => {
    const file = freshFile();
    assert.equal(existsSync(path.dirname(file)), false);
    const store = openStore(file);
    assert.ok(existsSync(file));
    await store.ping();
  });

  it('creates a new file and its write-ahead log readable by their owner only; an existing file keeps its mode', async () => {
    const file = freshFile();
    const store = openStore(file);
    assert.ok(await store.apiUsers.create(user('mode')));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(`${file}-wal`).mode & 0o777, 0o600, 'SQLite copies the mode to its -wal');
    assert.equal(statSync(`${file}-shm`).mode & 0o777, 0o600);
    await store.close();
    chmodSync(file, 0o640);
    const again = openStore(file);
    await again.ping();
    assert.equal(statSync(file).mode & 0o777, 0o640, "the operator's mode stays");
    await again.close();
  });

  it('runs in WAL mode, which stays set in the file', async () => {
    const file = freshFile();
    const store = openStore(file);
    assert.equal(store.db.prepare('PRAGMA journal_mode').pluck().get(), 'wal');
    assert.ok(await store.apiUsers.create(user('wal')));
    assert.ok(existsSync(`${file}-wal`), 'writes go to the write-ahead log');
    // A plain connection that sets nothing sees WAL too: the mode is recorded in the file.
    const plain = openSqliteConnection(file);
    try {
      assert.equal(plain.prepare('PRAGMA journal_mode').pluck().get(), 'wal');
    } finally {
      plain.close();
    }
  });

  it('applies every migration once, in order, and records each in schema_migrations', () => {
    const store = openStore(freshFile());
    const applied = appliedMigrations(store);
    assert.deepEqual(
      applied.map((row) => row.id),
      SQLITE_MIGRATIONS.map((m) => m.id),
    );
    assert.equal(new Set(applied.map((row) => row.id)).size, SQLITE_MIGRATIONS.length);
    for (const row of applied) assert.ok(!Number.isNaN(Date.parse(row.applied_at)), row.applied_at);
    const tables = store.db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((row) => (row as { name: string }).name);
    for (const table of ['schema_migrations', 'api_users', 'id_map'])
      assert.ok(tables.includes(table), table);
  });

  it('applies nothing again on reopening and keeps the data', async () => {
    const file = freshFile();
    const first = openStore(file);
    const before = appliedMigrations(first);
    assert.ok(await first.apiUsers.create(user('kept')));
    assert.equal(
      await first.idMap.insert({ kind: 'user', legacyId: '42', uuid: UUID, source: 'import' }, 1),
      'inserted',
    );
    await first.close();

    const second = openStore(file);
    assert.deepEqual(appliedMigrations(second), before, 'same rows, same applied_at');
    assert.deepEqual((await second.apiUsers.get('kept'))?.ranges, ['127.0.0.1/32']);
    assert.equal((await second.idMap.byLegacyIds('user', ['42'])).get('42'), UUID);
  });

  it('runs a migration once even when migrate is called again, and records a new one', () => {
    const db = openSqliteDatabase(freshFile(), SQLITE_MIGRATIONS);
    try {
      // Not idempotent on purpose: running it twice would count 2 (or fail on the CREATE TABLE).
      const counting: Migration = {
        id: '9999-test-counting',
        sql: 'CREATE TABLE test_runs (n INTEGER NOT NULL); INSERT INTO test_runs (n) VALUES (1);',
      };
      migrate(db, [...SQLITE_MIGRATIONS, counting]);
      migrate(db, [...SQLITE_MIGRATIONS, counting]);
      assert.deepEqual(db.prepare('SELECT count(*) AS runs FROM test_runs').get(), { runs: 1 });
      const ids = db
        .prepare('SELECT id FROM schema_migrations ORDER BY rowid')
        .all()
        .map((row) => (row as { id: string }).id);
      assert.deepEqual(ids, [...SQLITE_MIGRATIONS.map((m) => m.id), counting.id]);
    } finally {
      db.close();
    }
  });

  it('rolls a failing migration back completely and does not record it', () => {
    const db = openSqliteDatabase(freshFile(), SQLITE_MIGRATIONS);
    try {
      const broken: Migration = {
        id: '9999-test-broken',
        sql: 'CREATE TABLE half_done (n INTEGER); INSERT INTO no_such_table VALUES (1);',
      };
      assert.throws(() => migrate(db, [...SQLITE_MIGRATIONS, broken]), /no_such_table/);
      const halfDone = db.prepare("SELECT name FROM sqlite_master WHERE name = 'half_done'").get();
      assert.equal(halfDone, undefined);
      const recorded = db.prepare('SELECT id FROM schema_migrations WHERE id = ?').get(broken.id);
      assert.equal(recorded, undefined);
    } finally {
      db.close();
    }
  });

  it('two connections on one file (server and CLI) see each other’s writes', async () => {
    const file = freshFile();
    const server = openStore(file);
    const cli = openStore(file);
    const version = await server.apiUsers.credentialsVersion();

    assert.ok(await cli.apiUsers.create(user('from-cli')));
    assert.equal((await server.apiUsers.get('from-cli'))?.name, 'from-cli');
    assert.notEqual(await server.apiUsers.credentialsVersion(), version, 'the server notices the change');

    assert.equal(
      await server.idMap.insert({ kind: 'group', legacyId: '7', uuid: UUID, source: 'assigned' }, 2),
      'inserted',
    );
    assert.equal((await cli.idMap.byUuids('group', [UUID])).get(UUID), '7');

    assert.ok(await server.apiUsers.setRanges('from-cli', ['10.0.0.0/8']));
    assert.deepEqual((await cli.apiUsers.get('from-cli'))?.ranges, ['10.0.0.0/8']);
    assert.ok(await cli.apiUsers.remove('from-cli', 100));
    assert.equal(await server.apiUsers.get('from-cli'), undefined);
  });

  it("uses Node's own SQLite from Node 24 on, the better-sqlite3 addon before", () => {
    for (const version of ['20.19.0', '22.23.3'])
      assert.equal(sqliteDriverFor(version), 'better-sqlite3', version);
    for (const version of ['24.0.0', '24.21.0', '26.1.0'])
      assert.equal(sqliteDriverFor(version), 'node:sqlite', version);
    const store = openStore(freshFile());
    assert.equal(store.db.driver, sqliteDriverFor(process.versions.node), `this Node.js, ${process.version}`);
  });

  it('commits a transaction, rolls one back when it throws, and a nested one to its savepoint', () => {
    const db = openSqliteDatabase(freshFile(), []);
    try {
      db.exec('CREATE TABLE t (n INTEGER NOT NULL)');
      const insert = db.prepare<[number]>('INSERT INTO t (n) VALUES (?)');
      const all = () => db.prepare<[], number>('SELECT n FROM t ORDER BY n').pluck().all();
      assert.equal(db.transaction((n: number) => insert.run(n).changes)(1), 1);
      assert.throws(
        () =>
          db
            .transaction(() => {
              insert.run(2);
              throw new Error('half-way');
            })
            .immediate(),
        /half-way/,
      );
      assert.deepEqual(all(), [1], 'nothing of the failed transaction is left');
      db.transaction(() => {
        insert.run(3);
        assert.throws(() =>
          db.transaction(() => {
            insert.run(4);
            throw new Error('inner');
          })(),
        );
        insert.run(5);
      })();
      assert.deepEqual(all(), [1, 3, 5], 'the inner one is undone, the outer one kept');
      assert.deepEqual(db.prepare('SELECT n FROM t WHERE n = ?').get(3), { n: 3 });
      assert.equal(db.prepare('SELECT n FROM t WHERE n = ?').get(4), undefined);
    } finally {
      db.close();
    }
  });

  it('is not ready while its writes fail for the disk (SQLITE_FULL): for 30 s, or until a write changes a row', async () => {
    // Readiness was `SELECT 1`: a full disk made every SSO token and failed login a 503 while the
    // replica said ready. A full disk, caused for real: the file may grow no further.
    let now = 1_000_000;
    const store = openSqliteStore(freshFile(), { now: () => now });
    try {
      const pages = store.db.prepare<[], number>('PRAGMA page_count').pluck().get() ?? 0;
      store.db.exec(`PRAGMA max_page_count = ${pages}`);
      const big = 'x'.repeat(64 * 1024);
      const full = () =>
        store.apiUsers.create({ name: 'big', passwordHash: big, ranges: ['127.0.0.1/32'], createdAt: 0 });
      await assert.rejects(
        full(),
        (error: Error) => error instanceof StoreUnavailableError && /SQLITE_FULL/.test(error.message),
      );
      const notReady = /a write failed with SQLITE_FULL at .* and none succeeded since/;
      await assert.rejects(store.ping(), notReady);
      // A write that changes nothing (a login time for no such user) proves nothing.
      await store.apiUsers.recordLogin('nobody', now);
      await assert.rejects(store.ping(), notReady);
      // 30 s after the last failure it says ready again (a replica no traffic reaches is tried
      // anew), and the next failure makes it not ready once more.
      now += 30_000;
      await store.ping();
      await assert.rejects(full());
      await assert.rejects(store.ping(), notReady);
      // A write that changes a row, committed: ready at once.
      store.db.exec('PRAGMA max_page_count = 1073741823');
      assert.equal(
        await store.apiUsers.create({
          name: 'small',
          passwordHash: 'h',
          ranges: ['127.0.0.1/32'],
          createdAt: 0,
        }),
        true,
      );
      await store.ping();
    } finally {
      await store.close();
    }
  });

  it('is not ready once its file was replaced or removed while it runs (it still has the old one open)', async () => {
    // A backup restored with `mv`, or the file deleted: readiness said ready, and the proxy went on
    // serving the old file while `apiuser` commands changed the new one.
    for (const how of ['replaced', 'removed'] as const) {
      const file = freshFile();
      const store = openSqliteStore(file);
      try {
        await store.ping();
        if (how === 'replaced') {
          copyFileSync(file, `${file}.bak`);
          renameSync(`${file}.bak`, file);
        } else rmSync(file);
        await assert.rejects(
          store.ping(),
          (error: Error) =>
            error instanceof StoreUnavailableError &&
            error.message.includes(`the file at store.path was ${how} while the proxy runs`) &&
            /restart the proxy/.test(error.message),
        );
      } finally {
        await store.close();
      }
    }
  });

  it('is unusable after close, and close is idempotent', async () => {
    const store = openSqliteStore(freshFile());
    await store.close();
    await store.close();
    await assert.rejects(store.ping());
  });
});

describe('a SQLite store whose lock another process holds for a moment', () => {
  it('writes a write-behind batch and an API user once the lock is released, and nothing twice', async () => {
    const file = freshFile();
    const store = openStore(file);
    const other = openSqliteConnection(file);
    other.exec('BEGIN IMMEDIATE');
    let released = false;
    const timer = setTimeout(() => {
      other.exec('ROLLBACK');
      released = true;
    }, 300);
    try {
      // The last flush at shutdown has no next one: it waits like any write instead of failing
      // at once (the connection itself never waits: busy_timeout 0).
      await store.usage.add([
        { apiUser: 'sis', operation: 'user.list', outcome: '2xx', count: 3, firstSeen: 1, lastSeen: 2 },
      ]);
      assert.ok(released, 'written after the release');
      assert.equal(await store.apiUsers.create(user('waited')), true);
    } finally {
      clearTimeout(timer);
      if (!released) other.exec('ROLLBACK');
      other.close();
    }
    assert.deepEqual(
      (await store.usage.list()).map((row) => [row.apiUser, row.operation, row.count]),
      [['sis', 'user.list', 3]],
    );
    assert.equal(await store.apiUsers.create(user('waited')), false, 'created once');
  });
});

describe('a new store opened by several processes at once', () => {
  it('is created and migrated once, every process opening it without an error', async () => {
    // The server and a CLI command (or two commands) may open a new or upgraded store at the same
    // moment. Each process here waits for one shared moment, then opens the same new file.
    const dir = tempDir('race');
    const fixture = path.resolve('test/fixtures/open-store-at.ts');
    for (const round of [1, 2]) {
      const file = path.join(dir, `store-${round}.db`);
      const at = String(Date.now() + 3000);
      const opened = await Promise.allSettled(
        [1, 2, 3, 4].map(() => run(process.execPath, ['--import', 'tsx', fixture, file, at])),
      );
      for (const result of opened) {
        assert.equal(result.status, 'fulfilled', result.status === 'rejected' ? String(result.reason) : '');
        if (result.status === 'fulfilled') assert.equal(result.value.stdout, 'opened\n');
      }
      const store = openSqliteStore(file);
      try {
        assert.equal(await store.apiUsers.list().then((users) => users.length), 0);
      } finally {
        await store.close();
      }
    }
  });
});
