import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { RunningSandbox } from '../src/sandbox/index.js';
import {
  accessToken,
  assertProblem,
  keyClient,
  obj,
  sandbox,
  tokenResponse,
  userId,
} from './sandbox-helpers.js';

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await run();
  return { ms: performance.now() - started, value };
}

describe('sandbox faults and counters', () => {
  let sb: RunningSandbox;
  before(async () => {
    sb = await sandbox();
  });
  after(() => sb.close());
  beforeEach(() => {
    sb.faults.reset();
    sb.counters.reset();
  });

  it('counts every request per route pattern, failures and the token endpoint included', async () => {
    const client = keyClient(sb);
    const id = userId(sb, 'admin');
    await client.get('/users');
    await client.get(`/users/${id}`);
    await client.get('/users/00000000-0000-4000-8000-000000000000');
    await client.post(`/groups/${id}/members`, { addedMembers: [] });
    await client.get('/users', { apiKey: 'wrong' });
    await client.get('/users', { method: 'PUT' });
    await client.get('/unknown');
    await tokenResponse(sb);
    await tokenResponse(sb, { clientSecret: 'wrong' });
    assert.deepEqual(sb.counters.snapshot(), {
      'GET (unknown route)': 1,
      'GET /users': 2,
      'GET /users/{id}': 2,
      'POST /groups/{id}/members': 1,
      'POST /token': 2,
      'PUT /users': 1,
    });
    assert.equal(sb.counters.total(), 9);
    assert.equal(sb.counters.get('GET /users/{id}'), 2);
    assert.equal(sb.counters.get('DELETE /users/{id}'), 0);
    sb.counters.reset();
    assert.equal(sb.counters.total(), 0);
  });

  it('adds latency to API and token requests', async () => {
    const client = keyClient(sb);
    sb.faults.set({ latencyMs: 300 });
    const api = await timed(() => client.get('/roles'));
    assert.equal(api.value.status, 200);
    assert.ok(api.ms >= 290, `API took ${api.ms} ms`);
    const token = await timed(() => tokenResponse(sb));
    assert.equal(token.value.status, 200);
    assert.ok(token.ms >= 290, `token took ${token.ms} ms`);
    sb.faults.set({ latencyMs: 0 });
    assert.ok((await timed(() => client.get('/roles'))).ms < 250);
  });

  it('fails requests by rule: skip, times, status, method and path wildcards', async () => {
    const client = keyClient(sb);
    const id = userId(sb, 'mia.fischer');
    const group = sb.data.groupByAccount('lehrer')?.id ?? '';
    sb.faults.set({
      rules: [{ match: 'DELETE /users/{id}/groups/{groupId}', skip: 1, times: 2, status: 502 }],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await client.delete(`/users/${id}/groups/${group}`)).status);
    assert.deepEqual(statuses, [204, 502, 502, 204]);
    assert.equal(sb.counters.get('DELETE /users/{id}/groups/{groupId}'), 4);

    sb.faults.set({ rules: [{ match: '* /roles', status: 500 }] });
    const failed = await client.get('/roles');
    assert.match(String(assertProblem(failed, 500).detail), /fault rule/);
    assert.equal((await client.get('/privileges')).status, 200);
    sb.faults.set({ rules: [{ match: 'GET *', times: 1, status: 429 }] });
    assert.equal((await client.get('/privileges')).status, 429);
    assert.equal((await client.get('/privileges')).status, 200);
  });

  it('drops the connection for a status 0 rule (a network error)', async () => {
    sb.faults.set({ rules: [{ match: 'GET /group_flags', times: 1, status: 0 }] });
    await assert.rejects(
      fetch(`${sb.apiBaseUrl}/group_flags`, { headers: { 'x-iserv-authentication': sb.apiKey } }),
    );
    assert.equal((await keyClient(sb).get('/group_flags')).status, 200);
    assert.equal(sb.counters.get('GET /group_flags'), 2);
  });

  it('answers errorStatus for the share of requests given by errorRate', async () => {
    const client = keyClient(sb);
    sb.faults.set({ errorRate: 1, errorStatus: 504 });
    assertProblem(await client.get('/users'), 504);
    assert.equal((await tokenResponse(sb)).status, 200, 'the error rate spares the token endpoint');
    sb.faults.set({ errorRate: 0.5, errorStatus: 503 });
    const statuses = await Promise.all(
      Array.from({ length: 60 }, () => client.get('/group_flags').then((r) => r.status)),
    );
    const failures = statuses.filter((s) => s === 503).length;
    assert.ok(failures > 5 && failures < 55, `${failures} of 60 failed`);
  });

  it('takes the token endpoint down (503, OAuth error body) while the API keeps answering', async () => {
    const token = await accessToken(sb);
    sb.faults.set({ tokenEndpointDown: true });
    const down = await tokenResponse(sb);
    assert.equal(down.status, 503);
    assert.equal(down.body.error, 'temporarily_unavailable');
    const res = await fetch(`${sb.apiBaseUrl}/users`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    assert.equal(sb.counters.get('POST /token'), 2);
    sb.faults.set({ tokenEndpointDown: false });
    assert.equal((await tokenResponse(sb)).status, 200);
  });

  it('validates fault settings', () => {
    assert.throws(() => sb.faults.set({ errorRate: 2 }));
    assert.throws(() => sb.faults.set({ rules: [{ match: 'users', status: 503 }] }));
    assert.throws(() => sb.faults.set({ rules: [{ match: 'GET /users', status: 200 }] }));
    assert.deepEqual(sb.faults.get(), {
      latencyMs: 0,
      errorRate: 0,
      errorStatus: 503,
      tokenEndpointDown: false,
      rules: [],
    });
  });

  it('serves the control endpoints: GET/PUT/DELETE faults, GET/DELETE counters', async () => {
    const control = `${sb.url}/__sandbox`;
    const put = await fetch(`${control}/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ latencyMs: 5, rules: [{ match: 'GET /roles', times: 1, status: 503 }] }),
    });
    assert.equal(put.status, 200);
    assert.equal(obj(await put.json()).latencyMs, 5);
    assert.equal(sb.faults.get().rules.length, 1);
    assert.equal((await keyClient(sb).get('/roles')).status, 503);
    const got = obj(await (await fetch(`${control}/faults`)).json());
    assert.equal(got.latencyMs, 5);
    const bad = await fetch(`${control}/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ errorRate: 'high' }),
    });
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get('content-type') ?? '', /problem\+json/);
    assert.equal((await fetch(`${control}/faults`, { method: 'DELETE' })).status, 200);
    assert.equal(sb.faults.get().latencyMs, 0);

    const counters = obj(await (await fetch(`${control}/counters`)).json());
    assert.equal(counters.total, 1);
    assert.deepEqual(counters.counters, { 'GET /roles': 1 });
    assert.equal((await fetch(`${control}/counters`, { method: 'DELETE' })).status, 204);
    assert.equal(sb.counters.total(), 0, 'control requests are not counted');
  });
});

describe('sandbox fault rules that could never fire', () => {
  let sb: RunningSandbox;
  before(async () => {
    sb = await sandbox({ seed: false });
  });
  after(() => sb.close());

  const putRules = async (rules: unknown[]) => {
    const res = await fetch(`${sb.url}/__sandbox/faults`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ rules }),
    });
    return { status: res.status, body: obj(await res.json()) };
  };

  it('refuses a match no request the rules apply to can produce, naming the closest keys', async () => {
    // Each with a key the closest ones include.
    const refused: [string, string][] = [
      ['GET /roles/:id', 'GET /roles/{id}'],
      ['GET /iserv/idm/api/v1/roles', 'GET /roles'],
      ['GET /users/{userId}', 'GET /users/{id}'],
      ['GET /nonexistent-route', 'GET /users'],
      // Counted, but answered before latency and rules (docs/sandbox.md):
      ['PUT /users', 'POST /users'],
      ['GET (unknown route)', 'GET /users'],
      ['DELETE /token', 'POST /token'],
      ['PUT *', 'GET /users'],
      ['users', 'GET /users'],
    ];
    for (const [match, closest] of refused) {
      const { status, body } = await putRules([
        { match: 'GET /roles', status: 500 },
        { match, status: 500 },
      ]);
      assert.equal(status, 400, match);
      const violations = body.violations as { propertyPath: string; message: string }[];
      assert.deepEqual(
        violations.map((v) => v.propertyPath),
        ['rules.1.match'],
        match,
      );
      assert.match(violations[0]?.message ?? '', /matches no request that fault rules apply to/, match);
      const offered = violations[0]?.message.split('closest: ')[1] ?? '';
      assert.ok(offered.includes(`"${closest}"`), `${match}: closest ${offered}`);
    }
    assert.deepEqual(sb.faults.get().rules, [], 'nothing of a refused patch is applied');
  });

  it('accepts every served route, the token endpoint and the wildcards', async () => {
    const accepted = ['GET /roles/{id}', 'POST /token', '* /token', '* *', 'GET *', 'PATCH *', '* /roles'];
    const { status } = await putRules(accepted.map((match) => ({ match, status: 503 })));
    assert.equal(status, 200);
    assert.deepEqual(
      sb.faults.get().rules.map((r) => r.match),
      accepted,
    );
  });

  it('answers 405s and unknown paths without latency or rules, but counts them', async () => {
    sb.faults.set({ latencyMs: 400, rules: [{ match: '* *', status: 503 }] });
    sb.counters.reset();
    try {
      const client = keyClient(sb);
      const wrongMethod = await timed(() => client.get('/users', { method: 'PUT' }));
      assertProblem(wrongMethod.value, 405);
      const unknown = await timed(() => client.get('/nonexistent-route'));
      assertProblem(unknown.value, 404);
      assert.ok(wrongMethod.ms < 300 && unknown.ms < 300, `${wrongMethod.ms} ms, ${unknown.ms} ms`);
      assert.equal((await client.get('/roles')).status, 503, 'a served route is subject to the rule');
      assert.deepEqual(sb.counters.snapshot(), {
        'GET (unknown route)': 1,
        'GET /roles': 1,
        'PUT /users': 1,
      });
    } finally {
      sb.faults.reset();
    }
  });
});

describe('sandbox faults from the start options', () => {
  it('applies faults given at start', async () => {
    const sb = await sandbox({
      seed: false,
      faults: { tokenEndpointDown: true, rules: [{ match: 'GET /users', status: 503 }] },
    });
    try {
      assert.equal((await tokenResponse(sb)).status, 503);
      assert.equal((await keyClient(sb).get('/users')).status, 503);
      assert.equal(sb.faults.get().tokenEndpointDown, true);
    } finally {
      await sb.close();
    }
  });
});
