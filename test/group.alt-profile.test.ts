// Groups, roles and privileges on the second mapping profile (test/fixtures/mappings/alt-uuid):
// groups by a persisted ID table (imported rows, new groups by the sequence rule G1, G2, …),
// users by UUID. The same legacy code answers with those IDs, in paths, bodies and references,
// because the tables say so — and a rollback re-adds by UUID just the same.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { groupSchema } from '../src/legacy/group/schema.js';
import { type ErrorBody, groupLinks, privilegeLinks, snapshot } from './relation-helpers.js';
import { ALT_PROFILE, sandboxUser, startUserProxy, type UserProxy } from './user-helpers.js';

type Group = {
  users: string[];
  privileges: string[];
  flags: string[];
  owner: string | null;
  _id: string;
} & Record<string, unknown>;

describe('groups on the alt-uuid profile (ID table, users by UUID)', () => {
  let proxy: UserProxy;
  let thomas: string;
  let lena: string;

  before(async () => {
    proxy = await startUserProxy({ profile: ALT_PROFILE });
    thomas = sandboxUser(proxy, 'thomas.becker')?.id ?? '';
    lena = sandboxUser(proxy, 'lena.mueller')?.id ?? '';
    const lehrer = proxy.sandbox.data.groupByAccount('lehrer')?.id ?? '';
    await proxy.store.idMap.upsert([{ kind: 'group', legacyId: 'G-LEHRER', uuid: lehrer }], Date.now());
  });
  after(async () => {
    await proxy?.close();
  });

  it('reads an imported group by its table ID, with members and owner as user UUIDs', async () => {
    const answer = await proxy.call<Group>('GET', '/Entity/Group/G-LEHRER');
    assert.equal(answer.status, 200, answer.text);
    groupSchema.strict().parse(answer.body);
    assert.equal(answer.body._id, 'G-LEHRER');
    assert.equal(answer.body.account, 'lehrer');
    assert.equal(answer.body.owner, sandboxUser(proxy, 'admin')?.id);
    assert.ok(answer.body.users.includes(thomas));
    assert.equal(
      (await proxy.call('GET', '/Entity/Group/lehrer')).status,
      404,
      'account names are not IDs here',
    );
  });

  it('gives every other group an ID by the sequence rule at first sight, stable across reads', async () => {
    const first = await proxy.call<Group[]>('GET', '/Entity/Group?extended=1');
    assert.equal(first.status, 200, first.text);
    const ids = first.body.map((g) => g._id);
    assert.ok(ids.includes('G-LEHRER'));
    assert.ok(ids.filter((id) => /^G\d+$/.test(id)).length >= 5, ids.join(','));
    const again = await proxy.call<Group[]>('GET', '/Entity/Group');
    assert.deepEqual(
      again.body.map((g) => g._id),
      ids,
    );
  });

  it('creates a group with the next sequence ID and its Location', async () => {
    const answer = await proxy.call<Group>('POST', '/Entity/Group', { name: 'Imkerei' });
    assert.equal(answer.status, 201, answer.text);
    assert.match(answer.body._id, /^G\d+$/);
    assert.equal(answer.body.account, 'imkerei');
    assert.ok(answer.headers.get('location')?.endsWith(`/Entity/Group/${answer.body._id}`));
    const read = await proxy.call<Group>('GET', `/Entity/Group/${answer.body._id}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.name, 'Imkerei');
  });

  it('links users by UUID and privileges by key; a failed unlink rolls back by UUID', async () => {
    const created = await proxy.call<Group>('POST', '/Entity/Group', { name: 'Garten' });
    const id = created.body._id;
    const linked = await proxy.call<Group>('POST', `/Entity/Group/${id}/link/users`, [thomas, lena]);
    assert.equal(linked.status, 200, linked.text);
    assert.deepEqual([...linked.body.users].sort(), [lena, thomas].sort());
    assert.deepEqual(groupLinks(proxy, 'garten').users, ['lena.mueller', 'thomas.becker']);

    const unknown = await proxy.call<ErrorBody>('POST', `/Entity/Group/${id}/link/users`, ['thomas.becker']);
    assert.equal(unknown.status, 400, 'account names are unknown user IDs here');

    const granted = await proxy.call<{ groups: string[] }>(
      'POST',
      '/Entity/Privilege/print_colour/link/groups',
      [id],
    );
    assert.equal(granted.status, 200, granted.text);
    assert.ok(granted.body.groups.includes(id));
    assert.ok(privilegeLinks(proxy, 'print_colour').groups.includes('garten'));

    const before = snapshot(proxy);
    proxy.sandbox.faults.set({
      rules: [{ match: 'DELETE /groups/{id}/members/{userId}', skip: 1, times: 1, status: 503 }],
    });
    let answer: Awaited<ReturnType<typeof proxy.call<ErrorBody>>>;
    try {
      answer = await proxy.call<ErrorBody>('DELETE', `/Entity/Group/${id}/link/users`, [thomas, lena]);
    } finally {
      proxy.sandbox.faults.reset();
    }
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      new RegExp(`Rolled back \\(add user "${thomas}" back to group "G7"\\)`),
    );
    assert.equal(snapshot(proxy), before);
  });

  it('answers 404 for a purged group whose ID row stays: its link and unlink write nothing and say so', async () => {
    const created = await proxy.call<Group>('POST', '/Entity/Group', { name: 'Vergangen' });
    assert.equal(created.status, 201, created.text);
    const id = created.body._id;
    const linked = await proxy.call<Group>('POST', `/Entity/Group/${id}/link/users`, [thomas]);
    assert.equal(linked.status, 200, linked.text);
    // Purged by the successor (retention): the ID table keeps its row, so the ID still resolves.
    assert.ok(proxy.sandbox.data.purge('groups', proxy.sandbox.data.groupByAccount('vergangen')?.id ?? ''));
    const before = snapshot(proxy);
    for (const method of ['DELETE', 'POST']) {
      const answer = await proxy.call<ErrorBody>(method, `/Entity/Group/${id}/link/users`, [thomas]);
      assert.equal(answer.status, 404, `${method}: ${answer.text}`);
      assert.equal(answer.body.message, `No group with ID "${id}"`, method);
    }
    assert.equal(snapshot(proxy), before);
  });
});

describe('an ID table whose assigned ID is taken by another group', () => {
  // An imported legacy ID that is a UUID — the UUID of another group. The `uuid` rule (and the
  // `attribute` rule's fallback to the UUID) must not hand that ID out again: every _id names
  // exactly one group, and it is saved.
  let proxy: UserProxy;
  let lehrer: string;
  let schueler: string;
  const setRule = (assign: Record<string, unknown>) => {
    const file = path.join(proxy.profileDir, 'ids.json');
    const ids = JSON.parse(readFileSync(file, 'utf8'));
    ids.kinds.group.assign = assign;
    writeFileSync(file, JSON.stringify(ids, null, 2));
    assert.equal(proxy.mappings.reload().ok, true);
  };

  before(async () => {
    proxy = await startUserProxy({ profile: ALT_PROFILE, copyProfile: true });
    lehrer = proxy.sandbox.data.groupByAccount('lehrer')?.id ?? '';
    schueler = proxy.sandbox.data.groupByAccount('schueler')?.id ?? '';
    // The import says: the legacy group ID "<lehrer's UUID>" is the group schueler.
    await proxy.store.idMap.upsert([{ kind: 'group', legacyId: lehrer, uuid: schueler }], Date.now());
  });
  after(async () => {
    await proxy?.close();
  });

  it('uuid rule: the group whose UUID is taken gets <uuid>-2, saved, and every _id reads its own group', async () => {
    setRule({ rule: 'uuid' });
    const list = await proxy.call<Group[]>('GET', '/Entity/Group');
    assert.equal(list.status, 200, list.text);
    const ids = list.body.map((g) => g._id);
    assert.equal(new Set(ids).size, ids.length, `duplicate _id in ${ids.join(', ')}`);
    const byAccount = new Map(list.body.map((g) => [g.account, g._id]));
    assert.equal(byAccount.get('schueler'), lehrer, 'the imported row');
    assert.equal(byAccount.get('lehrer'), `${lehrer}-2`);
    const rows = new Map((await proxy.store.idMap.list('group')).map((row) => [row.legacyId, row.uuid]));
    for (const group of list.body) {
      const read = await proxy.call<Group>('GET', `/Entity/Group/${encodeURIComponent(group._id)}`);
      assert.equal(read.body.account, group.account, `GET ${group._id}`);
      assert.ok(rows.has(group._id), `${group._id} is saved`);
    }
  });

  it('attribute rule: a taken attribute falls back to the UUID, a taken UUID to <uuid>-2', async () => {
    const created = await proxy.call<Group>('POST', '/Entity/Group', { name: 'Imkerei' });
    assert.equal(created.status, 201, created.text);
    const imkerei = proxy.sandbox.data.groupByAccount('imkerei')?.id ?? '';
    const admins = proxy.sandbox.data.groupByAccount('admins')?.id ?? '';
    assert.ok(imkerei && admins);
    await proxy.store.idMap.remove('group', imkerei);
    // "imkerei" (its account) and its UUID are both legacy IDs of other groups.
    await proxy.store.idMap.upsert(
      [
        { kind: 'group', legacyId: 'imkerei', uuid: admins },
        { kind: 'group', legacyId: imkerei, uuid: lehrer },
      ],
      Date.now(),
    );
    setRule({ rule: 'attribute', attribute: 'group' });
    const list = await proxy.call<Group[]>('GET', '/Entity/Group');
    assert.equal(list.status, 200, list.text);
    const ids = list.body.map((g) => g._id);
    assert.equal(new Set(ids).size, ids.length, `duplicate _id in ${ids.join(', ')}`);
    const mine = list.body.find((g) => g.account === 'imkerei');
    assert.equal(mine?._id, `${imkerei}-2`);
    const read = await proxy.call<Group>('GET', `/Entity/Group/${encodeURIComponent(`${imkerei}-2`)}`);
    assert.equal(read.body.account, 'imkerei');
  });

  it('attribute rule: a value no path can hold ("/" in a name) is no ID, the UUID is; the group stays addressable', async () => {
    setRule({ rule: 'attribute', attribute: 'name' });
    const created = await proxy.call<Group>('POST', '/Entity/Group', { name: 'AG Foto/Film' });
    assert.equal(created.status, 201, created.text);
    const uuid = proxy.sandbox.data.groupByAccount(created.body.account as string)?.id ?? '';
    assert.equal(created.body._id, uuid);
    const read = await proxy.call<Group>('GET', `/Entity/Group/${encodeURIComponent(created.body._id)}`);
    assert.equal(read.status, 200, read.text);
    const linked = await proxy.call<Group>(
      'POST',
      `/Entity/Group/${encodeURIComponent(created.body._id)}/link/users`,
      [sandboxUser(proxy, 'lena.mueller')?.id],
    );
    assert.equal(linked.status, 200, linked.text);
  });
});
