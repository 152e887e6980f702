// Successor faults end to end: each fault gives its documented status (docs/operations.md,
// SPEC 6: 502 failing or unreachable, 503 no token, 504 too slow) within a bound, /readyz says
// "not ready" while it lasts, and the first request after the fault clears succeeds. The faults
// are real: the sandbox's switches, a sandbox child process stopped with SIGSTOP and resumed with
// SIGCONT, and one killed (connection refused) and started again on the same port.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getRequestListener } from '@hono/node-server';
import { createApp } from '../src/app.js';
import { addApiUser } from '../src/auth/admin.js';
import { parseConfig } from '../src/config/load.js';
import { systemClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { buildServices, type Services } from '../src/services.js';
import { type CliProcess, spawnCli } from './cli-helpers.js';
import { LogSink } from './log-sink.js';
import type { ErrorBody } from './relation-helpers.js';
import { tempDir } from './temp-dir.js';
import { DEFAULT_PROFILE, startUserProxy, type UserProxy } from './user-helpers.js';

const TOTAL_MS = 800;
const READINESS_MS = 400;
/** How long any answer may take while a fault lasts: the timeout plus a wide margin for a busy machine. */
const BOUND_MS = TOTAL_MS + 10_000;

interface Target {
  url: string;
  authorization: string;
}

async function get(target: Target, p: string): Promise<{ status: number; body: ErrorBody }> {
  const response = await fetch(`${target.url}${p}`, {
    headers: { authorization: target.authorization },
    signal: AbortSignal.timeout(BOUND_MS),
  });
  return { status: response.status, body: (await response.json()) as ErrorBody };
}

const USER = '/iserv/api/Service/Core/Entity/User/lena.mueller';

async function assertFault(target: Target, status: number, message: RegExp): Promise<void> {
  const answer = await get(target, USER);
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.equal(answer.body.code, status);
  assert.match(answer.body.message, message);
  const ready = await get(target, '/readyz');
  assert.equal(ready.status, 503, JSON.stringify(ready.body));
}

async function assertRecovered(target: Target): Promise<void> {
  const answer = await get(target, USER);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const ready = await get(target, '/readyz');
  assert.equal(ready.status, 200, JSON.stringify(ready.body));
}

const tight = {
  timeouts: { connectMs: 500, totalMs: TOTAL_MS },
  retries: { max: 0 },
  config: { server: { port: 0, readinessTimeoutMs: READINESS_MS } },
};

describe('faults: the sandbox fault switches', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy(tight);
  });
  after(async () => {
    await proxy.close();
  });
  const target = (): Target => ({ url: proxy.url, authorization: proxy.authorization });

  it('latency past the timeout: 504, not ready; then 200', async () => {
    await assertRecovered(target());
    proxy.sandbox.faults.set({ latencyMs: TOTAL_MS * 3 });
    try {
      proxy.logSink.text = '';
      await assertFault(target(), 504, /^The successor did not answer in time; request id /);
      // The log says what timed out once: each cause's sentence appears once in the message.
      const failed = proxy.logSink.lines().find((entry) => entry.msg === 'request failed');
      const message = String((failed?.err as { message?: unknown } | undefined)?.message);
      assert.match(
        message,
        /^The successor did not answer in time: the successor did not answer GET \S*\/users\//,
      );
      assert.equal(message.split('successor.timeouts.totalMs').length, 2, message);
    } finally {
      proxy.sandbox.faults.reset();
    }
    await assertRecovered(target());
  });

  it('error rate 1: 502, not ready; then 200', async () => {
    proxy.sandbox.faults.set({ errorRate: 1, errorStatus: 503 });
    try {
      await assertFault(target(), 502, /^The successor is unreachable or failing; request id /);
    } finally {
      proxy.sandbox.faults.reset();
    }
    await assertRecovered(target());
  });

  it('token endpoint down with a cached token: requests and /readyz carry on with it', async () => {
    await assertRecovered(target());
    proxy.sandbox.faults.set({ tokenEndpointDown: true });
    try {
      await assertRecovered(target());
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('a client that gives up before its answer: the write goes through, and its log line says the client was gone', async () => {
    await assertRecovered(target());
    proxy.sandbox.faults.set({ latencyMs: TOTAL_MS / 2 });
    try {
      // The client gives up once the successor has the write (and sits on it for the latency).
      proxy.resetCounts();
      const giveUp = new AbortController();
      const asked = fetch(`${proxy.core}/Entity/Group`, {
        method: 'POST',
        headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Chor Spaet' }),
        signal: giveUp.signal,
      }).then(
        () => 'answered',
        (error: Error) => error.name,
      );
      for (let waited = 0; !(proxy.apiCalls()['POST /groups'] ?? 0) && waited < BOUND_MS; waited += 5)
        await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(proxy.apiCalls()['POST /groups'], 1, 'the successor has the write');
      giveUp.abort();
      assert.equal(await asked, 'AbortError');
      const line = async () =>
        proxy.logSink
          .lines()
          .find((entry) => entry.msg === 'request completed' && entry.operation === 'group.create');
      for (let waited = 0; !(await line()) && waited < BOUND_MS; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const written = await line();
      assert.equal(written?.status, 201, JSON.stringify(written));
      assert.equal(written?.clientGone, true);
      assert.ok(proxy.sandbox.data.groupByAccount('chor.spaet'), 'the write went through');
      proxy.sandbox.faults.reset();
      await assertRecovered(target());
      const answered = proxy.logSink
        .lines()
        .filter((entry) => entry.msg === 'request completed' && entry.operation === 'user.get');
      assert.ok(answered.length > 0 && answered.every((entry) => !('clientGone' in entry)));
    } finally {
      proxy.sandbox.faults.reset();
    }
  });
});

describe('faults: token endpoint down without a cached token', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy({ ...tight, sandbox: { faults: { tokenEndpointDown: true } } });
  });
  after(async () => {
    await proxy.close();
  });

  it('503, not ready; then 200', async () => {
    const target = { url: proxy.url, authorization: proxy.authorization };
    await assertFault(target, 503, /^No access token could be obtained from the successor; request id /);
    proxy.sandbox.faults.reset();
    await assertRecovered(target);
  });
});

describe('faults: a sandbox process stopped, resumed, killed and started again', () => {
  let sandbox: CliProcess;
  let port = 0;
  let services: Services;
  let server: Server;
  let target: Target;

  async function startSandboxProcess(): Promise<{
    issuer: string;
    apiBaseUrl: string;
    clients: { readWrite: { clientId: string; clientSecret: string } };
  }> {
    sandbox = spawnCli(['sandbox', '--port', String(port), '--json']);
    const [line] = await sandbox.waitFor('stdout', /^\{.*\}$/m, 60_000);
    return JSON.parse(line);
  }

  before(async () => {
    const summary = await startSandboxProcess();
    port = Number(new URL(summary.apiBaseUrl).port);
    const dir = tempDir('faults');
    const config = parseConfig(
      {
        server: { port: 0, readinessTimeoutMs: READINESS_MS },
        successor: {
          baseUrl: summary.apiBaseUrl,
          auth: {
            type: 'oauth2',
            issuer: summary.issuer,
            clientId: summary.clients.readWrite.clientId,
            clientSecret: summary.clients.readWrite.clientSecret,
          },
          timeouts: { connectMs: 500, totalMs: TOTAL_MS },
          retries: { max: 0 },
        },
        store: { type: 'sqlite', path: path.join(dir, 'store.db') },
        mappings: { dir: path.dirname(DEFAULT_PROFILE), profile: path.basename(DEFAULT_PROFILE) },
      },
      { label: 'test', env: {}, baseDir: dir },
    );
    services = await buildServices(config, {
      logger: createLogger({ level: 'warn', destination: new LogSink() }),
      clock: systemClock,
    });
    server = createServer(getRequestListener(createApp(services).fetch));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { password } = await addApiUser(services.store, systemClock, 'faults', ['127.0.0.0/8']);
    target = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      authorization: `Basic ${Buffer.from(`faults:${password}`).toString('base64')}`,
    };
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await services?.close();
    sandbox?.child.kill('SIGCONT');
    await sandbox?.stop();
  });

  it('SIGSTOP: 504, not ready; SIGCONT: the next request succeeds', async () => {
    await assertRecovered(target);
    sandbox.child.kill('SIGSTOP');
    try {
      await assertFault(target, 504, /^The successor did not answer in time; request id /);
    } finally {
      sandbox.child.kill('SIGCONT');
    }
    await assertRecovered(target);
  });

  it('killed (connection refused): 502, not ready; started again on the same port: the next request succeeds', async () => {
    await sandbox.stop('SIGKILL');
    await assertFault(target, 502, /^The successor is unreachable or failing; request id /);
    await startSandboxProcess();
    await assertRecovered(target);
  });
});
