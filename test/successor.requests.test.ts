// The successor client's requests against the sandbox IDM: timeouts, retries, error mapping and
// collections in every format the IDM API may answer with.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { uuidToBase58 } from '../src/lib/uuid.js';
import {
  READ_SCOPE,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
  WRITE_SCOPE,
} from '../src/sandbox/index.js';
import {
  createSuccessorClient,
  type SuccessorClient,
  type SuccessorClientOptions,
} from '../src/successor/client.js';
import { UpstreamError } from '../src/successor/errors.js';
import { iriToUuid } from '../src/successor/ids.js';

const USERS = 'GET /users';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function sandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sb = await startSandbox({ port: 0, ...options });
  cleanups.push(() => sb.close());
  return sb;
}

function client(sb: RunningSandbox, options: Partial<SuccessorClientOptions> = {}): SuccessorClient {
  const created = createSuccessorClient({
    baseUrl: sb.apiBaseUrl,
    auth: {
      type: 'oauth2',
      issuer: sb.issuer,
      clientId: sb.clients.readWrite.clientId,
      clientSecret: sb.clients.readWrite.clientSecret,
      scopes: { read: [READ_SCOPE], write: [READ_SCOPE, WRITE_SCOPE] },
    },
    retries: { max: 2, baseDelayMs: 5 },
    ...options,
  });
  cleanups.push(() => created.close());
  return created;
}

function upstream(code: UpstreamError['code'], check?: (error: UpstreamError) => void) {
  return (error: unknown) => {
    assert.ok(error instanceof UpstreamError, `expected an UpstreamError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    check?.(error);
    return true;
  };
}

/** 95 users and nothing else, so every page count below is exact. */
const FIXTURE_95 = {
  users: Array.from({ length: 95 }, (_, i) => ({
    user: `pupil.${String(i).padStart(3, '0')}`,
    firstname: 'Pupil',
    lastname: `Number ${i}`,
  })),
};

describe('timeouts and retries', () => {
  test('injected latency beyond the total timeout is a timeout (and not retried)', async () => {
    const sb = await sandbox();
    const c = client(sb, { timeouts: { totalMs: 150 } });
    await c.request({ method: 'GET', path: '/users', query: { itemsPerPage: '1' } });
    sb.counters.reset();
    sb.faults.set({ latencyMs: 1_000 });
    const started = performance.now();
    await assert.rejects(
      c.request({ method: 'GET', path: '/users' }),
      upstream('timeout', (error) => {
        assert.equal(error.source, 'api');
        assert.match(error.message, /150 ms/);
      }),
    );
    assert.ok(performance.now() - started < 900, 'gave up at the timeout, not after the latency');
    assert.equal(sb.counters.get(USERS), 1);
  });

  test('a GET that meets one 503 is retried and succeeds', async () => {
    const sb = await sandbox({ faults: { rules: [{ match: 'GET /users', times: 1, status: 503 }] } });
    const c = client(sb);
    const response = await c.request({ method: 'GET', path: '/users', query: { itemsPerPage: '1' } });
    assert.equal(response.status, 200);
    assert.equal(sb.counters.get(USERS), 2);
  });

  test('a GET whose connection is dropped once is retried and succeeds', async () => {
    const sb = await sandbox({ faults: { rules: [{ match: 'GET /users', times: 1, status: 0 }] } });
    const c = client(sb);
    assert.equal(
      (await c.request({ method: 'GET', path: '/users', query: { itemsPerPage: '1' } })).status,
      200,
    );
    assert.equal(sb.counters.get(USERS), 2);
  });

  test('a GET failing with 502 every time gives up after retries.max retries: unavailable', async () => {
    const sb = await sandbox({ faults: { rules: [{ match: 'GET /users', status: 502 }] } });
    const c = client(sb, { retries: { max: 3, baseDelayMs: 1 } });
    await assert.rejects(c.request({ method: 'GET', path: '/users' }), upstream('unavailable'));
    assert.equal(sb.counters.get(USERS), 4);
  });

  test('a GET is not retried on a 500 (only network errors and 502/503/504)', async () => {
    const sb = await sandbox({ faults: { rules: [{ match: 'GET /users', times: 1, status: 500 }] } });
    const c = client(sb);
    await assert.rejects(c.request({ method: 'GET', path: '/users' }), upstream('unavailable'));
    assert.equal(sb.counters.get(USERS), 1);
  });

  test('a POST is never retried: one 503 is unavailable, one dropped connection too', async () => {
    const sb = await sandbox({ faults: { rules: [{ match: 'POST /groups', times: 1, status: 503 }] } });
    const c = client(sb);
    await assert.rejects(
      c.request({ method: 'POST', path: '/groups', body: { name: 'Never twice' } }),
      upstream('unavailable', (error) => assert.equal(error.details.status, 503)),
    );
    assert.equal(sb.counters.get('POST /groups'), 1);
    sb.faults.set({ rules: [{ match: 'POST /groups', times: 1, status: 0 }] });
    await assert.rejects(
      c.request({ method: 'POST', path: '/groups', body: { name: 'Never twice' } }),
      upstream('unavailable'),
    );
    assert.equal(sb.counters.get('POST /groups'), 2);
    const groups = await c.readCollection('/groups', { query: { name: 'Never twice' } });
    assert.equal(groups.length, 0, 'nothing was created behind our back');
  });

  test('PATCH and DELETE are not retried either', async () => {
    const sb = await sandbox({
      faults: {
        rules: [
          { match: 'PATCH /groups/{id}', times: 1, status: 503 },
          { match: 'DELETE /groups/{id}', times: 1, status: 504 },
        ],
      },
    });
    const c = client(sb);
    const created = await c.request<{ hexUuid: string }>({
      method: 'POST',
      path: '/groups',
      body: { name: 'Patch me' },
    });
    const path = `/groups/${created.body.hexUuid}`;
    await assert.rejects(
      c.request({
        method: 'PATCH',
        path,
        body: { name: 'Patched' },
        contentType: 'application/merge-patch+json',
      }),
      upstream('unavailable'),
    );
    await assert.rejects(c.request({ method: 'DELETE', path }), upstream('unavailable'));
    assert.equal(sb.counters.get('PATCH /groups/{id}'), 1);
    assert.equal(sb.counters.get('DELETE /groups/{id}'), 1);
  });
});

describe('responses and errors', () => {
  test('a merge patch is sent with its content type; ids may be base58 in paths', async () => {
    const sb = await sandbox();
    const c = client(sb);
    const created = await c.request<{ hexUuid: string; '@id'?: string }>({
      method: 'POST',
      path: '/groups',
      body: { name: 'Original name' },
    });
    assert.equal(created.status, 201);
    const id = created.body.hexUuid;
    const patched = await c.request<{ name: string }>({
      method: 'PATCH',
      path: `/groups/${uuidToBase58(id)}`,
      body: { name: 'Patched name' },
      contentType: 'application/merge-patch+json',
    });
    assert.equal(patched.body.name, 'Patched name');
    const read = await c.request<{ name: string; '@id': string }>({
      method: 'GET',
      path: `${new URL(sb.apiBaseUrl).pathname}/groups/${id}`,
    });
    assert.equal(read.body.name, 'Patched name');
    assert.equal(iriToUuid(read.body['@id']), id);
  });

  test('a call after the client closed (the shutdown) says so, and that it was not sent, not "check successor.baseUrl"', async () => {
    const sb = await sandbox();
    const c = client(sb);
    await c.request({ method: 'GET', path: '/groups' });
    await c.close();
    for (const method of ['GET', 'POST'] as const) {
      await assert.rejects(
        c.request({ method, path: '/groups', ...(method === 'POST' ? { body: { name: 'Late' } } : {}) }),
        upstream('unavailable', (error) => {
          assert.match(
            error.message,
            new RegExp(
              `^the proxy is shutting down: its successor client is closed, ${method} /\\S+/groups was not sent$`,
            ),
          );
          assert.equal(error.details.sent, false);
        }),
      );
    }
    assert.equal(sb.data.groupByAccount('late'), undefined);
  });

  test('404 is not_found and keeps the successor detail', async () => {
    const sb = await sandbox();
    const c = client(sb);
    await assert.rejects(
      c.request({ method: 'GET', path: '/users/00000000-0000-4000-8000-000000000000' }),
      upstream('not_found', (error) => {
        assert.equal(error.details.status, 404);
        assert.equal(error.details.path, '/iserv/idm/api/v1/users/00000000-0000-4000-8000-000000000000');
        // The sandbox's problem detail, word for word, after what the proxy says itself.
        assert.equal(
          error.message,
          'the successor has no /iserv/idm/api/v1/users/00000000-0000-4000-8000-000000000000 (GET /iserv/idm/api/v1/users/00000000-0000-4000-8000-000000000000 → 404): User "00000000-0000-4000-8000-000000000000" not found.',
        );
      }),
    );
  });

  test('422 is validation with the successor violations', async () => {
    const sb = await sandbox();
    const c = client(sb);
    await assert.rejects(
      c.request({
        method: 'POST',
        path: '/users',
        body: { user: 'pupil.x', firstname: 'A', lastname: 'B', status: 'bogus' },
      }),
      upstream('validation', (error) => {
        assert.equal(error.details.status, 422);
        const violation = error.details.violations?.find((v) => v.path === 'status');
        assert.ok(violation, JSON.stringify(error.details.violations));
        assert.match(violation.message, /not a valid choice/);
        assert.match(error.message, /status: The value you selected is not a valid choice/);
      }),
    );
  });

  test('a protected entity refusal is forbidden without a scope (the legacy 403, not a 502)', async () => {
    const sb = await sandbox();
    const c = client(sb);
    const [admin] = await c.readCollection('/users', { query: { user: 'admin' } });
    assert.ok(admin);
    await assert.rejects(
      c.request({ method: 'DELETE', path: `/users/${String(admin.hexUuid)}` }),
      upstream('forbidden', (error) => assert.equal(error.details.scope, undefined)),
    );
  });
});

describe('collections with 95 items', () => {
  const formats: { name: string; options: SandboxOptions; accept?: string }[] = [
    { name: 'Hydra with the hydra: prefix', options: { hydraPrefix: true } },
    { name: 'Hydra without the prefix', options: { hydraPrefix: false } },
    { name: 'plain JSON arrays', options: {}, accept: 'application/json' },
  ];
  for (const format of formats) {
    test(`${format.name}: all 95 unique items in the expected number of page requests`, async () => {
      const sb = await sandbox({ seed: false, fixture: FIXTURE_95, ...format.options });
      const c = client(sb, {
        pageSize: 30,
        ...(format.accept === undefined ? {} : { accept: format.accept }),
      });
      const items = await c.readCollection('/users');
      assert.equal(items.length, 95);
      assert.equal(new Set(items.map((item) => item.hexUuid)).size, 95);
      assert.deepEqual(
        new Set(items.map((item) => item.user)),
        new Set(FIXTURE_95.users.map((user) => user.user)),
      );
      // Hydra: the first page announces 95, pages 2-4 follow concurrently. Plain arrays: 30, 30,
      // 30, then 5 (shorter than the first page) ends it.
      assert.equal(sb.counters.get(USERS), 4);

      sb.counters.reset();
      const big = client(sb, {
        pageSize: 100,
        ...(format.accept === undefined ? {} : { accept: format.accept }),
      });
      assert.equal((await big.readCollection('/users')).length, 95);
      // One page holds everything; a plain array needs an empty second page to know it.
      assert.equal(sb.counters.get(USERS), format.accept === undefined ? 1 : 2);
    });
  }

  test('a page size above the server maximum is clamped by the server and still reads everything', async () => {
    const sb = await sandbox({ seed: false, fixture: FIXTURE_95, maxPageSize: 20 });
    const c = client(sb, { pageSize: 50 });
    const items = await c.readCollection('/users');
    assert.equal(new Set(items.map((item) => item.hexUuid)).size, 95);
    assert.equal(sb.counters.get(USERS), 5);
  });

  test('query filters are passed on to every page', async () => {
    const sb = await sandbox({ seed: false, fixture: FIXTURE_95 });
    const c = client(sb, { pageSize: 10 });
    const items = await c.readCollection('/users', { query: { 'user[icontains]': 'pupil.01' } });
    assert.deepEqual(
      items.map((item) => item.user).sort(),
      Array.from({ length: 10 }, (_, i) => `pupil.01${i}`),
    );
  });
});
