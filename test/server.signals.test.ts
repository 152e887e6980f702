// Graceful shutdown of a real `idm-compat serve` process on SIGTERM/SIGINT: the in-flight request
// finishes, new connections are refused, the process exits 0 and logs "idm-compat stopped"; a
// signal while the start-up waits for an unreachable PostgreSQL ends the waiting.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CliProcess, spawnCli } from './cli-helpers.js';
import { freePort } from './postgres-helpers.js';
import { tempDir } from './temp-dir.js';

const running: CliProcess[] = [];
after(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
});

/** Starts `serve` in sandbox mode on a temp store and free ports; logs (JSON) go to stdout. */
function startServe(): { cli: CliProcess; storeFile: string } {
  const dir = tempDir('signals');
  const storeFile = path.join(dir, 'data', 'store.db');
  const configFile = path.join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      sandbox: { enabled: true, port: 0 },
      server: { shutdownTimeoutMs: 10_000 },
      store: { type: 'sqlite', path: storeFile },
      mappings: { dir: path.resolve('mappings') },
      logging: { level: 'info' },
    }),
  );
  const cli = spawnCli(['serve', '--config', configFile], { env: { HOST: '127.0.0.1', PORT: '0' } });
  running.push(cli);
  return { cli, storeFile };
}

/** The pino lines the process wrote to stdout. */
function logLines(cli: CliProcess): Record<string, unknown>[] {
  return cli
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Resolves with the error code of a TCP connection attempt, or `connected`. */
function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** Makes the embedded sandbox at `sandboxUrl` answer 1.5 s late (its fault switch), so a request stays in flight. */
async function slowSandbox(sandboxUrl: unknown): Promise<void> {
  const faults = await fetch(`${String(sandboxUrl)}/__sandbox/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ latencyMs: 1500 }),
  });
  assert.equal(faults.status, 200, await faults.text());
}

describe('serve on SIGTERM', () => {
  it('finishes the in-flight request, refuses new connections, exits 0 and logs "idm-compat stopped"', async () => {
    const { cli } = startServe();
    const [, url = ''] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(sandbox mode\)/);
    const port = Number(new URL(url).port);
    const sandboxUrl = logLines(cli).find((line) => line.msg === 'sandbox IDM listening')?.url;
    assert.equal(typeof sandboxUrl, 'string', cli.stdout());

    // Warm the successor token, so the slow request below is slow only by the injected latency.
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    await slowSandbox(sandboxUrl);

    const inFlight = fetch(`${url}/readyz`, { headers: { 'x-request-id': 'in-flight-1' } }).then(
      async (response) => ({ status: response.status, body: await response.json(), at: Date.now() }),
    );
    await sleep(300);
    cli.child.kill('SIGTERM');
    await cli.waitFor('stderr', /SIGTERM: finishing in-flight requests/);
    assert.equal(await tryConnect(port), 'ECONNREFUSED', 'new connections are refused while draining');
    const refusedAt = Date.now();

    const answer = await inFlight;
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.ok(answer.at > refusedAt, 'the request was still in flight while new connections were refused');

    assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
    const lines = logLines(cli);
    const completed = lines.findIndex((l) => l.reqId === 'in-flight-1' && l.msg === 'request completed');
    const stopped = lines.findIndex((l) => l.msg === 'idm-compat stopped');
    assert.ok(completed >= 0, 'the in-flight request was logged');
    assert.equal(lines[completed]?.status, 200);
    assert.ok(stopped > completed, '"idm-compat stopped" comes after the in-flight request');
    assert.equal(await tryConnect(port), 'ECONNREFUSED');
  });

  it('writes collected log lines within about a second when traffic is low, and every one at exit', async () => {
    const { cli } = startServe();
    const [, url = ''] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(sandbox mode\)/);
    assert.ok(
      logLines(cli).some((line) => line.msg === 'idm-compat listening'),
      'the start-up lines are out when the server says it listens',
    );
    const lone = await fetch(`${url}/healthz`, { headers: { 'x-request-id': 'lone-1' } });
    assert.equal(lone.status, 200);
    const sentAt = Date.now();
    while (!logLines(cli).some((l) => l.reqId === 'lone-1') && Date.now() - sentAt < 5_000) await sleep(20);
    assert.ok(
      logLines(cli).some((l) => l.reqId === 'lone-1'),
      'the lone line was written',
    );
    assert.ok(Date.now() - sentAt < 2_500, `written after ${Date.now() - sentAt} ms`);

    for (let i = 0; i < 20; i++) {
      const response = await fetch(`${url}/healthz`, { headers: { 'x-request-id': `burst-${i}` } });
      assert.equal(response.status, 200);
    }
    cli.child.kill('SIGTERM');
    assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
    const burst = logLines(cli).filter(
      (l) => String(l.reqId).startsWith('burst-') && l.msg === 'request completed',
    );
    assert.equal(burst.length, 20);
  });

  it('a second signal stops at once (exit 143), saying so, with every collected log line written', async () => {
    // Node's default ended the process: up to a second of lines was lost, answered requests' too.
    const { cli } = startServe();
    const [, url = ''] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(sandbox mode\)/);
    const sandboxUrl = logLines(cli).find((line) => line.msg === 'sandbox IDM listening')?.url;
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${url}/healthz`, { headers: { 'x-request-id': `mark-${i}` } });
      assert.equal(response.status, 200);
    }
    await slowSandbox(sandboxUrl);
    const inFlight = fetch(`${url}/readyz`).catch(() => 'cut off');
    await sleep(300);
    cli.child.kill('SIGTERM');
    await cli.waitFor('stderr', /SIGTERM: finishing in-flight requests/);
    cli.child.kill('SIGTERM');
    assert.deepEqual(await cli.exited, { code: 143, signal: null }, cli.stderr());
    await inFlight;
    assert.match(cli.stderr(), /SIGTERM again: stopping at once/);
    const lines = logLines(cli);
    assert.equal(
      lines.filter((l) => String(l.reqId).startsWith('mark-') && l.msg === 'request completed').length,
      5,
      'every answered request is in the log',
    );
    assert.ok(
      lines.some((l) => l.msg === 'SIGTERM again: stopping at once; requests still in flight are cut off'),
    );
  });

  it('a signal during start-up still stops gracefully once started (exit 0, not killed)', async () => {
    const { cli, storeFile } = startServe();
    // The store is opened first in start-up; the demo user, the sandbox and the listener follow.
    const deadline = Date.now() + 60_000;
    while (!existsSync(storeFile) && Date.now() < deadline && cli.child.exitCode === null) await sleep(5);
    assert.ok(existsSync(storeFile), cli.stderr());
    cli.child.kill('SIGINT');
    assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
    assert.match(cli.stderr(), /SIGINT: finishing in-flight requests/);
    assert.ok(logLines(cli).some((l) => l.msg === 'idm-compat stopped'));
  });

  it('a SIGHUP during start-up neither kills the process nor is lost: the tables are reloaded once it runs', async () => {
    // Node's default for SIGHUP ended the process (signal SIGHUP, nothing logged).
    const { cli, storeFile } = startServe();
    const deadline = Date.now() + 60_000;
    while (!existsSync(storeFile) && Date.now() < deadline && cli.child.exitCode === null) await sleep(5);
    assert.ok(existsSync(storeFile), cli.stderr());
    cli.child.kill('SIGHUP');
    const [, url = ''] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(sandbox mode\)/);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const reloadedBy = Date.now() + 10_000;
    while (!logLines(cli).some((l) => l.msg === 'mapping profile reloaded') && Date.now() < reloadedBy) {
      await sleep(50);
    }
    assert.ok(
      logLines(cli).some((l) => l.msg === 'mapping profile reloaded'),
      cli.stdout(),
    );
    cli.child.kill('SIGTERM');
    assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
  });

  it('a SIGHUP during the shutdown does not cut the in-flight request: it finishes, exit 0', async () => {
    // Node's default for SIGHUP ended the draining process: the client lost its answer, and the
    // usage inventory's last batch and "idm-compat stopped" were never written.
    const { cli } = startServe();
    const [, url = ''] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(sandbox mode\)/);
    const sandboxUrl = logLines(cli).find((line) => line.msg === 'sandbox IDM listening')?.url;
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    await slowSandbox(sandboxUrl);
    const inFlight = fetch(`${url}/readyz`, { headers: { 'x-request-id': 'in-flight-hup' } }).then(
      (response) => response.status,
    );
    await sleep(300);
    cli.child.kill('SIGTERM');
    await cli.waitFor('stderr', /SIGTERM: finishing in-flight requests/);
    cli.child.kill('SIGHUP');
    assert.equal(await inFlight, 200);
    assert.deepEqual(await cli.exited, { code: 0, signal: null }, cli.stderr());
    assert.ok(logLines(cli).some((l) => l.msg === 'SIGHUP ignored: the proxy is shutting down'));
    assert.ok(logLines(cli).some((l) => l.msg === 'idm-compat stopped'));
  });
});

describe('serve on SIGTERM while its PostgreSQL store is not reachable yet', () => {
  it('ends the start-up retries at once and exits 0', async () => {
    // Nobody listens on the store's port: start-up retries (here up to 1000 attempts, minutes).
    const dir = tempDir('signals');
    const configFile = path.join(dir, 'config.json');
    const nobody = await freePort();
    writeFileSync(
      configFile,
      JSON.stringify({
        // Never contacted: start-up opens the store before anything talks to the successor.
        successor: {
          baseUrl: 'http://127.0.0.1:9/iserv/idm/api/v1',
          auth: { type: 'apiKey', key: 'unused' },
        },
        store: {
          type: 'postgres',
          url: `postgres://idm:secret@127.0.0.1:${nobody}/idm`,
          startup: { attempts: 1000, initialDelayMs: 200, maxDelayMs: 1000 },
        },
        mappings: { dir: path.resolve('mappings') },
        logging: { level: 'info', bufferBytes: 0 },
      }),
    );
    const cli = spawnCli(['serve', '--config', configFile]);
    running.push(cli);
    await cli.waitFor('stdout', /store \(PostgreSQL\) not reachable \(attempt 2 of 1000\)/, 30_000);
    // A SIGHUP meanwhile (an operator reloading a changed profile) does not end the waiting process.
    cli.child.kill('SIGHUP');
    await cli.waitFor('stdout', /store \(PostgreSQL\) not reachable \(attempt 4 of 1000\)/, 30_000);
    const signalledAt = Date.now();
    cli.child.kill('SIGTERM');
    const exit = await Promise.race([cli.exited, sleep(5_000).then(() => 'still running')]);
    assert.deepEqual(exit, { code: 0, signal: null }, cli.stderr());
    assert.ok(Date.now() - signalledAt < 5_000);
    assert.match(cli.stderr(), /SIGTERM: stopped while waiting for the store/);
    assert.ok(logLines(cli).some((l) => l.msg === 'idm-compat stopped'));
    assert.doesNotMatch(cli.stdout() + cli.stderr(), /secret/, 'the URL is never printed');
  });
});
