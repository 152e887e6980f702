import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { uuidToBase58 } from '../src/lib/uuid.js';
import type { RunningSandbox, SandboxFixture } from '../src/sandbox/index.js';
import { api, assertProblem, groupId, keyClient, list, obj, sandbox, userId } from './sandbox-helpers.js';

const BASE = '/iserv/idm/api/v1';

describe('sandbox reads: formats, items, _attributes, filters, sub-resources, lookup', () => {
  let sb: RunningSandbox;
  let json: ReturnType<typeof keyClient>;
  let ld: ReturnType<typeof keyClient>;
  before(async () => {
    sb = await sandbox();
    json = keyClient(sb, 'application/json');
    ld = keyClient(sb, 'application/ld+json');
  });
  after(() => sb.close());

  const accounts = (body: unknown) => list(body).map((u) => u.user);

  it('serves a Hydra collection with the hydra: prefix for application/ld+json', async () => {
    const res = await ld.get('/users');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/ld\+json/);
    const body = obj(res.body);
    assert.equal(body['@id'], `${BASE}/users`);
    assert.equal(body['@type'], 'hydra:Collection');
    assert.equal(body['hydra:totalItems'], 25);
    const members = list(body['hydra:member']);
    assert.equal(members.length, 25);
    assert.equal(members[0]?.['@type'], 'User');
    assert.match(String(members[0]?.['@id']), /^\/iserv\/idm\/api\/v1\/users\/[1-9A-HJ-NP-Za-km-z]{16,22}$/);
    const view = obj(body['hydra:view']);
    assert.equal(view['hydra:first'], `${BASE}/users?page=1`);
    assert.equal(view['hydra:last'], `${BASE}/users?page=1`);
    assert.equal(view['hydra:next'], undefined);
  });

  it('serves a plain JSON array for application/json, without any metadata', async () => {
    const res = await json.get('/users');
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const users = list(res.body);
    assert.equal(users.length, 25);
    const admin = users[0] ?? {};
    assert.equal(admin.user, 'admin');
    assert.equal(admin['@id'], undefined);
    assert.deepEqual(Object.keys(admin), [
      'hexUuid',
      'uuid',
      'user',
      'firstname',
      'lastname',
      'auxInfo',
      'importId',
      'emailAddress',
      'locked',
      'deleted',
      'status',
      'type',
      'created',
      'createdBy',
      'lastLogin',
      'deletedBy',
      'groups',
      'roles',
      'privileges',
    ]);
    assert.equal(admin.uuid, uuidToBase58(String(admin.hexUuid)));
    assert.match(String(admin.created), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    assert.ok(Array.isArray(admin.roles) && admin.roles.every((r) => String(r).startsWith(`${BASE}/roles/`)));
  });

  it('negotiates: no Accept and wildcards mean JSON-LD, q-values count, unknown types are 406', async () => {
    const none = await api(sb, '/roles', { apiKey: sb.apiKey });
    assert.equal(obj(none.body)['@type'], 'hydra:Collection');
    const preferJson = await api(sb, '/roles', {
      apiKey: sb.apiKey,
      accept: 'application/ld+json;q=0.5, application/json',
    });
    assert.ok(Array.isArray(preferJson.body));
    const both = await api(sb, '/roles', {
      apiKey: sb.apiKey,
      accept: 'application/ld+json, application/json',
    });
    assert.equal(obj(both.body)['@type'], 'hydra:Collection');
    assertProblem(await api(sb, '/roles', { apiKey: sb.apiKey, accept: 'text/html' }), 406);
  });

  it('reads an item by dashed or base58 id; unknown and malformed ids are 404', async () => {
    const id = userId(sb, 'lena.mueller');
    const dashed = await json.get(`/users/${id}`);
    const short = await json.get(`/users/${uuidToBase58(id)}`);
    assert.equal(dashed.status, 200);
    assert.deepEqual(dashed.body, short.body);
    assert.equal(obj(dashed.body).firstname, 'Lena');
    const item = obj((await ld.get(`/users/${id}`)).body);
    assert.equal(item['@id'], `${BASE}/users/${uuidToBase58(id)}`);
    assert.equal(item['@type'], 'User');
    assert.equal(item['@context'], `${BASE}/contexts/User`);
    assertProblem(await json.get('/users/00000000-0000-4000-8000-000000000000'), 404);
    assertProblem(await json.get('/users/not-an-id'), 404);
    for (const kind of ['groups', 'roles', 'privileges', 'group_flags']) {
      const first = list((await json.get(`/${kind}?itemsPerPage=1`)).body)[0] ?? {};
      const again = await json.get(`/${kind}/${String(first.uuid)}`);
      assert.equal(again.status, 200, kind);
      assert.equal(obj(again.body).hexUuid, first.hexUuid);
    }
  });

  it('renders every resource with its documented fields', async () => {
    const group = obj((await json.get(`/groups/${groupId(sb, 'klasse.5a')}`)).body);
    assert.deepEqual(Object.keys(group), [
      'hexUuid',
      'uuid',
      'group',
      'name',
      'owner',
      'home',
      'created',
      'createdBy',
      'deleted',
      'deletedBy',
      'privileges',
      'flags',
      'members',
    ]);
    const role = list((await json.get('/roles?role=ROLE_ADMIN')).body)[0] ?? {};
    assert.deepEqual(Object.keys(role), ['hexUuid', 'uuid', 'role', 'name', 'module', 'privileges']);
    const privilege = list((await json.get('/privileges?privilege=internet_blocked')).body)[0] ?? {};
    assert.deepEqual(Object.keys(privilege), [
      'hexUuid',
      'uuid',
      'name',
      'privilege',
      'description',
      'module',
      'inverted',
      'groups',
      'roles',
    ]);
    assert.equal(privilege.inverted, true);
    const flag = list((await json.get('/group_flags?name=has_home')).body)[0] ?? {};
    assert.deepEqual(Object.keys(flag), ['hexUuid', 'uuid', 'name', 'title']);
  });

  it('selects attributes with _attributes, embedding relations for dot paths', async () => {
    const users = list(
      (await json.get('/users?user=admin&_attributes=user,groups.name,groups.hexUuid,roles')).body,
    );
    assert.deepEqual(users, [
      {
        user: 'admin',
        groups: [{ hexUuid: groupId(sb, 'admins'), name: 'Administrators' }],
        roles: [`${BASE}/roles/${uuidToBase58(sb.data.roleByName('ROLE_ADMIN')?.id ?? '')}`],
      },
    ]);
    const group = obj(
      (await json.get(`/groups/${groupId(sb, 'lehrer')}?_attributes=privileges.hexUuid,owner.user`)).body,
    );
    assert.deepEqual(Object.keys(group), ['owner', 'privileges']);
    assert.deepEqual(group.owner, { user: 'admin' });
    assert.deepEqual(
      new Set(list(group.privileges).map((p) => p.hexUuid)),
      new Set(['mail_external', 'files_share_groups'].map((k) => sb.data.privilegeByKey(k)?.id)),
    );
    const nullOwner = list(
      (await json.get('/users?user=admin&_attributes=createdBy.user,deletedBy.user')).body,
    )[0];
    assert.deepEqual(nullOwner, { createdBy: null, deletedBy: null });
    const arrayForm = list(
      (await json.get('/users?user=admin&_attributes[]=user&_attributes[]=firstname')).body,
    )[0];
    assert.deepEqual(arrayForm, { user: 'admin', firstname: 'Sandbox' });
    const deep = list(
      (await json.get('/users?user=thomas.becker&_attributes=groups.group,groups.flags.name')).body,
    )[0];
    assert.deepEqual(deep, {
      groups: [{ group: 'lehrer', flags: [{ name: 'has_home' }, { name: 'mail_list' }] }],
    });
    const embeddedLd = list(
      obj((await ld.get('/users?user=admin&_attributes=groups.name')).body)['hydra:member'],
    )[0];
    assert.deepEqual(list(embeddedLd?.groups)[0], {
      '@id': `${BASE}/groups/${uuidToBase58(groupId(sb, 'admins'))}`,
      '@type': 'Group',
      name: 'Administrators',
    });
    const members = list((await json.get(`/groups/${groupId(sb, 'admins')}/members?_attributes=user`)).body);
    assert.deepEqual(members, [{ user: 'admin' }, { user: 'sabine.krueger' }]);
  });

  it('answers 400 for unknown attributes and sub-attributes', async () => {
    for (const attributes of ['nope', 'user.first', 'groups.nope', 'owner']) {
      const res = await json.get(`/users?_attributes=${attributes}`);
      assert.match(String(assertProblem(res, 400).detail), /Unknown attribute/, attributes);
    }
    assertProblem(await json.get(`/users/${userId(sb, 'admin')}?_attributes=password`), 400);
  });

  it('answers 400, not 500 or a silent pass, for attribute names of the object prototype', async () => {
    // Names every JavaScript object inherits are no attributes: alone they were accepted (and
    // rendered nothing), with a sub-attribute the sandbox answered 500.
    for (const attributes of [
      'constructor',
      '__proto__',
      'toString',
      'constructor.name',
      '__proto__.x',
      'groups.constructor',
      'groups.hasOwnProperty.x',
    ]) {
      const res = await json.get(`/users?_attributes=${attributes}`);
      assert.match(String(assertProblem(res, 400).detail), /Unknown attribute/, attributes);
    }
    assertProblem(await json.get('/lookup/users?query=lena&_attributes=valueOf.x'), 400);
  });

  it('filters exactly, with the array form for many values, and keeps only the last of a repeated plain parameter', async () => {
    assert.deepEqual(accounts((await json.get('/users?user=lena.mueller')).body), ['lena.mueller']);
    assert.deepEqual(
      accounts((await json.get('/users?user[]=lena.mueller&user[]=admin&user[]=nobody')).body),
      ['admin', 'lena.mueller'],
    );
    assert.deepEqual(accounts((await json.get('/users?user=admin&user=lena.mueller')).body), [
      'lena.mueller',
    ]);
    assert.deepEqual(accounts((await json.get('/users?firstname=Lena&lastname=Müller')).body), [
      'lena.mueller',
    ]);
    assert.deepEqual(
      list((await json.get('/groups?group=lehrer')).body).map((g) => g.name),
      ['Lehrer'],
    );
    assert.deepEqual(
      list((await json.get('/groups?name=Klasse%205a')).body).map((g) => g.group),
      ['klasse.5a'],
    );
    assert.deepEqual(
      list((await json.get('/roles?role[]=ROLE_ADMIN&role[]=ROLE_STAFF')).body).map((r) => r.role),
      ['ROLE_ADMIN', 'ROLE_STAFF'],
    );
    assert.equal(list((await json.get('/privileges?privilege=mail_external')).body).length, 1);
    assert.equal(list((await json.get('/group_flags?name=hidden')).body).length, 1);
    assert.equal(
      list((await json.get('/users?user=LENA.MUELLER')).body).length,
      0,
      'exact is case-sensitive',
    );
  });

  it('filters by uuid lists in dashed and base58 form', async () => {
    const a = userId(sb, 'admin');
    const b = userId(sb, 'mia.fischer');
    assert.deepEqual(accounts((await json.get(`/users?uuid=${a},${uuidToBase58(b)}`)).body), [
      'admin',
      'mia.fischer',
    ]);
    assert.deepEqual(accounts((await json.get(`/users?uuid[]=${uuidToBase58(a)}&uuid[]=${b}`)).body), [
      'admin',
      'mia.fischer',
    ]);
    assert.deepEqual(accounts((await json.get(`/users?hexUuid=${b}`)).body), ['mia.fischer']);
    assert.deepEqual(accounts((await json.get('/users?uuid=garbage')).body), []);
  });

  it('filters by deleted, booleans, status, icontains and relations; ignores unknown parameters', async () => {
    assert.deepEqual(accounts((await json.get('/users?deleted=true')).body), ['ben.krause']);
    assert.equal(list((await json.get('/users?deleted=false')).body).length, 24);
    assert.deepEqual(accounts((await json.get('/users?locked=true')).body), ['leon.weber']);
    assert.equal(list((await json.get('/users?status=registered')).body).length, 3);
    assert.deepEqual(accounts((await json.get('/users?lastname[icontains]=MÜL')).body), ['lena.mueller']);
    assert.deepEqual(
      list((await json.get('/groups?name[icontains]=klasse')).body).map((g) => g.group),
      ['klasse.5a', 'klasse.7b'],
    );
    const robotik = `${BASE}/groups/${uuidToBase58(groupId(sb, 'ag.robotik'))}`;
    assert.equal(list((await json.get(`/users?groups=${robotik}`)).body).length, 5);
    assert.deepEqual(
      list((await json.get(`/groups?owner=${userId(sb, 'andreas.wolf')}`)).body).map((g) => g.group),
      ['ag.robotik'],
    );
    assert.equal(list((await json.get('/users?whatever=1&order[user]=desc')).body).length, 25);
    const ldFiltered = obj((await ld.get('/users?status=registered&itemsPerPage=2')).body);
    assert.equal(ldFiltered['hydra:totalItems'], 3);
    assert.equal(
      obj(ldFiltered['hydra:view'])['hydra:next'],
      `${BASE}/users?status=registered&itemsPerPage=2&page=2`,
    );
  });

  it('serves the relation sub-resource collections, both id forms, 404 for an unknown owner', async () => {
    const becker = userId(sb, 'thomas.becker');
    const groups = list((await json.get(`/users/${uuidToBase58(becker)}/groups`)).body).map((g) => g.group);
    assert.deepEqual(groups, ['lehrer']);
    const members = list((await json.get(`/groups/${groupId(sb, 'klasse.7b')}/members`)).body).map(
      (u) => u.user,
    );
    assert.equal(members.length, 7);
    assert.ok(members.includes('michael.schaefer'));
    const admins = sb.data.roleByName('ROLE_ADMIN')?.id ?? '';
    assert.deepEqual(
      list((await json.get(`/roles/${admins}/users`)).body).map((u) => u.user),
      ['admin', 'sabine.krueger'],
    );
    const page = obj((await ld.get(`/groups/${groupId(sb, 'schueler')}/members?itemsPerPage=5`)).body);
    assert.equal(page['hydra:totalItems'], 17);
    assert.equal(
      obj(page['hydra:view'])['hydra:next'],
      `${BASE}/groups/${groupId(sb, 'schueler')}/members?itemsPerPage=5&page=2`,
    );
    assertProblem(await json.get('/users/00000000-0000-4000-8000-000000000000/groups'), 404);
    assertProblem(await json.get('/roles/00000000-0000-4000-8000-000000000000/users'), 404);
  });

  it('looks users and groups up in exact, partial and fuzzy buckets', async () => {
    const users = obj((await json.get('/lookup/users?query=lena&_attributes=user')).body);
    assert.deepEqual(users.exact, [{ user: 'lena.mueller' }]);
    assert.deepEqual(users.partial, [], 'no other name contains "lena"');
    assert.ok(
      list(users.fuzzy).some((u) => u.user === 'lea.braun'),
      'Lea is one edit away from Lena',
    );
    const partial = obj((await json.get('/lookup/users?query=mül&_attributes=user')).body);
    assert.deepEqual(partial.partial, [{ user: 'lena.mueller' }]);
    const groups = obj((await json.get('/lookup/groups?query=klasse&_attributes=group')).body);
    assert.deepEqual(groups.partial, [{ group: 'klasse.5a' }, { group: 'klasse.7b' }]);
    const deleted = obj((await json.get('/lookup/users?query=ben.krause')).body);
    assert.deepEqual([deleted.exact, deleted.partial], [[], []], 'soft-deleted users are not looked up');
    assertProblem(await json.get('/lookup/users'), 400);
  });
});

describe('sandbox pagination over 95 items', () => {
  let sb: RunningSandbox;
  const fixture: SandboxFixture = {
    users: Array.from({ length: 95 }, (_, i) => ({
      user: `load.user${String(i).padStart(3, '0')}`,
      firstname: 'Load',
      lastname: `User ${i}`,
    })),
  };
  before(async () => {
    sb = await sandbox({ seed: false, fixture });
  });
  after(() => sb.close());

  it('pages by 30 by default and links every page with hydra:next until the last', async () => {
    const ld = keyClient(sb, 'application/ld+json');
    const seen: string[] = [];
    let next: string | undefined = '/users';
    let pages = 0;
    while (next) {
      const body = obj((await ld.get(next.replace(BASE, ''))).body);
      assert.equal(body['hydra:totalItems'], 95);
      seen.push(...list(body['hydra:member']).map((u) => String(u.user)));
      const view = obj(body['hydra:view']);
      assert.equal(view['hydra:last'], `${BASE}/users?page=4`);
      next = view['hydra:next'] === undefined ? undefined : String(view['hydra:next']);
      pages++;
    }
    assert.equal(pages, 4);
    assert.equal(seen.length, 95);
    assert.deepEqual(
      seen,
      fixture.users?.map((u) => u.user),
    );
  });

  it('honours itemsPerPage, clamps it at 500, and pages plain arrays until a short page', async () => {
    const json = keyClient(sb, 'application/json');
    const sizes: number[] = [];
    for (let page = 1; page <= 4; page++)
      sizes.push(list((await json.get(`/users?itemsPerPage=40&page=${page}`)).body).length);
    assert.deepEqual(sizes, [40, 40, 15, 0]);
    assert.equal(list((await json.get('/users?itemsPerPage=5000')).body).length, 95);
    assert.equal(list((await json.get('/users?page=4')).body).length, 5);
    const ld = obj((await keyClient(sb, 'application/ld+json').get('/users?itemsPerPage=40&page=3')).body);
    const view = obj(ld['hydra:view']);
    assert.equal(view['hydra:previous'], `${BASE}/users?itemsPerPage=40&page=2`);
    assert.equal(view['hydra:next'], undefined);
    for (const bad of ['page=0', 'page=-1', 'page=x', 'itemsPerPage=0', 'itemsPerPage=1.5']) {
      assertProblem(await json.get(`/users?${bad}`), 400);
    }
    // A page number past 2^53 - 1 lost digits: its Hydra links named page=1e%2B26 or Infinity.
    for (const huge of ['9007199254740992', '99999999999999999999999999', '9'.repeat(400)]) {
      const refused = await keyClient(sb, 'application/ld+json').get(`/users?itemsPerPage=1&page=${huge}`);
      assert.match(String(assertProblem(refused, 400).detail), /up to 9007199254740991/, huge);
    }
    const last = obj(
      (await keyClient(sb, 'application/ld+json').get('/users?itemsPerPage=1&page=9007199254740991')).body,
    );
    assert.deepEqual(last['hydra:member'], []);
    assert.equal(obj(last['hydra:view'])['@id'], `${BASE}/users?itemsPerPage=1&page=9007199254740991`);
  });

  it('uses the configured page size and the un-prefixed Hydra keys of API Platform 4', async () => {
    const other = await sandbox({ seed: false, fixture, pageSize: 10, hydraPrefix: false });
    try {
      const res = await keyClient(other, 'application/ld+json').get('/users?page=2');
      const body = obj(res.body);
      assert.equal(body['@type'], 'Collection');
      assert.equal(body.totalItems, 95);
      assert.equal(list(body.member).length, 10);
      const view = obj(body.view);
      assert.equal(view['@type'], 'PartialCollectionView');
      assert.equal(view.next, `${BASE}/users?page=3`);
      assert.equal(view.previous, `${BASE}/users?page=1`);
      assert.equal(view.last, `${BASE}/users?page=10`);
      assert.ok(!JSON.stringify(body).includes('hydra:'));
    } finally {
      await other.close();
    }
  });
});

describe('sandbox _attributes dot paths that multiply', () => {
  // 400 members in one group: groups.members.groups.members.user on its members embeds
  // 400 × 1 × 400 × 1 × 400 = 64,000,000 users.
  const fixture: SandboxFixture = {
    users: Array.from({ length: 400 }, (_, i) => ({
      user: `crowd.${i}`,
      firstname: 'Crowd',
      lastname: String(i),
      groups: ['crowd'],
    })),
    groups: [{ name: 'Crowd', group: 'crowd' }],
  };
  fixture.users?.push({ user: 'outsider', firstname: 'Out', lastname: 'Sider' });
  let sb: RunningSandbox;
  before(async () => {
    sb = await sandbox({ seed: false, fixture });
  });
  after(() => sb.close());

  it('refuses with 400 a selection that embeds more than 1,000,000 objects, and keeps answering', async () => {
    // Every nested level embeds every link again: groups.members.groups.members… on the demo
    // data asked for billions of objects and held the single-threaded sandbox (and its memory)
    // for good. The budget counts embedded objects; IRIs and plain values are free.
    const json = keyClient(sb, 'application/json');
    const crowd = sb.data.groupByAccount('crowd')?.id ?? assert.fail('no crowd');
    const big = await json.get(
      `/groups/${crowd}/members?itemsPerPage=500&_attributes=groups.members.groups.members.user`,
    );
    assert.match(String(assertProblem(big, 400).detail), /embed more than 1000000 objects/);
    const lookup = await json.get(
      '/lookup/groups?query=crowd&_attributes=members.groups.members.groups.members.user',
    );
    assertProblem(lookup, 400);
    // Within the budget: the same path as IRIs, and a shorter one (400 × 1 × 400 = 160,000
    // objects, what a large school's group list with its members embedded comes to).
    const iris = list(
      (await json.get(`/groups/${crowd}/members?itemsPerPage=500&_attributes=groups.members`)).body,
    );
    assert.equal(iris.length, 400);
    const page = list(
      (await json.get(`/groups/${crowd}/members?itemsPerPage=500&_attributes=groups.members.user`)).body,
    );
    assert.equal(page.length, 400);
    const [group] = list(page[0]?.groups);
    assert.equal(list(group?.members).length, 400);
  });

  it("a write's answer past the budget is counted after the change: its 400 says the write was done", async () => {
    const json = keyClient(sb, 'application/json');
    const crowd = sb.data.groupByAccount('crowd')?.id ?? assert.fail('no crowd');
    const outsider = userId(sb, 'outsider');
    const refused = await json.post(
      `/groups/${crowd}/members?_attributes=members.groups.members.groups.members.user`,
      { addedMembers: [`/iserv/idm/api/v1/users/${outsider}`] },
    );
    assert.match(String(assertProblem(refused, 400).detail), /The write itself was done/);
    assert.ok(sb.data.memberships.rightOf(outsider).includes(crowd), 'the member was added');
  });
});
