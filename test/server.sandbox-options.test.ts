// The sandbox block of the configuration reaches the embedded sandbox IDM that startServer starts:
// Hydra prefix, page sizes, retention and fault switches, observed on the running sandbox; and the
// successor block's tuning reaches the proxy's connection to it.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../src/config/load.js';
import { createLogger, silentLogger } from '../src/lib/logger.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { type RunningServer, startServer } from '../src/server.js';
import { LogSink } from './log-sink.js';
import { tempDir } from './temp-dir.js';

const LATENCY_MS = 150;

function config(dir: string, sandbox: Record<string, unknown>, more: Record<string, unknown> = {}) {
  return parseConfig(
    {
      sandbox: { enabled: true, ...sandbox },
      server: { port: 0, shutdownTimeoutMs: 2000 },
      store: { type: 'sqlite', path: path.join(dir, 'store.db') },
      ...more,
    },
    { label: 'test', env: {}, baseDir: dir },
  );
}

async function api(sb: RunningSandbox, method: string, route: string) {
  const response = await fetch(`${sb.apiBaseUrl}${route}`, {
    method,
    headers: { 'x-iserv-authentication': sb.apiKey, accept: 'application/ld+json' },
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>),
  };
}

describe('startServer passes the sandbox settings on', () => {
  let dir: string;
  let server: RunningServer;
  let sb: RunningSandbox;
  before(async () => {
    dir = tempDir('sandbox-options');
    server = await startServer({
      config: config(dir, {
        hydraPrefix: false,
        pageSize: 7,
        maxPageSize: 9,
        retentionSeconds: 0,
        faults: { latencyMs: LATENCY_MS, errorStatus: 502 },
      }),
      logger: silentLogger(),
    });
    assert.ok(server.sandbox);
    sb = server.sandbox;
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts with the configured fault switches, and the latency is really added', async () => {
    assert.deepEqual(sb.faults.get(), {
      latencyMs: LATENCY_MS,
      errorRate: 0,
      errorStatus: 502,
      tokenEndpointDown: false,
      rules: [],
    });
    const started = performance.now();
    const slow = await api(sb, 'GET', '/roles');
    const slowMs = performance.now() - started;
    assert.equal(slow.status, 200);
    assert.ok(slowMs >= LATENCY_MS - 5, `a request took ${slowMs.toFixed(0)} ms, expected ≥ ${LATENCY_MS}`);
    // The proxy's own successor calls meet it too (token and API request).
    const proxyStarted = performance.now();
    const ready = await fetch(`${server.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.ok(performance.now() - proxyStarted >= LATENCY_MS - 5);
  });

  it('answers Hydra collections without the hydra: prefix, paged by the configured sizes', async () => {
    const page = await api(sb, 'GET', '/users');
    assert.equal(page.status, 200);
    const body = page.body ?? {};
    assert.equal(body['@type'], 'Collection');
    assert.equal(body['hydra:member'], undefined);
    assert.equal(body['hydra:totalItems'], undefined);
    // 25 demo users less ben.krause, seeded soft-deleted and purged at once with retention 0.
    assert.equal(body.totalItems, 24);
    assert.ok(Array.isArray(body.member));
    assert.equal(body.member.length, 7, 'sandbox.pageSize');
    const view = body.view as Record<string, unknown>;
    assert.equal(typeof view.next, 'string');
    const big = await api(sb, 'GET', '/users?itemsPerPage=100');
    const members = big.body?.member;
    assert.ok(Array.isArray(members));
    assert.equal(members.length, 9, 'sandbox.maxPageSize clamps itemsPerPage');
  });

  it('purges soft-deleted users after the configured retention (0: at the next request)', async () => {
    const user = sb.data.userByAccount('lena.mueller');
    assert.ok(user);
    assert.equal((await api(sb, 'DELETE', `/users/${user.id}`)).status, 204);
    // With the default retention of 30 days the user would still be readable, marked deleted.
    assert.equal((await api(sb, 'GET', `/users/${user.id}`)).status, 404);
    assert.equal(sb.data.userByAccount('lena.mueller'), undefined);
  });
});

describe('startServer in sandbox mode applies a successor block of tuning alone', () => {
  let dir: string;
  let server: RunningServer;
  before(async () => {
    dir = tempDir('sandbox-tuning');
    // No baseUrl or auth: the sandbox is the successor. Such a block was refused, so the tuning
    // docs/configuration.md promises sandbox mode could not be given.
    server = await startServer({
      config: config(dir, {}, { successor: { pageSize: 5, pageConcurrency: 1 } }),
      logger: silentLogger(),
    });
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads collections from the sandbox with the configured page size', async () => {
    const sb = server.sandbox;
    assert.ok(sb && server.demoUser?.password);
    assert.equal(server.services.config.successor.pageSize, 5);
    assert.equal(server.services.config.successor.pageConcurrency, 1);
    const before = sb.counters.get('GET /users');
    const credentials = Buffer.from(`${server.demoUser.name}:${server.demoUser.password}`).toString('base64');
    const response = await fetch(`${server.url}/iserv/api/Service/Core/Entity/User`, {
      headers: { authorization: `Basic ${credentials}` },
    });
    assert.equal(response.status, 200);
    const users = (await response.json()) as unknown[];
    assert.ok(users.length > 10, `${users.length} users`);
    // Pages of 5 (the default, 100, reads them in one).
    assert.equal(sb.counters.get('GET /users') - before, Math.ceil(users.length / 5));
  });
});

describe('sandbox settings in the configuration file', () => {
  it('default to the sandbox defaults', () => {
    const parsed = config(tmpdir(), {});
    assert.equal(parsed.sandbox.hydraPrefix, true);
    assert.equal(parsed.sandbox.pageSize, 30);
    assert.equal(parsed.sandbox.maxPageSize, 500);
    assert.equal(parsed.sandbox.retentionSeconds, 30 * 24 * 3600);
    assert.deepEqual(parsed.sandbox.faults, {
      latencyMs: 0,
      errorRate: 0,
      errorStatus: 503,
      tokenEndpointDown: false,
    });
  });

  it('are validated, naming the key', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ hydraPrefix: 'no' }, /sandbox\.hydraPrefix:/],
      [{ pageSize: 0 }, /sandbox\.pageSize:/],
      [{ pageSize: 40, maxPageSize: 20 }, /sandbox\.pageSize: must not be larger than sandbox\.maxPageSize/],
      [{ retentionSeconds: -1 }, /sandbox\.retentionSeconds:/],
      [{ faults: { latencyMs: -5 } }, /sandbox\.faults\.latencyMs:/],
      [{ faults: { errorRate: 1.5 } }, /sandbox\.faults\.errorRate:/],
      [{ faults: { errorStatus: 200 } }, /sandbox\.faults\.errorStatus:/],
      [{ faults: { tokenEndpointDown: 1 } }, /sandbox\.faults\.tokenEndpointDown:/],
      [{ faults: { rules: [] } }, /sandbox\.faults: .*rules/],
    ];
    for (const [sandbox, message] of cases) {
      assert.throws(
        () => config(tmpdir(), sandbox),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
        JSON.stringify(sandbox),
      );
    }
  });
});

describe("the embedded sandbox's log lines", () => {
  it('name their component once: sandbox, and the part of it that wrote them', async () => {
    // Every debug line of the sandbox's API had "component" twice ("sandbox", then "sandbox-api").
    const dir = tempDir('sandbox-log');
    const sink = new LogSink();
    const server = await startServer({
      config: config(dir, {}, { logging: { level: 'debug' } }),
      logger: createLogger({ level: 'debug', destination: sink }),
    });
    try {
      assert.ok(server.sandbox);
      assert.equal((await api(server.sandbox, 'GET', '/users?user=admin')).status, 200);
    } finally {
      await server.close();
    }
    const lines = sink.text.split('\n').filter((line) => /"(component|sandbox)":"/.test(line));
    assert.ok(
      lines.some((line) => line.includes('"sandbox":"api"')),
      'an API line',
    );
    for (const line of lines) assert.equal(line.split('"component":').length, 2, line);
  });
});
