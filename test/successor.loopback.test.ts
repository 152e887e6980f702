// Successor-client behaviour the sandbox cannot be made to show (foreign-origin links, servers
// that ignore `page`, broken bodies, dropped connections), against small loopback servers.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { currentCallStats, withCallStats } from '../src/successor/call-stats.js';
import { createSuccessorClient, type SuccessorClientOptions } from '../src/successor/client.js';
import { UpstreamError } from '../src/successor/errors.js';
import { fakeItems, type LoopbackServer, sendJson, startLoopback } from './successor-helpers.js';

const API = '/iserv/idm/api/v1';
const servers: LoopbackServer[] = [];
after(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

async function loopback(handler: Parameters<typeof startLoopback>[0]): Promise<LoopbackServer> {
  const server = await startLoopback(handler);
  servers.push(server);
  return server;
}

function clientFor(server: LoopbackServer, extra: Partial<SuccessorClientOptions> = {}) {
  return createSuccessorClient({
    baseUrl: `${server.url}${API}`,
    auth: { type: 'apiKey', key: 'loopback-key' },
    retries: { max: 2, baseDelayMs: 1 },
    ...extra,
  });
}

function isUpstream(code: UpstreamError['code']) {
  return (error: unknown) => {
    assert.ok(error instanceof UpstreamError, `expected an UpstreamError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

describe('collections against loopback servers', () => {
  test('a next link to a foreign origin is refused and nothing is fetched there', async () => {
    const foreign = await loopback((_req, res) => sendJson(res, 200, { 'hydra:member': fakeItems(1, 999) }));
    const server = await loopback((_req, res) =>
      sendJson(
        res,
        200,
        {
          'hydra:member': fakeItems(2),
          'hydra:view': { 'hydra:next': `${foreign.url}${API}/users?page=2` },
        },
        'application/ld+json',
      ),
    );
    const client = clientFor(server);
    await assert.rejects(client.readCollection('/users'), (error: unknown) => {
      isUpstream('bad_response')(error);
      assert.match((error as Error).message, /another origin/);
      return true;
    });
    assert.equal(foreign.requests.length, 0);
    assert.equal(server.requests.length, 1);
    await client.close();
  });

  test('same-origin next links (relative IRIs, no total) are followed in order', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      const body: Record<string, unknown> = { member: fakeItems(10, (page - 1) * 10) };
      if (page < 3) body.view = { next: `${API}/users?itemsPerPage=10&page=${page + 1}` };
      sendJson(res, 200, body, 'application/ld+json');
    });
    const client = clientFor(server, { pageSize: 10 });
    const items = await client.readCollection('/users');
    assert.equal(items.length, 30);
    assert.equal(new Set(items.map((item) => item['@id'])).size, 30);
    assert.deepEqual(
      server.requests.map((r) => r.url.searchParams.get('page')),
      [null, '2', '3'],
    );
    await client.close();
  });

  test('a next link back to a page already read stops with bad_response', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, {
        'hydra:member': fakeItems(5, page * 5),
        'hydra:view': { 'hydra:next': `${API}/users?itemsPerPage=5&page=${page === 1 ? 2 : 1}` },
      });
    });
    const client = clientFor(server, { pageSize: 5 });
    await assert.rejects(
      client.readCollection('/users', { query: { itemsPerPage: '5', page: '1' } }),
      isUpstream('bad_response'),
    );
    assert.equal(server.requests.length, 2);
    await client.close();
  });

  test('a plain-array server that ignores page fails with bad_response instead of looping', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, fakeItems(10)));
    const client = clientFor(server, { pageSize: 10 });
    await assert.rejects(client.readCollection('/users'), (error: unknown) => {
      isUpstream('bad_response')(error);
      assert.match((error as Error).message, /ignore the page parameter/);
      return true;
    });
    assert.equal(server.requests.length, 2);
    await client.close();
  });

  test('a Hydra server that announces a total but ignores page fails with bad_response', async () => {
    const server = await loopback((_req, res) =>
      sendJson(res, 200, { 'hydra:member': fakeItems(10), 'hydra:totalItems': 35 }),
    );
    const client = clientFor(server, { pageSize: 10 });
    await assert.rejects(client.readCollection('/users'), isUpstream('bad_response'));
    assert.ok(server.requests.length <= 4);
    await client.close();
  });

  test('more pages than maxPages fail with bad_response', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, fakeItems(2, page * 2));
    });
    const client = clientFor(server, { pageSize: 2, maxPages: 5 });
    await assert.rejects(client.readCollection('/users'), isUpstream('bad_response'));
    assert.equal(server.requests.length, 5);
    await client.close();
  });

  test('remaining pages are fetched concurrently, never more than pageConcurrency at once', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const server = await loopback(async (req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 30));
      inFlight--;
      const page = Number(req.url.searchParams.get('page') ?? '1');
      const count = page < 10 ? 10 : 5;
      sendJson(res, 200, { 'hydra:member': fakeItems(count, (page - 1) * 10), 'hydra:totalItems': 95 });
    });
    const client = clientFor(server, { pageSize: 10, pageConcurrency: 3 });
    const items = await client.readCollection('/users');
    assert.equal(items.length, 95);
    assert.equal(server.requests.length, 10);
    assert.equal(maxInFlight, 3);
    await client.close();
  });
});

describe('requests against loopback servers', () => {
  test('query arrays become repeated keys; a key ending in [] keeps its brackets', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, {}));
    const client = clientFor(server);
    await client.request({
      method: 'GET',
      path: `${API}/users`,
      query: { uuid: ['a', 'b'], 'id[]': ['c', 'd'], _attributes: 'user,groups.hexUuid', skip: undefined },
    });
    const url = server.requests[0]?.url;
    assert.ok(url);
    assert.equal(url.pathname, `${API}/users`);
    assert.deepEqual(url.searchParams.getAll('uuid'), ['a', 'b']);
    assert.deepEqual(url.searchParams.getAll('id[]'), ['c', 'd']);
    assert.equal(url.searchParams.get('_attributes'), 'user,groups.hexUuid');
    assert.equal(url.searchParams.has('skip'), false);
    assert.equal(server.requests[0]?.headers['x-iserv-authentication'], 'loopback-key');
    assert.equal(server.requests[0]?.headers.accept, 'application/ld+json, application/json');
    await client.close();
  });

  test('paths outside the API base and foreign absolute URLs are refused before sending', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, {}));
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/../../../etc' }), TypeError);
    await assert.rejects(
      client.request({ method: 'GET', path: 'http://203.0.113.9/iserv/idm/api/v1/users' }),
      isUpstream('bad_response'),
    );
    assert.equal(server.requests.length, 0);
    await client.close();
  });

  test('a 2xx that is not JSON, or a redirect, is bad_response', async () => {
    const server = await loopback((req, res) => {
      if (req.url.pathname.endsWith('/html')) {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>login</html>');
      } else if (req.url.pathname.endsWith('/broken')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"hydra:member": [');
      } else {
        res.writeHead(302, { location: 'https://elsewhere.example/' });
        res.end();
      }
    });
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/html' }), isUpstream('bad_response'));
    await assert.rejects(client.request({ method: 'GET', path: '/broken' }), isUpstream('bad_response'));
    await assert.rejects(client.request({ method: 'GET', path: '/moved' }), isUpstream('bad_response'));
    await client.close();
  });

  test('dropped connections: GET is retried then unavailable, POST is sent once', async () => {
    const server = await loopback((_req, res) => {
      res.socket?.destroy();
    });
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/users' }), isUpstream('unavailable'));
    assert.equal(server.requests.length, 3);
    await assert.rejects(
      client.request({ method: 'POST', path: '/users', body: { user: 'x' } }),
      isUpstream('unavailable'),
    );
    assert.equal(server.requests.length, 4);
    await client.close();
  });

  test('a server that stalls after the headers hits the total timeout', async () => {
    const server = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
    });
    const client = clientFor(server, { timeouts: { totalMs: 200 }, retries: { max: 0 } });
    await assert.rejects(client.request({ method: 'GET', path: '/users' }), isUpstream('timeout'));
    await client.close();
  });

  test("the caller's abort signal is honoured and reported as its own reason", async () => {
    const server = await loopback(() => {});
    const client = clientFor(server);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await assert.rejects(
      client.request({ method: 'GET', path: '/users', signal: controller.signal }),
      /caller gave up/,
    );
    await client.close();
  });

  test('403 with a problem body and no Bearer challenge is a refusal of the entity, not a scope problem', async () => {
    const server = await loopback((_req, res) =>
      sendJson(
        res,
        403,
        { title: 'Forbidden', detail: 'The role ROLE_ADMIN is protected.' },
        'application/problem+json',
      ),
    );
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'DELETE', path: '/roles/x' }), (error: unknown) => {
      isUpstream('forbidden')(error);
      const upstream = error as UpstreamError;
      assert.equal(upstream.details.scope, undefined);
      assert.match(upstream.message, /ROLE_ADMIN is protected/);
      return true;
    });
    await client.close();
  });

  test('call statistics count the successor calls made inside withCallStats', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, []));
    const client = clientFor(server);
    const stats = await withCallStats(async () => {
      await client.request({ method: 'GET', path: '/users' });
      await client.readCollection('/groups');
      return currentCallStats();
    });
    assert.equal(stats?.calls, 2);
    assert.equal(stats?.tokenCalls, 0);
    assert.ok((stats?.durationMs ?? 0) > 0);
    assert.equal(currentCallStats(), undefined);
    await client.close();
  });
});

describe('options', () => {
  test('invalid options are rejected naming the option', () => {
    assert.throws(
      () => createSuccessorClient({ baseUrl: 'not a url', auth: { type: 'apiKey', key: 'k' } }),
      /option baseUrl/,
    );
    assert.throws(
      () =>
        createSuccessorClient({
          baseUrl: 'http://127.0.0.1:1/api',
          auth: { type: 'apiKey', key: 'k' },
          pageSize: 0,
        }),
      /option pageSize/,
    );
    assert.throws(
      () =>
        createSuccessorClient({
          baseUrl: 'http://127.0.0.1:1/api',
          auth: {
            type: 'oauth2',
            issuer: 'http://127.0.0.1:1/auth',
            clientId: 'c',
            clientSecret: 's',
            scopes: { read: ['a b'], write: [] },
          },
        }),
      /option auth\.scopes\.read/,
    );
  });
});
