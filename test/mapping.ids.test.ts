// ID strategies below the HTTP layer: the natural-ID cache (TTL on an injected clock,
// invalidation by the proxy's own writes, also of answers still on their way), and the ID table repository with its assignment rules.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../src/lib/clock.js';
import type { CompiledKind } from '../src/mapping/compile.js';
import { IdCache } from '../src/mapping/id-cache.js';
import { openSqliteConnection } from '../src/store/sqlite/database.js';
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite/index.js';
import { tempDir } from './temp-dir.js';
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

describe('natural IDs: a resolution answered after a rename through the proxy', () => {
  let proxy: UserProxy;

  before(async () => {
    // One user per page, and a read retried 1.5 s after a 503: a resolution's first page, read
    // before the rename, waits with its second page until after the rename.
    proxy = await startUserProxy({ successor: { pageSize: 1 }, retries: { max: 1, baseDelayMs: 1_500 } });
  });
  after(async () => {
    await proxy?.close();
  });

  it('is not cached under the old ID: a later write by the old ID finds nothing', async () => {
    for (const username of ['before.rename', 'zz.second']) {
      const created = await proxy.call('POST', '/Entity/User', { username, firstname: 'R', lastname: 'N' });
      assert.equal(created.status, 201, created.text);
    }
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', skip: 1, times: 1, status: 503 }] });
    let renamed = false;
    const link = proxy
      .call('POST', '/Entity/Group/lehrer/link/users', ['before.rename', 'zz.second'])
      .then((answer) => ({ answer, renamedFirst: renamed }));
    // The first page answered (before.rename), the second refused: the rename runs meanwhile.
    await until(() => (proxy.apiCalls()['GET /users'] ?? 0) >= 2);
    const rename = await proxy.call('PUT', '/Entity/User/before.rename', { username: 'after.rename' });
    assert.equal(rename.status, 200, rename.text);
    renamed = true;
    const { answer, renamedFirst } = await link;
    proxy.sandbox.faults.set({ rules: [] });
    assert.ok(renamedFirst, 'the rename finished while the link waited for its second page');
    // Both resolved: before.rename as read before the rename (the link counts as made before it),
    // and zz.second, which the rename shifted onto the page read before it, read again (it was
    // lost, and the link refused as if zz.second did not exist).
    assert.equal(answer.status, 200, `the link of a name renamed meanwhile: ${answer.text}`);
    const members = (answer.body as { users: string[] }).users;
    assert.ok(members.includes('after.rename') && members.includes('zz.second'), answer.text);

    const removed = await proxy.call('DELETE', '/Entity/User/before.rename');
    assert.equal(removed.status, 404, removed.text);
    const relinked = await proxy.call('POST', '/Entity/Group/lehrer/link/users', ['before.rename']);
    assert.equal(relinked.status, 400, relinked.text);
    const user = await proxy.call<{ _id: string; deleted: unknown }>('GET', '/Entity/User/after.rename');
    assert.equal(user.status, 200, user.text);
    assert.deepEqual([user.body._id, user.body.deleted], ['after.rename', null]);
    // The user linked as it was named when the link read it, listed by its name now.
    const group = await proxy.call<{ users: string[] }>('GET', '/Entity/Group/lehrer');
    assert.ok(group.body.users.includes('after.rename'), group.text);
  });
});

describe("natural IDs: a cached ID purged and created again behind the proxy's back", () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  /**
   * A group created through the proxy (its ID cached), then purged at the successor and created
   * again there under the same account: the cache still holds the old UUID.
   */
  async function madeAgain(name: string): Promise<{ id: string; uuid: string }> {
    const created = await proxy.call<{ _id: string }>('POST', '/Entity/Group', { name });
    assert.equal(created.status, 201, created.text);
    const id = created.body._id;
    const old = proxy.sandbox.data.groupByAccount(id)?.id ?? '';
    assert.ok(proxy.sandbox.data.purge('groups', old));
    await proxy.successor.request({
      method: 'POST',
      path: '/groups',
      body: { name: `${name} again`, group: id },
    });
    const uuid = proxy.sandbox.data.groupByAccount(id)?.id ?? '';
    assert.ok(uuid !== '' && uuid !== old, 'another UUID under the same account');
    return { id, uuid };
  }

  it('a write that trusts the cached UUID (group PUT) resolves afresh once and changes the entity of that name now', async () => {
    const { id, uuid } = await madeAgain('Made Twice');
    proxy.resetCounts();
    const answer = await proxy.call<{ name: string }>('PUT', `/Entity/Group/${id}`, { name: 'Made Twice B' });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.name, 'Made Twice B');
    assert.equal(proxy.sandbox.data.groups.get(uuid)?.name, 'Made Twice B');
    assert.deepEqual(
      proxy.apiCalls(),
      { 'PATCH /groups/{id}': 2, 'GET /groups': 1 },
      'the stale PATCH, the query, the PATCH',
    );
  });

  it('a group DELETE by a cached ID deletes the group of that name now, not a 404', async () => {
    const { id, uuid } = await madeAgain('Gone And Back');
    const answer = await proxy.call('DELETE', `/Entity/Group/${id}`);
    assert.equal(answer.status, 204, answer.text);
    assert.notEqual(proxy.sandbox.data.groups.get(uuid)?.deleted ?? null, null);
  });

  it('a link body ID from the cache resolves afresh once: linked to the group of that name now', async () => {
    const { id, uuid } = await madeAgain('Linked Again');
    proxy.resetCounts();
    const answer = await proxy.call<{ groups: string[] }>(
      'POST',
      '/Entity/Privilege/internet_blocked/link/groups',
      [id],
    );
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.body.groups.includes(id), answer.text);
    const group = await proxy.call<{ privileges: string[] }>('GET', `/Entity/Group/${id}`);
    assert.ok(group.body.privileges.includes('internet_blocked'), group.text);
    assert.equal(proxy.sandbox.data.groupByAccount(id)?.id, uuid);
  });

  it('a link body ID the successor refuses as invalid (its IRI in the body) resolves afresh once: linked to the group of that name now', async () => {
    const { id, uuid } = await madeAgain('Added Again');
    proxy.resetCounts();
    const answer = await proxy.call<{ groups: string[] }>('POST', '/Entity/User/thomas.becker/link/groups', [
      id,
    ]);
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.body.groups.includes(id), answer.text);
    const user = proxy.sandbox.data.userByAccount('thomas.becker');
    assert.ok(user);
    assert.ok(proxy.sandbox.data.groupsOf(user.id).some((group) => group.id === uuid));
    assert.equal(proxy.apiCalls()['POST /users/{id}/groups'], 2, 'the stale IRI refused, then the fresh one');
  });

  it('a link body ID purged and not created again: the legacy 400 for an unknown ID, not the successor IRI it refused', async () => {
    const created = await proxy.call<{ _id: string }>('POST', '/Entity/Group', { name: 'Gone For Good' });
    assert.equal(created.status, 201, created.text);
    const id = created.body._id;
    assert.ok(proxy.sandbox.data.purge('groups', proxy.sandbox.data.groupByAccount(id)?.id ?? ''));
    const answer = await proxy.call<{ message: string; errors: unknown }>(
      'POST',
      '/Entity/User/thomas.becker/link/groups',
      [id],
    );
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.body.message, `Unknown group ID: "${id}"; nothing was changed`);
    assert.deepEqual(answer.body.errors, [{ path: 'body.0', message: `no group with ID "${id}"` }]);
  });

  it('an unlink of a cached body ID purged and created again (still linked) removes the entity of that name now', async () => {
    const group = await proxy.call<{ _id: string }>('POST', '/Entity/Group', { name: 'Keeps Members' });
    assert.equal(group.status, 201, group.text);
    const groupId = group.body._id;
    const created = await proxy.call('POST', '/Entity/User', {
      username: 'member.again',
      firstname: 'M',
      lastname: 'A',
    });
    assert.equal(created.status, 201, created.text);
    const linked = await proxy.call('POST', `/Entity/Group/${groupId}/link/users`, ['member.again']);
    assert.equal(linked.status, 200, linked.text);
    // Purged and created again at the successor, and linked there: the cache holds the old UUID.
    assert.ok(proxy.sandbox.data.purge('users', proxy.sandbox.data.userByAccount('member.again')?.id ?? ''));
    const again = await proxy.successor.request<{ '@id': string }>({
      method: 'POST',
      path: '/users',
      body: { user: 'member.again', firstname: 'M', lastname: 'B' },
    });
    const groupUuid = proxy.sandbox.data.groupByAccount(groupId)?.id ?? '';
    await proxy.successor.request({
      method: 'POST',
      path: `/groups/${groupUuid}/members`,
      body: { addedMembers: [again.body['@id']] },
    });
    const membersNow = () => proxy.sandbox.data.membersOf(groupUuid).map((user) => user.user);
    assert.ok(membersNow().includes('member.again'));

    const answer = await proxy.call<{ users: string[] }>('DELETE', `/Entity/Group/${groupId}/link/users`, [
      'member.again',
    ]);
    assert.equal(answer.status, 200, answer.text);
    assert.ok(!answer.body.users.includes('member.again'), answer.text);
    assert.ok(!membersNow().includes('member.again'), 'removed at the successor');
    // A body ID that is simply not linked costs one query to tell, and no second run.
    proxy.resetCounts();
    const notLinked = await proxy.call('DELETE', `/Entity/Group/${groupId}/link/users`, ['member.again']);
    assert.equal(notLinked.status, 200, notLinked.text);
    assert.equal(proxy.apiCalls()['DELETE /groups/{id}/members/{userId}'], 1);
  });

  it("an unlink by a cached ID (its DELETE's 404 tolerated) answers the group of that name now", async () => {
    const { id } = await madeAgain('Unlinked Again');
    const answer = await proxy.call<{ _id: string; name: string }>(
      'DELETE',
      `/Entity/Group/${id}/link/users`,
      ['thomas.becker'],
    );
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual([answer.body._id, answer.body.name], [id, 'Unlinked Again again']);
  });

  it("runs once more at most: a 404 of the fresh resolution's write is the caller's 400, nothing changed", async () => {
    const created = await proxy.call<{ _id: string }>('POST', '/Entity/Group', { name: 'Twice Refused' });
    assert.equal(created.status, 201, created.text);
    const id = created.body._id;
    proxy.sandbox.faults.set({ rules: [{ match: 'POST /groups/{id}/privileges', times: 3, status: 404 }] });
    try {
      proxy.resetCounts();
      const answer = await proxy.call<{ message: string; errors: unknown }>(
        'POST',
        '/Entity/Privilege/internet_blocked/link/groups',
        [id],
      );
      assert.equal(answer.status, 400, answer.text);
      assert.match(
        answer.body.message,
        new RegExp(`^Unknown group ID "${id}": the successor no longer has it; nothing was changed`),
      );
      assert.equal(
        proxy.apiCalls()['POST /groups/{id}/privileges'],
        2,
        'the cached UUID, then the one resolved afresh',
      );
      assert.equal(proxy.apiCalls()['GET /groups'], 1);
    } finally {
      proxy.sandbox.faults.set({ rules: [] });
    }
  });
});

describe('natural IDs: two renames of one entity whose calls overlap', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  it('caches neither new ID: a later write by the ID the group does not have is a 404 and changes nothing', async () => {
    assert.equal((await proxy.call('GET', '/Entity/Group/ag.robotik')).status, 200, 'cached');
    // Both PATCHes wait at the successor together, so each was sent before the other answered.
    proxy.sandbox.faults.set({ latencyMs: 300 });
    const answers = await Promise.all(
      ['robotik.eins', 'robotik.zwei'].map((account) =>
        proxy.call('PUT', '/Entity/Group/ag.robotik', { account }),
      ),
    );
    proxy.sandbox.faults.set({ latencyMs: 0 });
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200],
      'both renames went through',
    );
    const now = proxy.sandbox.data.groupByAccount('robotik.eins') ? 'robotik.eins' : 'robotik.zwei';
    const other = now === 'robotik.eins' ? 'robotik.zwei' : 'robotik.eins';

    const put = await proxy.call('PUT', `/Entity/Group/${other}`, { name: 'Not this group' });
    assert.equal(put.status, 404, put.text);
    const removed = await proxy.call('DELETE', `/Entity/Group/${other}`);
    assert.equal(removed.status, 404, removed.text);
    const linked = await proxy.call('POST', `/Entity/Group/${other}/link/users`, ['mia.fischer']);
    assert.equal(linked.status, 404, linked.text);
    const group = await proxy.call<{ name: string; deleted: unknown; users: string[] }>(
      'GET',
      `/Entity/Group/${now}`,
    );
    assert.equal(group.status, 200, group.text);
    assert.deepEqual([group.body.name, group.body.deleted], ['AG Robotik', null]);
    assert.ok(!group.body.users.includes('mia.fischer'), group.text);
  });
});

describe('natural IDs: a rename through another replica sharing the store', () => {
  let first: UserProxy;
  let second: UserProxy;
  /**
   * While set, the first replica's PATCHes reach the successor and their answers are lost, or
   * replaced by a gateway's 504 (a reverse proxy in front of the successor that gave up waiting).
   */
  let answersLost: false | 'lost' | 'gateway' = false;
  const lossyFetch: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    if (!answersLost || init?.method !== 'PATCH') return answer;
    await answer.arrayBuffer();
    if (answersLost === 'gateway')
      return new Response('<html>504 Gateway Time-out</html>', {
        status: 504,
        headers: { 'content-type': 'text/html' },
      });
    throw new TypeError('fetch failed', { cause: new Error('other side closed') });
  };

  before(async () => {
    first = await startUserProxy({ successorFetch: lossyFetch });
    second = await startUserProxy({ replicaOf: first });
  });
  after(async () => {
    await second?.close();
    await first?.close();
  });

  it('is not trusted by the other replica once answered: its writes by the old ID are a 404 and change nothing', async () => {
    // Both replicas resolve the group and cache it: the second's writes would trust its UUID unread.
    for (const replica of [first, second])
      assert.equal((await replica.call('GET', '/Entity/Group/klasse.5a')).status, 200, 'cached');
    const renamed = await first.call('PUT', '/Entity/Group/klasse.5a', { account: 'klasse.5a.alt' });
    assert.equal(renamed.status, 200, renamed.text);

    // Without the names version the second replica's cache sent these to the renamed group.
    const linked = await second.call('POST', '/Entity/User/thomas.becker/link/groups', ['klasse.5a']);
    assert.equal(linked.status, 400, linked.text);
    const put = await second.call('PUT', '/Entity/Group/klasse.5a', { name: 'Not this group' });
    assert.equal(put.status, 404, put.text);
    const removed = await second.call('DELETE', '/Entity/Group/klasse.5a');
    assert.equal(removed.status, 404, removed.text);
    const group = await first.call<{ name: string; deleted: unknown; users: string[] }>(
      'GET',
      '/Entity/Group/klasse.5a.alt',
    );
    assert.deepEqual([group.body.name, group.body.deleted], ['Klasse 5a', null], group.text);
    assert.ok(!group.body.users.includes('thomas.becker'), group.text);
  });

  it("keeps the renaming replica's own cache: its next write by the new ID is the one PATCH", async () => {
    assert.equal((await first.call('GET', '/Entity/Group/klasse.7b')).status, 200, 'cached');
    const renamed = await first.call('PUT', '/Entity/Group/klasse.7b', { account: 'klasse.7b.alt' });
    assert.equal(renamed.status, 200, renamed.text);
    first.resetCounts();
    const put = await first.call('PUT', '/Entity/Group/klasse.7b.alt', { name: 'Klasse 7b neu' });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(first.apiCalls(), { 'PATCH /groups/{id}': 1 });
  });

  /**
   * The second replica caches `group` and knows the names version as it is now (a write of its
   * own by the cached ID: `name` unchanged); then the first renames the group to `account` with its
   * answer lost the way `how` says.
   */
  async function renameLosingAnswer(how: 'lost' | 'gateway', group: string, name: string, account: string) {
    assert.equal((await second.call('GET', `/Entity/Group/${group}`)).status, 200, 'cached');
    assert.equal((await second.call('PUT', `/Entity/Group/${group}`, { name })).status, 200);
    assert.equal((await second.call('GET', `/Entity/Group/${group}`)).status, 200, 'cached');
    answersLost = how;
    try {
      return await first.call('PUT', `/Entity/Group/${group}`, { account });
    } finally {
      answersLost = false;
    }
  }

  it('is not trusted by the other replica either when the rename went through and its answer was lost', async () => {
    const renamed = await renameLosingAnswer('lost', 'lehrer', 'Lehrer', 'lehrer.alt');
    assert.equal(renamed.status, 502, renamed.text);
    assert.equal(first.sandbox.data.groupByAccount('lehrer.alt')?.name, 'Lehrer', 'renamed all the same');
    const removed = await second.call('DELETE', '/Entity/Group/lehrer');
    assert.equal(removed.status, 404, removed.text);
    assert.equal(first.sandbox.data.groupByAccount('lehrer.alt')?.deleted ?? null, null);
  });

  it('is not trusted by the other replica either when a gateway answered 504 after the rename went through', async () => {
    const renamed = await renameLosingAnswer('gateway', 'klasse.7b.alt', 'Klasse 7b', 'klasse.7b.neu');
    assert.equal(renamed.status, 502, renamed.text);
    assert.ok(first.sandbox.data.groupByAccount('klasse.7b.neu'), 'renamed all the same');
    const linked = await second.call('POST', '/Entity/User/thomas.becker/link/groups', ['klasse.7b.alt']);
    assert.equal(linked.status, 400, linked.text);
  });

  // Last: it takes the names version's table away.
  it('without a names version to read or move: the rename stands with a warning, and a write trusts nothing cached', async () => {
    assert.equal((await second.call('GET', '/Entity/Group/schueler')).status, 200, 'cached');
    const other = openSqliteConnection(path.join(first.dir, 'store.db'));
    try {
      other.exec('DROP TABLE id_names_version');
    } finally {
      other.close();
    }
    const renamed = await first.call('PUT', '/Entity/Group/schueler', { account: 'schueler.alt' });
    assert.equal(renamed.status, 200, renamed.text);
    const told = first.logSink
      .lines()
      .find((line) => line.level === 40 && String(line.msg).includes('renamed'));
    assert.match(
      String(told?.msg),
      /could not tell the other processes sharing the store that group "schueler" was renamed/,
    );
    second.resetCounts();
    const put = await second.call('PUT', '/Entity/Group/schueler', { name: 'Not this group' });
    assert.equal(put.status, 404, put.text);
    assert.deepEqual(second.apiCalls(), { 'GET /groups': 1 }, 'resolved by the successor');
    assert.ok(
      second.logSink.lines().some((line) => String(line.msg).includes('could not read the names version')),
    );
    assert.equal(second.sandbox.data.groupByAccount('schueler.alt')?.name, 'Schüler');
  });
});

describe('the ID cache under concurrent requests', () => {
  const cache = () => new IdCache({ ttlSeconds: 60, max: 100_000, clock: new ManualClock(0) });

  it('keeps its entries for its own move of the names version, not when another process moved it as well', () => {
    const ids = cache();
    ids.syncNames(5);
    ids.set('group\0a', 'uuid-a', ids.ticket());
    ids.ownNamesChange(6);
    assert.equal(ids.get('group\0a'), 'uuid-a', 'its own rename alone: kept');
    ids.syncNames(6);
    assert.equal(ids.get('group\0a'), 'uuid-a', 'checked again, unchanged: kept');
    ids.ownNamesChange(8);
    assert.equal(ids.get('group\0a'), undefined, 'another process moved it to 7 meanwhile: dropped');
    ids.set('group\0a', 'uuid-a', ids.ticket());
    ids.syncNames(9);
    assert.equal(ids.get('group\0a'), undefined, 'another process moved it: dropped');
  });

  it('keeps an answer from before a forget of its key out, and takes one from after', () => {
    const ids = cache();
    const before = ids.ticket();
    ids.delete('user\0a');
    ids.set('user\0a', 'uuid-old', before);
    ids.set('user\0b', 'uuid-b', before);
    assert.equal(ids.get('user\0a'), undefined, 'read before the forget');
    assert.equal(ids.get('user\0b'), 'uuid-b', 'another key is not held back');
    ids.set('user\0a', 'uuid-new', ids.ticket());
    assert.equal(ids.get('user\0a'), 'uuid-new');
  });

  it('lets a write cache its own answer after its own forget, unless another forget of that key came between or after', () => {
    const ids = cache();
    const ticket = ids.ticket();
    const own = ids.delete('user\0a', ticket);
    assert.notEqual(own, undefined);
    ids.set('user\0a', 'uuid-a', ticket, own);
    assert.equal(ids.get('user\0a'), 'uuid-a', 'its own forget alone');

    const second = ids.ticket();
    ids.delete('user\0b'); // another request's rename of b, after this write's ticket
    assert.equal(ids.delete('user\0b', second), undefined, 'forgotten by another since the ticket');
    ids.set('user\0b', 'uuid-b', second, undefined);
    assert.equal(ids.get('user\0b'), undefined);

    const third = ids.ticket();
    const mine = ids.delete('user\0c', third);
    ids.delete('user\0c'); // another request's forget after this write's own
    ids.set('user\0c', 'uuid-c', third, mine);
    assert.equal(ids.get('user\0c'), undefined, 'forgotten again after its own forget');
  });

  it('drops every cached ID of a renamed entity; of two overlapping renames neither caches its new ID', () => {
    const ids = cache();
    const ticket = ids.ticket();
    ids.rename('group\0b', 'uuid-g', ticket);
    assert.equal(ids.get('group\0b'), 'uuid-g', 'a rename alone caches its new ID');
    ids.set('group\0other', 'uuid-o', ticket);

    const first = ids.ticket();
    const second = ids.ticket();
    ids.rename('group\0c', 'uuid-g', first);
    ids.rename('group\0d', 'uuid-g', second);
    assert.equal(ids.get('group\0b'), undefined, 'the old ID');
    assert.equal(ids.get('group\0c'), undefined, 'renamed again by the other');
    assert.equal(ids.get('group\0d'), undefined, 'renamed by the other since its ticket');
    assert.equal(ids.get('group\0other'), 'uuid-o', 'another entity is kept');
    ids.set('group\0c', 'uuid-g', second);
    assert.equal(ids.get('group\0c'), undefined, 'a read answered before the second rename');
    ids.set('group\0d', 'uuid-g', ids.ticket());
    assert.equal(ids.get('group\0d'), 'uuid-g', 'a read answered after both');
  });

  it('keeps every answer from before a clear out', () => {
    const ids = cache();
    const before = ids.ticket();
    ids.clear();
    ids.set('user\0a', 'uuid-a', before);
    assert.equal(ids.get('user\0a'), undefined);
    ids.set('user\0a', 'uuid-a', ids.ticket());
    assert.equal(ids.get('user\0a'), 'uuid-a');
  });

  it('keeps answers from before forgets it no longer tracks out (10,000 keys), not those after', () => {
    const ids = cache();
    const before = ids.ticket();
    ids.delete('user\0a');
    for (let i = 0; i < 10_001; i++) ids.delete(`group\0g${i}`);
    const after = ids.ticket();
    ids.set('user\0b', 'uuid-b', before);
    assert.equal(ids.get('user\0b'), undefined, 'its forgets may have been dropped');
    ids.set('user\0a', 'uuid-a', after);
    assert.equal(ids.get('user\0a'), 'uuid-a');
  });
});

/** Resolves once `condition` holds, checked every 10 ms, for at most 5 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error('condition not met within 5 s');
    await sleep(10);
  }
}

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
    store = openSqliteStore(path.join(tempDir('idmap'), 'store.db'));
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
