// The credential cache: scrypt runs once per credential and TTL (counted, not timed); a new user
// takes effect at once, a password reset, a removal or new ranges as soon as the credentials
// version is read again (at most one poll interval, by the injected clock) — also when the CLI
// makes the change in another process while the server runs. Within the interval a cached check
// asks the store nothing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setApiUserRanges } from '../src/auth/admin.js';
import { CREDENTIALS_VERSION_POLL_MS } from '../src/auth/authenticator.js';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import { ManualClock } from '../src/lib/clock.js';
import { type AuthHarness, call, closeSharedSandbox, PROTECTED, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

/** Runs the real CLI in a child process (`node --import tsx`), as an operator would while the server runs. */
function spawnCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "import { runCli } from './src/cli.ts'; process.exitCode = await runCli(process.argv.slice(1));",
        ...args,
      ],
      {
        cwd: process.cwd(),
        env: { ...process.env, IDM_COMPAT_CONFIG: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function captureIo(): CommandIo & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    env: {},
    stdout: () => out,
    stderr: () => err,
  };
}

describe('credential cache', () => {
  const clock = new ManualClock();
  let h: AuthHarness;
  let password = '';

  before(async () => {
    h = await startHarness({ clock });
    password = await h.addUser('cached', ['127.0.0.0/8']);
  });
  after(() => h?.close());

  const get = (pw: string) => call(`${h.url}${PROTECTED}`, { user: 'cached', password: pw });
  /** Lets one poll interval pass, so the next request reads the credentials version. */
  const nextPoll = () => clock.advance(CREDENTIALS_VERSION_POLL_MS);
  /** Sets the ranges of `cached` from another process, as an operator's CLI call does. */
  const setRanges = async (range: string) => {
    const run = await spawnCli([
      'apiuser',
      'set-ranges',
      'cached',
      '--range',
      range,
      '--config',
      h.configFile,
    ]);
    assert.equal(run.code, 0, run.stderr);
  };

  /** `count` requests with the same credentials at once; every one must be a 200. */
  async function concurrently(pw: string, count: number): Promise<void> {
    const responses = await Promise.all(Array.from({ length: count }, () => get(pw)));
    assert.deepEqual(
      responses.map((response) => response.status),
      responses.map(() => 200),
    );
  }

  /** Password KDF runs so far, as the proxy's own metrics count them. */
  async function kdfRunCount(): Promise<number> {
    const text = await (await fetch(`${h.url}/metrics`)).text();
    const found = /^idm_compat_password_kdf_runs_total (\d+)$/m.exec(text);
    assert.ok(found?.[1], 'the metric is exported');
    return Number(found[1]);
  }

  it('runs the KDF once for many requests with the same credentials', async () => {
    const before = await kdfRunCount();
    assert.equal((await get(password)).status, 200);
    for (let i = 0; i < 30; i++) assert.equal((await get(password)).status, 200);
    await concurrently(password, 10);
    assert.equal((await kdfRunCount()) - before, 1, 'one scrypt run for 41 requests');
  });

  it('runs it once more after an invalidation, shared by concurrent requests', async () => {
    // New ranges (the same ones) bump the credentials version, which drops the cache.
    await setApiUserRanges(h.services.store, 'cached', ['127.0.0.0/8']);
    nextPoll();
    const before = await kdfRunCount();
    await concurrently(password, 10);
    for (let i = 0; i < 10; i++) assert.equal((await get(password)).status, 200);
    assert.equal((await kdfRunCount()) - before, 1, 'one scrypt run for 20 requests after the invalidation');
  });

  it('re-verifies after the TTL (default 60 s) and keeps working', async () => {
    clock.advance(59_000);
    let before = await kdfRunCount();
    assert.equal((await get(password)).status, 200);
    assert.equal((await kdfRunCount()) - before, 0, 'still cached after 59 s');
    clock.advance(2_000);
    before = await kdfRunCount();
    assert.equal((await get(password)).status, 200);
    assert.equal((await get(password)).status, 200);
    assert.equal((await kdfRunCount()) - before, 1, 'verified again after 61 s, then cached');
  });

  it('drops a reset password within the poll interval when the CLI runs in-process on its own connection', async () => {
    assert.equal((await get(password)).status, 200);
    const io = captureIo();
    assert.equal(
      await runCli(['apiuser', 'reset-password', 'cached', '--config', h.configFile, '--json'], io),
      0,
    );
    nextPoll();
    const fresh = (JSON.parse(io.stdout()) as { password: string }).password;
    assert.equal((await get(password)).status, 401, 'the old password is refused at once');
    assert.equal((await get(fresh)).status, 200);
    password = fresh;
  });

  it('drops a reset password within the poll interval when the CLI runs as another process', async () => {
    assert.equal((await get(password)).status, 200);
    const result = await spawnCli([
      'apiuser',
      'reset-password',
      'cached',
      '--config',
      h.configFile,
      '--json',
    ]);
    assert.equal(result.code, 0, result.stderr);
    nextPoll();
    const fresh = (JSON.parse(result.stdout) as { password: string }).password;
    assert.equal((await get(password)).status, 401);
    assert.equal((await get(fresh)).status, 200);
    password = fresh;
  });

  it('lets a user added by another process log in at once', async () => {
    let created = { name: '', password: 'not-yet', ranges: [] as string[] };
    const spawned = () => call(`${h.url}${PROTECTED}`, { user: 'spawned', password: created.password });
    assert.equal((await spawned()).status, 401, 'no such user yet');
    const result = await spawnCli([
      'apiuser',
      'add',
      'spawned',
      '--range',
      '127.0.0.1/32',
      '--config',
      h.configFile,
      '--json',
    ]);
    assert.equal(result.code, 0, result.stderr);
    created = JSON.parse(result.stdout) as typeof created;
    assert.equal(created.name, 'spawned');
    assert.deepEqual(created.ranges, ['127.0.0.1/32']);
    assert.match(created.password, /^[A-Za-z0-9_-]{32}$/);
    const response = await spawned();
    assert.equal(response.status, 200, response.text);
    assert.equal((await call(`${h.url}${PROTECTED}`, { user: 'spawned', password: 'wrong' })).status, 401);
  });

  it('applies new ranges within the poll interval when another process sets them', async () => {
    assert.equal((await get(password)).status, 200);
    await setRanges('10.0.0.0/8');
    nextPoll();
    assert.equal((await get(password)).status, 403);
    await setRanges('127.0.0.1');
    nextPoll();
    assert.equal((await get(password)).status, 200);
  });

  it('asks the store nothing within the poll interval, and applies a change at the next poll', async () => {
    assert.equal((await get(password)).status, 200);
    const { apiUsers } = h.services.store;
    const original = apiUsers.credentialsVersion;
    let reads = 0;
    apiUsers.credentialsVersion = () => {
      reads++;
      return original.call(apiUsers);
    };
    try {
      nextPoll();
      assert.equal((await get(password)).status, 200);
      assert.equal(reads, 1, 'the first request after the interval reads the version');
      await setRanges('10.0.0.0/8');
      for (let i = 0; i < 20; i++)
        assert.equal((await get(password)).status, 200, 'cached within the interval');
      clock.advance(CREDENTIALS_VERSION_POLL_MS - 1);
      assert.equal((await get(password)).status, 200, 'still within the interval');
      assert.equal(reads, 1, 'no store query for 21 cached checks');
      clock.advance(1);
      assert.equal((await get(password)).status, 403, 'the new ranges apply at the next poll');
      assert.equal(reads, 2);
    } finally {
      apiUsers.credentialsVersion = original;
    }
    await setApiUserRanges(h.services.store, 'cached', ['127.0.0.1']);
    nextPoll();
    assert.equal((await get(password)).status, 200);
  });

  it('refuses a removed user within the poll interval when another process removes it', async () => {
    assert.equal((await get(password)).status, 200);
    const result = await spawnCli(['apiuser', 'remove', 'cached', '--config', h.configFile]);
    assert.equal(result.code, 0, result.stderr);
    nextPoll();
    assert.match(result.stdout, /Removed API user cached/);
    assert.equal((await get(password)).status, 401);
  });
});
