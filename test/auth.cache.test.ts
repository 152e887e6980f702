// The credential cache: scrypt does not run per request, and a password reset, a removal or new
// ranges take effect at once — also when done by the CLI in another process while the server runs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { hashPassword, verifyPassword } from '../src/auth/password.js';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import { ManualClock } from '../src/clock.js';
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

  it('answers repeated requests without running scrypt each time', async () => {
    const hash = await hashPassword('x');
    const started = performance.now();
    for (let i = 0; i < 5; i++) await verifyPassword('x', hash);
    const kdfMs = (performance.now() - started) / 5;

    assert.equal((await get(password)).status, 200);
    const t0 = performance.now();
    for (let i = 0; i < 30; i++) assert.equal((await get(password)).status, 200);
    const perRequestMs = (performance.now() - t0) / 30;
    assert.ok(
      perRequestMs < kdfMs / 2,
      `cached requests take ${perRequestMs.toFixed(1)} ms each; one scrypt takes ${kdfMs.toFixed(1)} ms`,
    );
  });

  it('re-verifies after the TTL (default 60 s) and keeps working', async () => {
    clock.advance(61_000);
    assert.equal((await get(password)).status, 200);
  });

  it('drops a reset password at once when the CLI runs in-process on its own connection', async () => {
    assert.equal((await get(password)).status, 200);
    const io = captureIo();
    assert.equal(
      await runCli(['apiuser', 'reset-password', 'cached', '--config', h.configFile, '--json'], io),
      0,
    );
    const fresh = (JSON.parse(io.stdout()) as { password: string }).password;
    assert.equal((await get(password)).status, 401, 'the old password is refused at once');
    assert.equal((await get(fresh)).status, 200);
    password = fresh;
  });

  it('drops a reset password at once when the CLI runs as another process', async () => {
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
    const fresh = (JSON.parse(result.stdout) as { password: string }).password;
    assert.equal((await get(password)).status, 401);
    assert.equal((await get(fresh)).status, 200);
    password = fresh;
  });

  it('applies new ranges at once when another process sets them', async () => {
    assert.equal((await get(password)).status, 200);
    const narrowed = await spawnCli([
      'apiuser',
      'set-ranges',
      'cached',
      '--range',
      '10.0.0.0/8',
      '--config',
      h.configFile,
    ]);
    assert.equal(narrowed.code, 0, narrowed.stderr);
    assert.equal((await get(password)).status, 403);
    const widened = await spawnCli([
      'apiuser',
      'set-ranges',
      'cached',
      '--range',
      '127.0.0.1',
      '--config',
      h.configFile,
    ]);
    assert.equal(widened.code, 0, widened.stderr);
    assert.equal((await get(password)).status, 200);
  });

  it('refuses a removed user at once when another process removes it', async () => {
    assert.equal((await get(password)).status, 200);
    const result = await spawnCli(['apiuser', 'remove', 'cached', '--config', h.configFile]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Removed API user cached/);
    assert.equal((await get(password)).status, 401);
  });
});
