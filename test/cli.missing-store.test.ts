// Commands that read or change stored state, on a SQLite store.path that is not there: opening it
// would create it (and its folder) empty, and a mistyped path, or a shell without
// IDM_COMPAT_CONFIG falling back to ./data/idm-compat.db, would then be reported as an empty store
// ("No API users", "No shadow outcomes recorded", an empty ID table, every operation unused).
// Each refuses with exit 2 naming the path and creates nothing; only `apiuser add` creates it.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { runCliCaptured as cli } from './cli-helpers.js';
import { tempDir } from './temp-dir.js';

/** A configuration file naming `store` as its SQLite store. */
function configWithStore(dir: string, store: string): string {
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ sandbox: { enabled: true }, store: { path: store } }));
  return file;
}

describe('a SQLite store that is not there', () => {
  it('is refused by every command that only reads or changes it, with exit 2 naming store.path, and not created', async () => {
    const dir = tempDir('missing-store');
    const store = path.join(dir, 'typo', 'store.db');
    const config = configWithStore(dir, store);
    for (const [command, why] of [
      [['usage'], /no proxy has counted usage in it/],
      [['usage', '--unused', '--json'], /no proxy has counted usage in it/],
      [['shadow', 'report', '--json'], /no proxy has recorded shadow outcomes in it/],
      [['ids', 'export'], /check --config or IDM_COMPAT_CONFIG/],
      [['ids', 'export', '--json'], /check --config or IDM_COMPAT_CONFIG/],
      [['apiuser', 'list'], /'idm-compat apiuser add' creates it/],
      [['apiuser', 'remove', 'untis'], /'idm-compat apiuser add' creates it/],
      [['apiuser', 'reset-password', 'untis'], /'idm-compat apiuser add' creates it/],
      [['apiuser', 'unblock', 'untis'], /'idm-compat apiuser add' creates it/],
      [['apiuser', 'set-ranges', 'untis', '--range', '10.0.0.0/8'], /'idm-compat apiuser add' creates it/],
    ] as const) {
      const run = await cli([...command, '--config', config]);
      assert.equal(run.code, 2, `${command.join(' ')}: ${run.stderr}`);
      assert.equal(run.stdout, '', command.join(' '));
      assert.match(
        run.stderr,
        /error: the store .*typo\/store\.db \(store\.path of .*config\.json\) does not exist/,
      );
      assert.match(run.stderr, why, command.join(' '));
      assert.equal(
        existsSync(path.dirname(store)),
        false,
        `${command.join(' ')} created the store or its folder`,
      );
    }
    // The first API user makes the store.
    const added = await cli(['apiuser', 'add', 'untis', '--range', '10.0.0.0/8', '--config', config]);
    assert.equal(added.code, 0, added.stderr);
    const listed = await cli(['apiuser', 'list', '--json', '--config', config]);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { name: string }[]).map((user) => user.name),
      ['untis'],
    );
  });

  it("is opened without the service's other secrets: an operator's shell need not hold them", async () => {
    // usage and shadow report stopped with exit 2 'migration.legacy.password: environment
    // variable OLD_PW is not set', though they read only the store.
    const dir = tempDir('store-only');
    const store = path.join(dir, 'store.db');
    await openSqliteStore(store).close();
    const file = path.join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        successor: {
          baseUrl: 'https://idm.example/iserv/idm/api/v1',
          auth: { type: 'apiKey', key: { env: 'IDM_KEY' } },
        },
        store: { path: store },
        migration: {
          legacy: {
            baseUrl: 'https://old.example/iserv/api',
            username: 'proxy',
            password: { env: 'OLD_PW' },
          },
        },
      }),
    );
    // ids import (the store and the mapping profile) and an offline mappings check (the profile
    // alone) stopped the same way.
    const csv = path.join(dir, 'ids.csv');
    writeFileSync(csv, 'kind,legacy_id,uuid\n');
    for (const command of [
      ['usage', '--json'],
      ['shadow', 'report', '--json'],
      ['ids', 'export', '--json'],
      ['ids', 'import', csv, '--json'],
      ['apiuser', 'list', '--json'],
      ['mappings', 'check', '--json'],
    ]) {
      const run = await cli([...command, '--config', file]);
      assert.equal(run.code, 0, `${command.join(' ')}: ${run.stderr}`);
    }
    // The commands that need them still say so; with --json also on stdout (it printed nothing).
    const live = await cli(['mappings', 'check', '--live', '--config', file]);
    assert.equal(live.code, 2);
    assert.match(live.stderr, /successor\.auth\.key: environment variable IDM_KEY is not set/);
    const check = await cli(['config', 'check', '--config', file]);
    assert.equal(check.code, 2);
    assert.match(check.stderr, /migration\.legacy\.password: environment variable OLD_PW is not set/);
    assert.match(check.stderr, /successor\.auth\.key: environment variable IDM_KEY is not set/);
    const json = await cli(['config', 'check', '--json', '--config', file]);
    assert.equal(json.code, 2);
    assert.deepEqual(JSON.parse(json.stdout), {
      file,
      valid: false,
      problems: [
        { path: 'successor.auth.key', message: 'environment variable IDM_KEY is not set' },
        { path: 'migration.legacy.password', message: 'environment variable OLD_PW is not set' },
      ],
    });
  });

  it('one that is there but has counted nothing: usage --unused lists every operation, and says why', async () => {
    const dir = tempDir('missing-store');
    const store = path.join(dir, 'empty.db');
    await openSqliteStore(store).close();
    const none = await cli(['usage', '--unused', '--json', '--config', configWithStore(dir, store)]);
    assert.equal(none.code, 0, none.stderr);
    assert.equal((JSON.parse(none.stdout) as unknown[]).length, 41);
    assert.match(
      none.stderr,
      /this store has counted no call yet: every operation is listed, none is known to be unused/,
    );
  });
});

describe('a SQLite store.path that cannot be opened', () => {
  const dir = tempDir('unopenable-store');
  /** `apiuser add` (the one command that creates a store) on `store`. */
  const addOn = (store: string) =>
    cli(['apiuser', 'add', 'untis', '--range', '10.0.0.0/8', '--config', configWithStore(dir, store)]);

  it('is refused with exit 1 by the command that would create it, naming the file and store.path', async () => {
    // /proc takes no new files, whoever asks, and an existing file there is not a database.
    for (const store of ['/proc/idm-compat-test.db', '/proc/uptime']) {
      const run = await addOn(store);
      assert.equal(run.code, 1, run.stderr);
      assert.equal(run.stdout, '');
      assert.match(
        run.stderr,
        new RegExp(
          `^error: cannot open the SQLite store ${store} \\(store\\.path\\): .+; check that its folder exists`,
        ),
      );
    }
    // A file that is there but no database: its place and rights are not the problem.
    const garbage = path.join(dir, 'not-a-store.db');
    writeFileSync(garbage, 'x'.repeat(4096));
    const run = await addOn(garbage);
    assert.equal(run.code, 1, run.stderr);
    assert.match(
      run.stderr,
      /^error: cannot open the SQLite store .*not-a-store\.db \(store\.path\): file is not a database\n?$/,
    );
  });
});
