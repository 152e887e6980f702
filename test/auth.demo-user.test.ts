// Sandbox mode creates the API user `demo` once and prints its password and a curl line;
// later starts print how to reset it; production mode never creates it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parseConfig } from '../src/config/load.js';
import { silentLogger } from '../src/lib/logger.js';
import { startServer } from '../src/server.js';
import { call, closeSharedSandbox, PROTECTED, sharedSandbox } from './auth-helpers.js';
import { successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

after(closeSharedSandbox);

function sandboxModeConfig(dir: string): Record<string, unknown> {
  return {
    sandbox: { enabled: true },
    server: { port: 0, shutdownTimeoutMs: 2000 },
    store: { type: 'sqlite', path: path.join(dir, 'store.db') },
    mappings: { dir: path.resolve('mappings') },
  };
}

/** Starts `idm-compat serve` as a real process and resolves once it printed its demo-user notice. */
function startServe(configFile: string): Promise<{ child: ChildProcess; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      "import { runCli } from './src/cli.ts'; process.exitCode = await runCli(process.argv.slice(1));",
      'serve',
      '--config',
      configFile,
    ],
    {
      cwd: process.cwd(),
      env: { ...process.env, HOST: '127.0.0.1', PORT: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stderr}`)), 60_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/Try it:\n.*\n|apiuser reset-password demo/.test(stderr)) {
        clearTimeout(timer);
        resolve({ child, stderr });
      }
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}:\n${stderr}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

describe('sandbox-mode demo user', () => {
  it('is created on the first start with a working password, and only then', async () => {
    const dir = tempDir('demo');
    const config = parseConfig(sandboxModeConfig(dir), { label: 'test', env: {}, baseDir: dir });
    const first = await startServer({ config, logger: silentLogger() });
    try {
      assert.ok(first.demoUser?.password);
      assert.deepEqual(first.demoUser.ranges, ['127.0.0.0/8', '::1/128']);
      const response = await call(`${first.url}${PROTECTED}`, {
        user: 'demo',
        password: first.demoUser.password,
      });
      assert.equal(response.status, 200);
    } finally {
      await first.close();
    }
    const second = await startServer({ config, logger: silentLogger() });
    try {
      assert.equal(second.demoUser?.name, 'demo');
      assert.equal(second.demoUser?.password, undefined);
    } finally {
      await second.close();
    }
  });

  it('is never created in production mode', async () => {
    const idm = await sharedSandbox();
    const dir = tempDir('prod');
    const config = parseConfig(
      {
        server: { port: 0 },
        successor: successorConfigFor(idm),
        store: { type: 'sqlite', path: path.join(dir, 'store.db') },
        mappings: { dir: path.resolve('mappings') },
      },
      { label: 'test', env: {}, baseDir: dir },
    );
    assert.equal(config.mode, 'production');
    const server = await startServer({ config, logger: silentLogger() });
    try {
      assert.equal(server.demoUser, undefined);
      assert.equal(await server.services.store.apiUsers.get('demo'), undefined);
    } finally {
      await server.close();
    }
  });

  it('`serve` prints the password and a ready curl line once, later how to reset it', async () => {
    const dir = tempDir('serve');
    const configFile = path.join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(sandboxModeConfig(dir)));

    const first = await startServe(configFile);
    try {
      const curl =
        /^ {2}curl -u demo:([A-Za-z0-9_-]{32}) (http:\/\/127\.0\.0\.1:\d+)(\/iserv\/api\/Service\/Core\/Entity\/User)$/m.exec(
          first.stderr,
        );
      assert.ok(curl, first.stderr);
      const [, password = '', origin = '', userPath = ''] = curl;
      assert.match(
        first.stderr,
        /Created sandbox API user 'demo' \(allowed from 127\.0\.0\.0\/8, ::1\/128\)/,
      );
      // The printed credentials work: the curl line's URL is past authentication (200 once the
      // User operations exist, 404 before), and the docs answer.
      const users = await call(`${origin}${userPath}`, { user: 'demo', password });
      assert.ok(users.status !== 401 && users.status !== 403, `curl line answered ${users.status}`);
      assert.equal((await call(`${origin}${PROTECTED}`, { user: 'demo', password })).status, 200);
    } finally {
      await stop(first.child);
    }

    const second = await startServe(configFile);
    try {
      // With the file it was started with: the command without it looked in the default store.
      assert.ok(
        second.stderr.includes(`idm-compat apiuser reset-password demo --config ${configFile}\n`),
        second.stderr,
      );
      assert.match(second.stderr, /Sandbox API user 'demo' exists /);
      assert.doesNotMatch(second.stderr, /curl -u/);
    } finally {
      await stop(second.child);
    }
  });
});
