// Reading groups through the proxy: the list with exactly the seed's list fields (plus users,
// privileges and flags with `extended`), one successor read per collection page however many
// groups there are, and a single group with every seed field; unknown IDs 404, wrong methods 405.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  GROUP_EXTENDED_FIELDS,
  GROUP_FIELDS,
  GROUP_LIST_FIELDS,
  groupListItemSchema,
  groupSchema,
} from '../src/legacy/group/schema.js';
import type { ErrorBody } from './relation-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type Item = Record<string, unknown> & { _id: string };

const LEHRER = {
  name: 'Lehrer',
  account: 'lehrer',
  home: '/group/lehrer',
  owner: 'admin',
  created: '2024-08-01',
  createdBy: 'admin',
  deleted: null,
  deletedBy: null,
  flags: ['has_home', 'mail_list'],
  users: ['andreas.wolf', 'claudia.hoffmann', 'julia.neumann', 'michael.schaefer', 'thomas.becker'],
  privileges: ['files_share_groups', 'mail_external'],
  _id: 'lehrer',
};

/** Sorts the ID lists of a group so that they compare regardless of order. */
function sortedLists<T extends Record<string, unknown>>(value: T): T {
  const out: Record<string, unknown> = { ...value };
  for (const key of GROUP_EXTENDED_FIELDS)
    if (Array.isArray(out[key])) out[key] = [...(out[key] as string[])].sort();
  return out as T;
}

describe('group reads', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  it('lists groups with exactly the seed list fields, in one successor read', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const answer = await proxy.call<Item[]>('GET', '/Entity/Group');
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    for (const item of answer.body) {
      assert.deepEqual(Object.keys(item), [...GROUP_LIST_FIELDS]);
      groupListItemSchema.strict().parse(item);
    }
    assert.deepEqual(
      answer.body.find((g) => g._id === 'lehrer'),
      {
        account: 'lehrer',
        name: 'Lehrer',
        owner: 'admin',
        createdBy: 'admin',
        created: '2024-08-01',
        _id: 'lehrer',
      },
    );
    assert.deepEqual(
      answer.body.map((g) => g._id).sort(),
      [...proxy.sandbox.data.groups.values()].map((g) => g.group).sort(),
    );
    assert.deepEqual(proxy.apiCalls(), { 'GET /groups': 1 });
  });

  it('adds users, privileges and flags with extended in any form, still in one read', async () => {
    for (const query of ['?extended=1', '?extended', '?extended[]=', '?extended[all]=yes']) {
      proxy.resetCounts();
      const answer = await proxy.call<Item[]>('GET', `/Entity/Group${query}`);
      assert.equal(answer.status, 200, `${query}: ${answer.text}`);
      for (const item of answer.body) {
        assert.deepEqual(Object.keys(item), [...GROUP_LIST_FIELDS, ...GROUP_EXTENDED_FIELDS], query);
        groupListItemSchema.strict().parse(item);
      }
      const lehrer = answer.body.find((g) => g._id === 'lehrer');
      assert.ok(lehrer);
      assert.deepEqual(sortedLists(lehrer).users, LEHRER.users);
      assert.deepEqual(sortedLists(lehrer).privileges, LEHRER.privileges);
      assert.deepEqual(sortedLists(lehrer).flags, LEHRER.flags);
      assert.deepEqual(proxy.apiCalls(), { 'GET /groups': 1 }, `no call per group (${query})`);
    }
  });

  it('reads a group with every seed field, _id last, owner and createdBy as legacy user IDs', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const answer = await proxy.call<Item>('GET', '/Entity/Group/lehrer');
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(Object.keys(answer.body), [...GROUP_FIELDS]);
    groupSchema.strict().parse(answer.body);
    assert.deepEqual(sortedLists(answer.body), LEHRER);
    assert.deepEqual(proxy.apiCalls(), { 'GET /groups': 1 }, 'cold cache: the resolution query is the read');
    proxy.resetCounts();
    assert.equal((await proxy.call('GET', '/Entity/Group/lehrer')).status, 200);
    assert.deepEqual(proxy.apiCalls(), { 'GET /groups/{id}': 1 }, 'warm cache: one item read');
  });

  it('renders absent values as null and empty relations as []', async () => {
    const answer = await proxy.call<Item>('GET', '/Entity/Group/schueler');
    assert.equal(answer.status, 200, answer.text);
    groupSchema.strict().parse(answer.body);
    assert.equal(answer.body.home, null);
    assert.equal(answer.body.deleted, null);
    assert.equal(answer.body.deletedBy, null);
    assert.deepEqual(answer.body.privileges, []);
    assert.deepEqual(answer.body.flags, ['mail_list']);
  });

  it('answers 404 for an unknown group', async () => {
    const answer = await proxy.call<ErrorBody>('GET', '/Entity/Group/no.such.group');
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.body.code, 404);
    assert.match(answer.body.message, /No group with ID "no\.such\.group"/);
  });

  it('answers 405 with Allow for methods the seed does not have on group paths', async () => {
    for (const [method, path, allow] of [
      ['PATCH', '/Entity/Group/lehrer', 'GET, HEAD, PUT, DELETE'],
      ['POST', '/Entity/Group/lehrer', 'GET, HEAD, PUT, DELETE'],
      ['PUT', '/Entity/Group', 'GET, HEAD, POST'],
      ['DELETE', '/Entity/Group', 'GET, HEAD, POST'],
      ['GET', '/Entity/Group/lehrer/link/users', 'POST, DELETE'],
      ['PUT', '/Entity/Group/lehrer/link/assignedPrivileges', 'POST, DELETE'],
      ['GET', '/Entity/Group/lehrer/link/assignedFlags', 'POST, DELETE'],
    ] as const) {
      const answer = await proxy.call<ErrorBody>(method, path);
      assert.equal(answer.status, 405, `${method} ${path}: ${answer.text}`);
      assert.equal(answer.body.code, 405);
      assert.deepEqual(new Set(answer.headers.get('allow')?.split(', ')), new Set(allow.split(', ')));
    }
  });
});

describe('group lists over several pages', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
    for (let i = 1; i <= 110; i++) {
      const created = await proxy.call('POST', '/Entity/Group', {
        name: `Kurs ${String(i).padStart(3, '0')}`,
      });
      assert.equal(created.status, 201, created.text);
    }
  });
  after(async () => {
    await proxy?.close();
  });

  it('costs one successor read per page (100 groups), with or without extended (no N+1)', async () => {
    const total = proxy.sandbox.data.groups.size;
    assert.ok(total > 110);
    const pages = Math.ceil(total / 100);
    assert.equal(pages, 2);
    for (const query of ['', '?extended=1']) {
      proxy.resetCounts();
      const answer = await proxy.call<Item[]>('GET', `/Entity/Group${query}`);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.length, total);
      assert.ok(answer.body.some((g) => g._id === 'kurs.110'));
      assert.deepEqual(proxy.apiCalls(), { 'GET /groups': pages }, query);
    }
  });
});
