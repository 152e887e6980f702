// ID strategies below the HTTP layer: the natural-ID cache (TTL on an injected clock,
// invalidation by the proxy's own writes), and the ID table repository with its assignment rules.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../src/lib/clock.js';
import type { CompiledKind } from '../src/mapping/compile.js';
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite/index.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

describe('natural IDs: cache with TTL, invalidated by own writes', () => {
  let proxy: UserProxy;
  const clock = new ManualClock(Date.now());

  before(async () => {
    proxy = await startUserProxy({ clock });
  });
  after(async () => {
    await proxy?.close();
  });

  it('trusts a resolution for the profile TTL (60 s), then resolves again', async () => {
    await proxy.call('GET', '/Entity/User/thomas.becker');
    proxy.resetCounts();
    await proxy.call('GET', '/Entity/User/thomas.becker');
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1 });
    clock.advance(61_000);
    proxy.resetCounts();
    await proxy.call('GET', '/Entity/User/thomas.becker');
    assert.deepEqual(proxy.apiCalls(), { 'GET /users': 1 }, 'expired: the filter query again');
  });

  it('drops a cached ID whose entity was purged behind its back: 404 after the item read and one filter query', async () => {
    await createAndRead(proxy, 'gone.soon');
    const before = await idCacheLookups(proxy);
    proxy.sandbox.data.purge('users', proxy.sandbox.data.userByAccount('gone.soon')?.id ?? '');
    proxy.resetCounts();
    const answer = await proxy.call('GET', '/Entity/User/gone.soon', undefined, {
      'x-request-id': 'purged-1',
    });
    assert.equal(answer.status, 404, answer.text);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1, 'GET /users': 1 });
    assert.equal(completedLine(proxy, 'purged-1')?.successorCalls, 2, 'both calls in the log line');
    // The cached UUID named nothing any more: the successor answered, so it counts as a miss.
    assert.deepEqual(difference(before, await idCacheLookups(proxy)), { hit: 0, miss: 1 });
    proxy.resetCounts();
    assert.equal((await proxy.call('GET', '/Entity/User/gone.soon')).status, 404);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users': 1 }, 'forgotten: no item read of the purged UUID');
  });

  it('resolves a cached ID afresh when its entity was renamed behind its back', async () => {
    await createAndRead(proxy, 'old.name');
    const uuid = proxy.sandbox.data.userByAccount('old.name')?.id ?? '';
    // Renamed at the successor, not through the proxy: the cache still maps old.name to that UUID.
    await proxy.successor.request({
      method: 'PATCH',
      path: `/users/${uuid}`,
      body: { user: 'new.name' },
      contentType: 'application/merge-patch+json',
    });
    const before = await idCacheLookups(proxy);
    proxy.resetCounts();
    const old = await proxy.call('GET', '/Entity/User/old.name', undefined, { 'x-request-id': 'renamed-1' });
    assert.equal(old.status, 404, old.text);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1, 'GET /users': 1 });
    assert.equal(completedLine(proxy, 'renamed-1')?.successorCalls, 2);
    assert.deepEqual(difference(before, await idCacheLookups(proxy)), { hit: 0, miss: 1 });
    const renamed = await proxy.call<{ _id: string; lastname: string }>('GET', '/Entity/User/new.name');
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual([renamed.body._id, renamed.body.lastname], ['new.name', 'Test']);
  });

  it('answers a warm read with one item read, counted in the log line and as one cache hit', async () => {
    assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 200);
    const before = await idCacheLookups(proxy);
    proxy.resetCounts();
    const answer = await proxy.call<{ _id: string }>('GET', '/Entity/User/thomas.becker', undefined, {
      'x-request-id': 'warm-1',
    });
    assert.equal(answer.body._id, 'thomas.becker');
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1 });
    assert.equal(completedLine(proxy, 'warm-1')?.successorCalls, 1);
    assert.deepEqual(difference(before, await idCacheLookups(proxy)), { hit: 1, miss: 0 });
  });

  it('resolves many IDs of a link body in one filter query with the array form', async () => {
    const ids = proxy.mappings.current().ids;
    const kind = proxy.mappings.current().profile.kinds.get('group') as CompiledKind;
    ids.clear();
    proxy.resetCounts();
    const { found, missing } = await ids.resolveMany(kind, ['lehrer', 'schueler', 'klasse.5a', 'nope']);
    assert.deepEqual([...found.keys()].sort(), ['klasse.5a', 'lehrer', 'schueler']);
    assert.deepEqual(missing, ['nope']);
    assert.deepEqual(proxy.apiCalls(), { 'GET /groups': 1 });
    assert.equal(found.get('lehrer'), proxy.sandbox.data.groupByAccount('lehrer')?.id);
  });

  it('remembers what a create answers, so a name re-created after a purge resolves to the new entity', async () => {
    const created = await proxy.call('POST', '/Entity/User', {
      username: 'cache.me',
      firstname: 'C',
      lastname: 'M',
    });
    assert.equal(created.status, 201);
    const first = proxy.sandbox.data.userByAccount('cache.me')?.id;
    assert.equal((await proxy.call('GET', '/Entity/User/cache.me')).status, 200);
    // Purged behind the proxy's back, then created again: another UUID under the same name.
    proxy.sandbox.data.purge('users', first ?? '');
    const again = await proxy.call('POST', '/Entity/User', {
      username: 'cache.me',
      firstname: 'C',
      lastname: 'M2',
    });
    assert.equal(again.status, 201, again.text);
    const read = await proxy.call<{ lastname: string }>('GET', '/Entity/User/cache.me');
    assert.equal(read.body.lastname, 'M2');
  });
});

describe('natural IDs against a successor whose filter ignores case', () => {
  let proxy: UserProxy;

  before(async () => {
    // The sandbox filters exactly; its case-insensitive `[icontains]` filter stands in for a
    // successor that matches names without regard to case.
    proxy = await startUserProxy({ copyProfile: true });
    const file = path.join(proxy.profileDir, 'ids.json');
    const json = JSON.parse(readFileSync(file, 'utf8')) as { kinds: Record<string, { filter: string }> };
    const user = json.kinds.user;
    assert.ok(user);
    user.filter = 'user[icontains]';
    writeFileSync(file, JSON.stringify(json, null, 2));
    assert.equal(proxy.mappings.reload().ok, true);
  });
  after(async () => {
    await proxy?.close();
  });

  it('matches legacy IDs exactly: another case is a 404, one call each time, nothing cached', async () => {
    for (let round = 0; round < 2; round++) {
      proxy.resetCounts();
      const answer = await proxy.call('GET', '/Entity/User/THOMAS.BECKER');
      assert.equal(answer.status, 404, answer.text);
      assert.deepEqual(proxy.apiCalls(), { 'GET /users': 1 }, `round ${round}`);
    }
    const exact = await proxy.call<{ _id: string }>('GET', '/Entity/User/thomas.becker');
    assert.equal(exact.status, 200, exact.text);
    assert.equal(exact.body._id, 'thomas.becker');
    proxy.resetCounts();
    assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 200);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1 }, 'warm: one item read, as always');
  });
});

describe('the ID table repository', () => {
  let store: SqliteStore;

  before(() => {
    store = openSqliteStore(path.join(mkdtempSync(path.join(tmpdir(), 'idm-compat-idmap-')), 'store.db'));
  });
  after(async () => {
    await store?.close();
  });

  it('keeps legacy ID and UUID unique per kind in both directions', async () => {
    const a = randomUUID();
    const b = randomUUID();
    assert.equal(
      await store.idMap.insert({ kind: 'role', legacyId: 'R1', uuid: a, source: 'assigned' }, 1),
      'inserted',
    );
    assert.equal(
      await store.idMap.insert({ kind: 'role', legacyId: 'R1', uuid: b, source: 'assigned' }, 1),
      'legacy-taken',
    );
    assert.equal(
      await store.idMap.insert({ kind: 'role', legacyId: 'R2', uuid: a, source: 'assigned' }, 1),
      'uuid-mapped',
    );
    assert.equal(
      await store.idMap.insert({ kind: 'group', legacyId: 'R1', uuid: a, source: 'assigned' }, 1),
      'inserted',
    );
    assert.deepEqual(await store.idMap.byUuids('role', [a, b]), new Map([[a, 'R1']]));
  });

  it('finds the highest number of a sequence, ignoring IDs that only look like one', async () => {
    for (const legacyId of ['G1', 'G2', 'G10', 'G7x', 'Gx', 'H99']) {
      await store.idMap.insert({ kind: 'seq', legacyId, uuid: randomUUID(), source: 'assigned' }, 1);
    }
    assert.equal(await store.idMap.maxSequence('seq', 'G'), 10n);
    assert.equal(await store.idMap.maxSequence('seq', ''), undefined);
    assert.equal(await store.idMap.maxSequence('other', 'G'), undefined);
  });

  it('looks up thousands of IDs in one call', async () => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({
      kind: 'bulk',
      legacyId: `b${i}`,
      uuid: randomUUID(),
    }));
    assert.deepEqual(await store.idMap.upsert(rows, 2), { added: 3000, changed: 0, unchanged: 0 });
    const found = await store.idMap.byLegacyIds(
      'bulk',
      rows.map((r) => r.legacyId),
    );
    assert.equal(found.size, 3000);
    assert.equal(await store.idMap.remove('bulk', 'b0'), true);
    assert.equal(await store.idMap.count('bulk'), 2999);
  });
});

/** Creates a user through the proxy and reads it once, so that the ID cache holds its UUID. */
async function createAndRead(proxy: UserProxy, username: string): Promise<void> {
  const created = await proxy.call('POST', '/Entity/User', {
    username,
    firstname: 'Cached',
    lastname: 'Test',
  });
  assert.equal(created.status, 201, created.text);
  assert.equal((await proxy.call('GET', `/Entity/User/${username}`)).status, 200);
}

/** The ID cache's hit and miss counts, as the metrics endpoint gives them. */
async function idCacheLookups(proxy: UserProxy): Promise<{ hit: number; miss: number }> {
  const metric = await proxy.services.metrics.registry
    .getSingleMetric('idm_compat_id_cache_lookups_total')
    ?.get();
  const count = (result: string) =>
    metric?.values.find((value) => value.labels.result === result)?.value ?? 0;
  return { hit: count('hit'), miss: count('miss') };
}

function difference(
  before: { hit: number; miss: number },
  after: { hit: number; miss: number },
): { hit: number; miss: number } {
  return { hit: after.hit - before.hit, miss: after.miss - before.miss };
}

/** The completion log line of the request with this `X-Request-Id`. */
function completedLine(proxy: UserProxy, requestId: string): Record<string, unknown> | undefined {
  return proxy.logSink.lines().find((line) => line.reqId === requestId && line.msg === 'request completed');
}
