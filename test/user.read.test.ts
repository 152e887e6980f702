// User reads through the proxy: list (with and without `extended`), single GET, shapes, formats,
// the derived `admin`, unknown IDs, and what each read costs in successor calls.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import {
  USER_EXTENDED_FIELDS,
  USER_FIELDS,
  USER_LIST_FIELDS,
  userListItemSchema,
  userSchema,
} from '../src/legacy/user/schema.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

const EXTRA_USERS = 250;

describe('user reads', () => {
  let proxy: UserProxy;

  before(async () => {
    // 250 more users than the seed, so a list needs several successor pages.
    const users = Array.from({ length: EXTRA_USERS }, (_, i) => ({
      user: `bulk.user${String(i).padStart(3, '0')}`,
      firstname: 'Bulk',
      lastname: `User ${i}`,
      groups: i % 2 === 0 ? ['schueler', 'klasse.5a'] : ['schueler'],
      roles: ['ROLE_STUDENT'],
      status: i % 3 === 0 ? ('registered' as const) : ('active' as const),
    }));
    proxy = await startUserProxy({ sandbox: { fixture: { users } } });
  });
  after(async () => {
    await proxy?.close();
  });

  it('lists every user with exactly the seed list fields plus _id, in one collection read per page', async () => {
    // Soft-deleted users are left out of the list (the default profile filters deleted=false).
    const total = [...proxy.sandbox.data.users.values()].filter((u) => u.deleted === null).length;
    assert.ok(total < proxy.sandbox.data.users.size, 'the seed has a soft-deleted user');
    proxy.resetCounts();
    const answer = await proxy.call<Record<string, unknown>[]>('GET', '/Entity/User');
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    const list = z.array(userListItemSchema.strict()).parse(answer.body);
    assert.equal(list.length, total);
    for (const item of answer.body) assert.deepEqual(Object.keys(item), [...USER_LIST_FIELDS]);
    const pages = Math.ceil(total / 100);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users': pages }, 'only the collection pages');
    const bulk = list.find((u) => u._id === 'bulk.user003');
    assert.equal(bulk?.username, 'bulk.user003');
    assert.equal(bulk?.status, 'r');
    assert.equal(bulk?.createdBy, 'admin', 'references are legacy IDs');
  });

  it('adds roles, groups and privileges with extended in any form, still one read per page', async () => {
    for (const query of ['?extended=1', '?extended', '?extended[]=', '?extended[a]=b']) {
      proxy.resetCounts();
      const answer = await proxy.call<Record<string, unknown>[]>('GET', `/Entity/User${query}`);
      assert.equal(answer.status, 200, answer.text);
      const list = z.array(userListItemSchema.strict()).parse(answer.body);
      for (const item of answer.body)
        assert.deepEqual(Object.keys(item), [...USER_LIST_FIELDS, ...USER_EXTENDED_FIELDS], query);
      assert.deepEqual(proxy.apiCalls(), { 'GET /users': Math.ceil(list.length / 100) }, query);
      const admin = list.find((u) => u._id === 'admin');
      assert.deepEqual(admin?.roles, ['ROLE_ADMIN']);
      assert.deepEqual(admin?.groups, ['admins']);
      const bulk = list.find((u) => u._id === 'bulk.user004');
      assert.deepEqual(bulk?.groups?.slice().sort(), ['klasse.5a', 'schueler']);
      assert.deepEqual(bulk?.roles, ['ROLE_STUDENT']);
      assert.deepEqual(bulk?.privileges, []);
    }
  });

  it('reads one user with every field, null for absent values, seed formats', async () => {
    const answer = await proxy.call<Record<string, unknown>>('GET', '/Entity/User/thomas.becker');
    assert.equal(answer.status, 200, answer.text);
    const user = userSchema.strict().parse(answer.body);
    assert.deepEqual(Object.keys(answer.body), [...USER_FIELDS]);
    const record = proxy.sandbox.data.userByAccount('thomas.becker');
    assert.ok(record);
    assert.equal(user._id, 'thomas.becker');
    assert.equal(user.firstname, record.firstname);
    assert.equal(user.status, 'a');
    assert.match(user.created ?? '', /^\d{4}-\d{2}-\d{2}$/);
    assert.match(user.lastlogin ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
    assert.equal(user.createdBy, 'admin', 'references are legacy IDs');
    assert.equal(user.deleted, null);
    assert.equal(user.deletedBy, null);
    assert.equal(user.type, record.type);
    assert.equal(user.importId, record.importId);
    const groups = proxy.sandbox.data.groupsOf(record.id).map((g) => g.group);
    assert.deepEqual(user.groups.slice().sort(), groups.sort());
  });

  it('derives admin from the admin role (ROLE_ADMIN), not from anything else', async () => {
    const admin = await proxy.call<{ admin: boolean; roles: string[] }>('GET', '/Entity/User/admin');
    assert.equal(admin.body.admin, true);
    const staffAdmin = await proxy.call<{ admin: boolean; roles: string[] }>(
      'GET',
      '/Entity/User/sabine.krueger',
    );
    assert.ok(staffAdmin.body.roles.includes('ROLE_ADMIN'));
    assert.equal(staffAdmin.body.admin, true);
    const student = await proxy.call<{ admin: boolean; roles: string[] }>('GET', '/Entity/User/bulk.user001');
    assert.deepEqual(student.body.roles, ['ROLE_STUDENT']);
    assert.equal(student.body.admin, false);
  });

  it('costs one successor call when the ID cache is cold and one when it is warm', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const cold = await proxy.call('GET', '/Entity/User/bulk.user100');
    assert.equal(cold.status, 200);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users': 1 }, 'the resolution query returns the entity itself');
    proxy.resetCounts();
    const warm = await proxy.call('GET', '/Entity/User/bulk.user100');
    assert.equal(warm.status, 200);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1 }, 'a warm cache reads the item directly');
    assert.deepEqual(warm.body, cold.body);
  });

  it('notices a rename behind its back and resolves afresh', async () => {
    await proxy.call('GET', '/Entity/User/bulk.user101');
    const record = proxy.sandbox.data.userByAccount('bulk.user101');
    assert.ok(record);
    record.user = 'bulk.renamed101';
    const stale = await proxy.call('GET', '/Entity/User/bulk.user101');
    assert.equal(stale.status, 404, 'the old ID is gone even though the cache knew it');
    const renamed = await proxy.call<{ _id: string }>('GET', '/Entity/User/bulk.renamed101');
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body._id, 'bulk.renamed101');
  });

  it('answers 404 with the legacy error body for an unknown ID', async () => {
    proxy.resetCounts();
    const answer = await proxy.call<{ code: number; message: string }>('GET', '/Entity/User/no.such.user');
    assert.equal(answer.status, 404);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(answer.body.code, 404);
    assert.match(answer.body.message, /no user with ID "no\.such\.user"/i);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users': 1 });
  });

  it('treats IDs literally: URL-encoded characters and look-alikes do not match other users', async () => {
    const answer = await proxy.call('GET', `/Entity/User/${encodeURIComponent('thomas.becker,admin')}`);
    assert.equal(answer.status, 404);
    const upper = await proxy.call<{ _id: string }>('GET', '/Entity/User/THOMAS.BECKER');
    assert.equal(upper.status, 404, 'the successor filter is exact');
  });
});
