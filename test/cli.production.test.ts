// Production mode never loads the embedded sandbox or its OAuth2 server (oidc-provider, which also
// warns about Node 20 when loaded): proven on real CLI processes whose loaded modules are recorded
// (test/fixtures/record-modules.mjs). Sandbox mode and the `sandbox` command do load them, which
// also shows that the recording works.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { type CliProcess, loadedModules, spawnCli } from './cli-helpers.js';
import { sandbox, successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

const OIDC_PROVIDER = /\/node_modules\/oidc-provider\//;
/** The `sandbox` command's definition is part of every CLI start; it loads nothing else of the sandbox. */
const SANDBOX_COMMAND = /\/src\/sandbox\/command\.ts$/;
/** The PostgreSQL driver and what only some CLI commands use (CSV import, progress bars). */
const UNUSED_BY_A_SQLITE_SERVER = /\/node_modules\/(?:pg|pg-[^/]+|cli-progress|csv-parse)\//;

let dir = '';
const running: CliProcess[] = [];

before(() => {
  dir = tempDir('production');
});
after(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
});

function start(name: string, args: string[]): { cli: CliProcess; moduleLog: string } {
  const moduleLog = path.join(dir, `${name}.modules.txt`);
  const cli = spawnCli(args, { moduleLog, env: { HOST: '127.0.0.1', PORT: '0' } });
  running.push(cli);
  return { cli, moduleLog };
}

/** What a process loaded of the sandbox, its OAuth2 server and the sandbox SSO wiring. */
function sandboxModules(modules: string[]): string[] {
  return modules.filter(
    (url) =>
      OIDC_PROVIDER.test(url) ||
      (url.includes('/src/sandbox/') && !SANDBOX_COMMAND.test(url)) ||
      url.endsWith('/src/sso/sandbox.ts'),
  );
}

describe('production mode', () => {
  let successor: RunningSandbox;
  let configFile = '';

  before(async () => {
    // The successor is a sandbox in this test process, reached like any remote IDM.
    successor = await sandbox();
    configFile = path.join(dir, 'production.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        server: { shutdownTimeoutMs: 5000 },
        successor: successorConfigFor(successor),
        store: { type: 'sqlite', path: path.join(dir, 'production', 'store.db') },
        mappings: { dir: path.resolve('mappings') },
      }),
    );
  });
  after(async () => {
    await successor?.close();
  });

  it('`serve` runs, is ready against the remote successor and never loads oidc-provider or the sandbox', async () => {
    const { cli, moduleLog } = start('serve-production', ['serve', '--config', configFile]);
    const [, url] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(production mode\)/);
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
    assert.equal(successor.counters.get('POST /token'), 1, 'the first /readyz fetched a token');
    // With a valid cached token /readyz does not contact the token endpoint (docs/operations.md).
    successor.faults.set({ tokenEndpointDown: true });
    try {
      const again = await fetch(`${url}/readyz`);
      assert.equal(again.status, 200, await again.text());
      assert.equal(successor.counters.get('POST /token'), 1, 'no second token request');
    } finally {
      successor.faults.reset();
    }
    const exit = await cli.stop('SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, cli.stderr());

    const modules = loadedModules(moduleLog);
    assert.ok(
      modules.some((m) => m.endsWith('/src/server.ts')) &&
        modules.some((m) => m.includes('/node_modules/openid-client/')),
      'the module log covers the running server and its successor client',
    );
    assert.deepEqual(sandboxModules(modules), []);
    assert.deepEqual(
      modules.filter((m) => UNUSED_BY_A_SQLITE_SERVER.test(m)),
      [],
      'a SQLite proxy loads neither the PostgreSQL driver nor what only CLI commands use',
    );
    assert.doesNotMatch(cli.stderr(), /oidc-provider/);
    assert.doesNotMatch(cli.stderr(), /Sandbox API user|demo/);
  });

  for (const args of [['--help'], ['serve', '--help'], ['apiuser', 'list', '--config', 'CONFIG']]) {
    it(`\`idm-compat ${args.join(' ')}\` does not load oidc-provider or the sandbox`, async () => {
      const { cli, moduleLog } = start(
        args.join('-').replaceAll(/\W+/g, '_'),
        args.map((a) => (a === 'CONFIG' ? configFile : a)),
      );
      const exit = await cli.exited;
      assert.deepEqual(exit, { code: 0, signal: null }, cli.stderr());
      assert.match(cli.stdout(), /Usage: idm-compat|No API users/);
      const modules = loadedModules(moduleLog);
      assert.ok(
        modules.some((m) => m.endsWith('/src/cli.ts')),
        'the module log covers the CLI',
      );
      assert.deepEqual(sandboxModules(modules), []);
      assert.doesNotMatch(cli.stderr(), /oidc-provider/);
    });
  }
});

/** A sandbox-mode configuration file named `name` (its own store), with `extra` on top. */
function sandboxConfig(name: string, extra: Record<string, unknown> = {}): string {
  const configFile = path.join(dir, `${name}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      sandbox: { enabled: true },
      store: { type: 'sqlite', path: path.join(dir, name, 'store.db') },
      mappings: { dir: path.resolve('mappings') },
      ...extra,
    }),
  );
  return configFile;
}

describe('sandbox mode', () => {
  it('`serve` without a production config loads the sandbox and oidc-provider', async () => {
    const configFile = sandboxConfig('sandbox', { logging: { level: 'warn' } });
    const { cli, moduleLog } = start('serve-sandbox', ['serve', '--config', configFile]);
    await cli.waitFor('stderr', /idm-compat listening on \S+ \(sandbox mode\)/);
    assert.deepEqual(await cli.stop('SIGTERM'), { code: 0, signal: null }, cli.stderr());
    const modules = sandboxModules(loadedModules(moduleLog));
    assert.ok(modules.some((m) => OIDC_PROVIDER.test(m)));
    assert.ok(modules.some((m) => m.endsWith('/src/sandbox/server.ts')));
  });

  it("a quiet proxy's request line reaches stdout within about a second, though the buffer is far from full", async () => {
    const configFile = sandboxConfig('sandbox-quiet');
    const { cli } = start('serve-quiet', ['serve', '--config', configFile]);
    const [, url] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(sandbox mode\)/);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    // One line of a few hundred bytes against the default 4096-byte buffer: only the periodic
    // flush (every second) writes it while the proxy runs.
    const [line] = await cli.waitFor('stdout', /^\{.*"request completed".*\}$/m, 3_000);
    assert.equal(JSON.parse(line).path, '/healthz');
    assert.deepEqual(await cli.stop('SIGTERM'), { code: 0, signal: null }, cli.stderr());
  });

  it('the `sandbox` command loads the sandbox and oidc-provider when it runs', async () => {
    const { cli, moduleLog } = start('sandbox-command', ['sandbox', '--port', '0', '--json']);
    const [line] = await cli.waitFor('stdout', /^\{.*\}$/m);
    const summary = JSON.parse(line) as { url: string };
    assert.equal((await fetch(`${summary.url}/__sandbox/faults`)).status, 200);
    assert.deepEqual(await cli.stop('SIGTERM'), { code: 0, signal: null }, cli.stderr());
    assert.ok(sandboxModules(loadedModules(moduleLog)).some((m) => OIDC_PROVIDER.test(m)));
  });
});
