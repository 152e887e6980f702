// The apiuser commands end to end through runCli (in-process, real SQLite file); the spawned
// process case while a server runs is in auth.cache.test.ts.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { verifyPassword } from '../src/auth/password.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { runCliCaptured } from './cli-helpers.js';
import { tempDir } from './temp-dir.js';

let configFile = '';
let storeFile = '';

const cli = runCliCaptured;

/** Runs with `--config` pointing at the test's store. */
const run = (...args: string[]) => cli([...args, '--config', configFile]);

async function storedUser(name: string) {
  const store = openSqliteStore(storeFile);
  try {
    return await store.apiUsers.get(name);
  } finally {
    await store.close();
  }
}

interface ListedUser {
  name: string;
  ranges: string[];
  created: string;
  lastLogin: string | null;
  throttled: boolean;
  throttledUntil: string | null;
  recentFailures: number;
  blocks: { scope: string; address: string | null; until: string; failures: number }[];
  knownAddresses: { address: string; lastSuccess: string }[];
}

async function listed(): Promise<ListedUser[]> {
  const result = await run('apiuser', 'list', '--json');
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as ListedUser[];
}

before(() => {
  const dir = tempDir('cli');
  storeFile = path.join(dir, 'store.db');
  configFile = path.join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({ sandbox: { enabled: true }, store: { type: 'sqlite', path: storeFile } }),
  );
});

describe('apiuser add', () => {
  it('creates a user, prints a strong password once (--json) and normalises the ranges', async () => {
    const result = await run(
      'apiuser',
      'add',
      'untis',
      '--range',
      '10.20.0.7/24',
      '--range',
      '2001:db8:20::/64',
      '--json',
    );
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout) as { name: string; password: string; ranges: string[] };
    assert.deepEqual(Object.keys(printed), ['name', 'password', 'ranges']);
    assert.equal(printed.name, 'untis');
    assert.deepEqual(printed.ranges, ['10.20.0.0/24', '2001:db8:20::/64']);
    // 32 base64url characters: 192 bits of entropy (≥ 128 required).
    assert.match(printed.password, /^[A-Za-z0-9_-]{32}$/);
    const stored = await storedUser('untis');
    assert.ok(stored);
    assert.ok(stored.passwordHash.startsWith('scrypt$'));
    assert.ok(!stored.passwordHash.includes(printed.password));
    assert.equal(await verifyPassword(printed.password, stored.passwordHash), true);
  });

  it('prints the password in text form too', async () => {
    const result = await run('apiuser', 'add', 'webuntis.sync', '--range', '192.0.2.1');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Created API user webuntis\.sync, allowed from 192\.0\.2\.1\/32\./);
    const password = /^ {2}([A-Za-z0-9_-]{32})$/m.exec(result.stdout)?.[1];
    assert.ok(password, result.stdout);
  });

  it('refuses a duplicate name and changes nothing', async () => {
    const before = await storedUser('untis');
    const result = await run('apiuser', 'add', 'untis', '--range', '127.0.0.1/32');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error: API user untis already exists/);
    assert.equal(result.stdout, '');
    assert.deepEqual(await storedUser('untis'), before);
  });

  it('refuses invalid ranges, naming each, and creates nothing', async () => {
    const result = await run(
      'apiuser',
      'add',
      'broken',
      '--range',
      '10.0.0.0/8',
      '--range',
      '10.0.0.0/33',
      '--range',
      'nonsense',
    );
    assert.equal(result.code, 2);
    assert.match(result.stderr, /prefix \/33 is too long/);
    assert.match(result.stderr, /not a CIDR range: "nonsense"/);
    assert.equal(await storedUser('broken'), undefined);
  });

  it('requires at least one range', async () => {
    const result = await run('apiuser', 'add', 'norange');
    assert.equal(result.code, 2);
    assert.match(result.stderr, /at least one --range/);
    assert.equal(await storedUser('norange'), undefined);
  });

  it('refuses names outside the documented rule', async () => {
    for (const name of ['has space', 'colon:name', 'x'.repeat(65), 'ümlaut']) {
      const result = await run('apiuser', 'add', name, '--range', '127.0.0.1');
      assert.equal(result.code, 2, name);
      assert.match(result.stderr, /invalid API user name/);
    }
  });

  it('refuses such names in every command that takes one, with status 2 as documented', async () => {
    for (const args of [
      ['remove'],
      ['reset-password'],
      ['unblock'],
      ['set-ranges', '--range', '127.0.0.1'],
    ]) {
      const [command = '', ...rest] = args;
      const result = await run('apiuser', command, 'bad name!', ...rest);
      assert.equal(result.code, 2, `${command}: ${result.stderr}`);
      assert.match(result.stderr, /invalid API user name "bad name!"/);
    }
  });

  it('requires NAME', async () => {
    const result = await run('apiuser', 'add', '--range', '127.0.0.1');
    assert.equal(result.code, 2);
    assert.match(result.stderr, /missing the API user NAME/);
  });
});

describe('apiuser list', () => {
  it('lists name, ranges, created, last login and throttled state (--json)', async () => {
    const users = await listed();
    const untis = users.find((u) => u.name === 'untis');
    assert.ok(untis);
    assert.deepEqual(untis.ranges, ['10.20.0.0/24', '2001:db8:20::/64']);
    assert.ok(!Number.isNaN(Date.parse(untis.created)));
    assert.equal(untis.lastLogin, null);
    assert.equal(untis.throttled, false);
    assert.equal(untis.throttledUntil, null);
    assert.equal(untis.recentFailures, 0);
    assert.deepEqual(untis.blocks, []);
    assert.deepEqual(untis.knownAddresses, []);
    assert.deepEqual(
      users.map((u) => u.name),
      [...users.map((u) => u.name)].sort(),
    );
  });

  it('prints a table', async () => {
    const result = await run('apiuser', 'list');
    assert.equal(result.code, 0);
    const [header, ...rows] = result.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /^NAME\s+RANGES\s+CREATED\s+LAST LOGIN\s+BLOCKED\s+FAILED\s+KNOWN$/);
    assert.ok(
      rows.some((row) => /^untis\s+10\.20\.0\.0\/24,2001:db8:20::\/64\s+\S+\s+never\s+no\s+0\s+0$/.test(row)),
      result.stdout,
    );
  });

  it('says so when there are no users', async () => {
    const dir = tempDir('cli-empty');
    const file = path.join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({ sandbox: { enabled: true }, store: { type: 'sqlite', path: path.join(dir, 's.db') } }),
    );
    await openSqliteStore(path.join(dir, 's.db')).close(); // a store without API users
    // The config file may also come from IDM_COMPAT_CONFIG.
    const result = await cli(['apiuser', 'list'], { IDM_COMPAT_CONFIG: file });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /No API users/);
    assert.deepEqual(
      JSON.parse((await cli(['apiuser', 'list', '--json'], { IDM_COMPAT_CONFIG: file })).stdout),
      [],
    );
  });
});

describe('apiuser reset-password', () => {
  it('replaces the password and prints the new one once', async () => {
    const before = await storedUser('untis');
    const result = await run('apiuser', 'reset-password', 'untis', '--json');
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout) as { name: string; password: string; ranges: string[] };
    assert.equal(printed.name, 'untis');
    assert.deepEqual(printed.ranges, ['10.20.0.0/24', '2001:db8:20::/64']);
    const after = await storedUser('untis');
    assert.ok(after && before);
    assert.notEqual(after.passwordHash, before.passwordHash);
    assert.equal(await verifyPassword(printed.password, after.passwordHash), true);
    assert.equal(after.createdAt, before.createdAt);
  });

  it('refuses an unknown name', async () => {
    const result = await run('apiuser', 'reset-password', 'ghost');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no API user named "ghost"/);
  });
});

describe('apiuser set-ranges', () => {
  it('replaces the ranges', async () => {
    const result = await run('apiuser', 'set-ranges', 'untis', '--range', '::ffff:10.1.0.0/112', '--json');
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { name: 'untis', ranges: ['10.1.0.0/16'] });
    assert.deepEqual((await storedUser('untis'))?.ranges, ['10.1.0.0/16']);
  });

  it('refuses invalid ranges and keeps the old ones', async () => {
    const result = await run('apiuser', 'set-ranges', 'untis', '--range', '300.1.1.1/8');
    assert.equal(result.code, 2);
    assert.match(result.stderr, /not a CIDR range/);
    assert.deepEqual((await storedUser('untis'))?.ranges, ['10.1.0.0/16']);
  });

  it('refuses an unknown name', async () => {
    const result = await run('apiuser', 'set-ranges', 'ghost', '--range', '10.0.0.0/8');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no API user named "ghost"/);
  });
});

describe('apiuser list and unblock with throttle state', () => {
  const MINUTE = 60_000;
  let now = 0;

  before(async () => {
    assert.equal((await run('apiuser', 'add', 'blocked.sync', '--range', '10.40.0.0/16')).code, 0);
    // The state a running server leaves behind: the user's counter escalated by failures spread
    // over many addresses, two addresses blocked on their own, and two known addresses (one past
    // the 30 days).
    now = Date.now();
    const store = openSqliteStore(storeFile);
    try {
      const { loginThrottle } = store;
      const fail = (scope: 'user' | 'pair', address: string, until: number, times: number) =>
        Array.from({ length: times }).reduce<Promise<unknown>>(
          (previous) =>
            previous.then(() =>
              loginThrottle.recordFailure({ scope, userName: 'blocked.sync', address }, now, 0, () => until),
            ),
          Promise.resolve(),
        );
      await fail('user', '', now + 10 * MINUTE, 24);
      await fail('pair', '192.0.2.7', now + 5 * MINUTE, 7);
      await fail('pair', '2001:db8:1::/64', now + 2 * MINUTE, 6);
      await fail('pair', '198.51.100.9', now - MINUTE, 3);
      await loginThrottle.recordSuccess('blocked.sync', '10.40.0.5', now - 2 * MINUTE, 0, 32);
      await loginThrottle.recordSuccess('blocked.sync', '10.40.1.9', now - MINUTE, 0, 32);
      await loginThrottle.recordSuccess('blocked.sync', '10.40.2.1', now - 31 * 24 * 60 * MINUTE, 0, 32);
    } finally {
      await store.close();
    }
  });

  it('shows each current block with its end, the failures and the known addresses (--json)', async () => {
    const user = (await listed()).find((u) => u.name === 'blocked.sync');
    assert.ok(user);
    const at = (ms: number) => new Date(ms).toISOString();
    assert.equal(user.throttled, true);
    assert.equal(user.throttledUntil, at(now + 10 * MINUTE));
    assert.equal(user.recentFailures, 24);
    assert.deepEqual(user.blocks, [
      { scope: 'address', address: '192.0.2.7', until: at(now + 5 * MINUTE), failures: 7 },
      { scope: 'address', address: '2001:db8:1::/64', until: at(now + 2 * MINUTE), failures: 6 },
      { scope: 'user', address: null, until: at(now + 10 * MINUTE), failures: 24 },
    ]);
    assert.deepEqual(user.knownAddresses, [
      { address: '10.40.1.9', lastSuccess: at(now - MINUTE) },
      { address: '10.40.0.5', lastSuccess: at(now - 2 * MINUTE) },
    ]);
  });

  it('prints BLOCKED, FAILED and KNOWN columns', async () => {
    const result = await run('apiuser', 'list');
    assert.equal(result.code, 0, result.stderr);
    const row = result.stdout.split('\n').find((line) => line.startsWith('blocked.sync '));
    const until = new Date(now + 10 * MINUTE).toISOString();
    const addresses = new Date(now + 5 * MINUTE).toISOString();
    assert.ok(row?.endsWith(`user until ${until}; 2 addresses until ${addresses}  24      2`), row);
  });

  it('unblock clears the counters, keeps the known addresses, and refuses unknown names', async () => {
    const result = await run('apiuser', 'unblock', 'blocked.sync');
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'Cleared 4 failed-login counters of API user blocked.sync.\n');
    const user = (await listed()).find((u) => u.name === 'blocked.sync');
    assert.ok(user);
    assert.equal(user.throttled, false);
    assert.equal(user.recentFailures, 0);
    assert.deepEqual(user.blocks, []);
    assert.equal(user.knownAddresses.length, 2);
    assert.deepEqual(JSON.parse((await run('apiuser', 'unblock', 'blocked.sync', '--json')).stdout), {
      name: 'blocked.sync',
      cleared: 0,
    });
    const unknown = await run('apiuser', 'unblock', 'ghost');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no API user named "ghost"/);
  });
});

describe('apiuser remove', () => {
  it('removes a user, and the store records when (store copy does not bring it back)', async () => {
    const before = Date.now();
    const result = await run('apiuser', 'remove', 'webuntis.sync');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Removed API user webuntis\.sync\./);
    assert.equal(await storedUser('webuntis.sync'), undefined);
    assert.ok(!(await listed()).some((u) => u.name === 'webuntis.sync'));
    const store = openSqliteStore(storeFile);
    try {
      const removedAt = (await store.apiUsers.removals()).get('webuntis.sync');
      assert.ok(removedAt !== undefined && removedAt >= before && removedAt <= Date.now(), String(removedAt));
    } finally {
      await store.close();
    }
  });

  it('refuses an unknown name', async () => {
    const result = await run('apiuser', 'remove', 'webuntis.sync');
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no API user named "webuntis\.sync"/);
  });
});

describe('apiuser help', () => {
  it('has --help on every command and lists them in the overview', async () => {
    const overview = await cli(['--help']);
    for (const command of ['add', 'list', 'remove', 'reset-password', 'set-ranges', 'unblock']) {
      assert.match(overview.stdout, new RegExp(`apiuser ${command}`));
      const help = await cli(['apiuser', command, '--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`^Usage: idm-compat apiuser ${command}`));
      assert.match(help.stdout, /--config FILE/);
    }
  });

  it('answers --help on a command group with its commands (exit 0), the group alone with them and exit 2', async () => {
    // `idm-compat apiuser --help` was "error: unknown command 'apiuser --help'" and exit 2.
    for (const group of ['apiuser', 'config', 'mappings', 'ids', 'shadow', 'store']) {
      for (const flag of ['--help', '-h']) {
        const help = await cli([group, flag]);
        assert.equal(help.code, 0, `${group} ${flag}: ${help.stderr}`);
        assert.equal(help.stderr, '');
        assert.match(help.stdout, new RegExp(`^Usage: idm-compat ${group} <command> \\[options\\]`));
        assert.doesNotMatch(help.stdout, /^ {2}serve /m, 'only the group’s commands');
      }
    }
    const group = await cli(['apiuser']);
    assert.equal(group.code, 2);
    assert.match(group.stderr, /^error: 'apiuser' needs a command/);
    for (const command of ['add', 'list', 'remove', 'reset-password', 'set-ranges', 'unblock'])
      assert.match(group.stderr, new RegExp(`^ {2}apiuser ${command} `, 'm'));
    const unknown = await cli(['apiuser', 'bogus']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^error: unknown command 'apiuser bogus'/);
  });

  it('rejects unknown options with usage', async () => {
    const result = await run('apiuser', 'list', '--bogus');
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Usage: idm-compat apiuser list/);
  });
});
