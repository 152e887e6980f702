import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../src/lib/clock.js';
import { uuidToBase58 } from '../src/lib/uuid.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import {
  api,
  assertProblem,
  type Client,
  groupId,
  keyClient,
  list,
  obj,
  sandbox,
  userId,
  violationPaths,
} from './sandbox-helpers.js';

const BASE = '/iserv/idm/api/v1';
const iri = (kind: string, id: string) => `${BASE}/${kind}/${uuidToBase58(id)}`;
const START = Date.parse('2026-03-02T10:00:00Z');
const DAY = 24 * 3600 * 1000;

describe('sandbox writes', () => {
  let sb: RunningSandbox;
  let client: Client;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(START);
    sb = await sandbox({ clock, retentionSeconds: 7 * 24 * 3600 });
    client = keyClient(sb);
  });
  after(() => sb.close());
  beforeEach(() => clock.set(START));

  const roleId = (role: string) => sb.data.roleByName(role)?.id ?? assert.fail(`no role ${role}`);
  const privilegeId = (key: string) => sb.data.privilegeByKey(key)?.id ?? assert.fail(`no privilege ${key}`);
  const flagId = (name: string) => sb.data.groupFlagByName(name)?.id ?? assert.fail(`no flag ${name}`);

  async function createUser(account: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await client.post('/users', {
      user: account,
      firstname: 'Test',
      lastname: account,
      ...extra,
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return String(obj(res.body).hexUuid);
  }

  describe('users', () => {
    it('creates a user: 201, Location, defaults, createdBy admin, created from the clock', async () => {
      const res = await client.post('/users', {
        user: 'new.teacher',
        firstname: 'Nora',
        lastname: 'Neu',
        auxInfo: 'Mathe',
        importId: 'SVW-9000',
        emailAddress: 'nora@example.org',
        type: 'teacher',
      });
      assert.equal(res.status, 201);
      const body = obj(res.body);
      const id = String(body.hexUuid);
      assert.equal(res.headers.get('location'), iri('users', id));
      assert.deepEqual(
        { ...body, hexUuid: undefined, uuid: undefined },
        {
          hexUuid: undefined,
          uuid: undefined,
          user: 'new.teacher',
          firstname: 'Nora',
          lastname: 'Neu',
          auxInfo: 'Mathe',
          importId: 'SVW-9000',
          emailAddress: 'nora@example.org',
          locked: false,
          deleted: null,
          status: 'active',
          type: 'teacher',
          created: '2026-03-02T10:00:00+00:00',
          createdBy: iri('users', userId(sb, 'admin')),
          lastLogin: null,
          deletedBy: null,
          groups: [],
          roles: [],
          privileges: [],
        },
      );
      assert.deepEqual((await client.get(`/users/${id}`)).body, body);
      assert.equal(sb.data.userByAccount('new.teacher')?.id, id);
    });

    it('honours _attributes and JSON-LD on write responses', async () => {
      const res = await client.post(
        '/users?_attributes=user,status',
        { user: 'attr.user', firstname: 'A', lastname: 'B', status: 'registered' },
        { accept: 'application/ld+json' },
      );
      const body = obj(res.body);
      assert.equal(res.headers.get('content-type'), 'application/ld+json; charset=utf-8');
      assert.deepEqual(Object.keys(body), ['@context', '@id', '@type', 'user', 'status']);
      assert.equal(body.status, 'registered');
    });

    it('refuses a bad _attributes with 400 before writing anything', async () => {
      // The handlers render their answer after the write: the 400 for the selection came after
      // the user was created, patched or linked.
      const created = assertProblem(
        await client.post('/users?_attributes=nope', { user: 'attr.refused', firstname: 'A', lastname: 'B' }),
        400,
      );
      assert.match(String(created.detail), /Unknown attribute "nope"/);
      assert.equal(sb.data.userByAccount('attr.refused'), undefined);

      const lena = userId(sb, 'lena.mueller');
      assertProblem(await client.patch(`/users/${lena}?_attributes=nope`, { firstname: 'Changed' }), 400);
      assert.equal(sb.data.users.get(lena)?.firstname, 'Lena');

      const robotik = groupId(sb, 'ag.robotik');
      assertProblem(
        await client.post(`/groups/${robotik}/members?_attributes=members.nope`, {
          addedMembers: [iri('users', lena)],
        }),
        400,
      );
      assert.equal(sb.data.memberships.has(lena, robotik), false);
      assertProblem(
        await client.post('/roles?_attributes=constructor.x', { role: 'ROLE_REFUSED', name: 'Refused' }),
        400,
      );
      assert.equal(sb.data.roleByName('ROLE_REFUSED'), undefined);
    });

    it('answers 422 with violations for missing, duplicate and invalid values, and creates nothing', async () => {
      const before = sb.data.users.size;
      const missing = assertProblem(await client.post('/users', { user: '' }), 422);
      assert.deepEqual(violationPaths(missing), ['user', 'firstname', 'lastname']);
      const taken = assertProblem(
        await client.post('/users', { user: 'admin', firstname: 'X', lastname: 'Y' }),
        422,
      );
      assert.deepEqual(violationPaths(taken), ['user']);
      const groupAccount = await client.post('/users', { user: 'lehrer', firstname: 'X', lastname: 'Y' });
      assert.deepEqual(
        violationPaths(assertProblem(groupAccount, 422)),
        ['user'],
        'users and groups share accounts',
      );
      const invalid = assertProblem(
        await client.post('/users', {
          user: 'Not Valid',
          firstname: 'X',
          lastname: 'Y',
          status: 'a',
          emailAddress: 'not-an-address',
        }),
        422,
      );
      assert.deepEqual(violationPaths(invalid), ['user', 'status', 'emailAddress']);
      assert.equal(sb.data.users.size, before);
    });

    it('answers 400 for malformed JSON, wrong types, unknown or read-only properties; 415 for a wrong content type', async () => {
      const before = sb.data.users.size;
      assertProblem(
        await client.post('/users', undefined, { raw: '{"user": ', contentType: 'application/json' }),
        400,
      );
      assertProblem(
        await client.post('/users', undefined, { raw: '[1,2]', contentType: 'application/json' }),
        400,
      );
      const types = assertProblem(
        await client.post('/users', { user: 'x.y', firstname: 1, lastname: 'Z', locked: 'yes' }),
        400,
      );
      assert.deepEqual(violationPaths(types), ['firstname', 'locked']);
      const unknown = assertProblem(
        await client.post('/users', { user: 'x.y', firstname: 'X', lastname: 'Y', shoeSize: 44 }),
        400,
      );
      assert.deepEqual(violationPaths(unknown), ['shoeSize']);
      assertProblem(
        await client.post('/users', { user: 'x.y', firstname: 'X', lastname: 'Y', created: '2020-01-01' }),
        400,
      );
      assertProblem(
        await client.post('/users', undefined, { raw: '{"user":"x.y"}', contentType: 'text/plain' }),
        415,
      );
      assert.equal(sb.data.users.size, before);
    });

    it('merge-patches a user; 415 without the merge-patch type; 403 for admin; 404 for unknown; 422/400 for bad values', async () => {
      const id = await createUser('patch.me', { auxInfo: '9a' });
      const res = await client.patch(`/users/${uuidToBase58(id)}`, {
        firstname: 'Patricia',
        auxInfo: null,
        locked: true,
        status: 'inactive',
      });
      assert.equal(res.status, 200);
      const body = obj(res.body);
      assert.equal(body.firstname, 'Patricia');
      assert.equal(body.lastname, 'patch.me', 'untouched fields stay');
      assert.equal(body.auxInfo, null);
      assert.equal(body.locked, true);
      assert.equal(body.status, 'inactive');
      assertProblem(
        await client.patch(`/users/${id}`, { firstname: 'X' }, { contentType: 'application/json' }),
        415,
      );
      assertProblem(await client.patch(`/users/${userId(sb, 'admin')}`, { firstname: 'Evil' }), 403);
      assert.equal(sb.data.userByAccount('admin')?.firstname, 'Sandbox');
      assertProblem(
        await client.patch('/users/00000000-0000-4000-8000-000000000000', { firstname: 'X' }),
        404,
      );
      assert.deepEqual(
        violationPaths(assertProblem(await client.patch(`/users/${id}`, { lastname: null }), 422)),
        ['lastname'],
      );
      assert.deepEqual(
        violationPaths(assertProblem(await client.patch(`/users/${id}`, { user: 'admin' }), 422)),
        ['user'],
      );
      assert.deepEqual(
        violationPaths(assertProblem(await client.patch(`/users/${id}`, { status: 'gone' }), 422)),
        ['status'],
      );
      assertProblem(await client.patch(`/users/${id}`, { locked: 'no' }), 400);
      assertProblem(await client.patch(`/users/${id}`, { hexUuid: id }), 400);
      assert.equal(sb.data.users.get(id)?.lastname, 'patch.me');
      const renamed = await client.patch(`/users/${id}`, { user: 'patched.account' });
      assert.equal(obj(renamed.body).user, 'patched.account');
    });

    it('soft-deletes (deleted, deletedBy), restores, and the user stays readable meanwhile', async () => {
      const id = await createUser('soft.delete');
      clock.advance(60_000);
      assert.equal((await client.delete(`/users/${id}`)).status, 204);
      const deleted = obj((await client.get(`/users/${id}`)).body);
      assert.equal(deleted.deleted, '2026-03-02T10:01:00+00:00');
      assert.equal(deleted.deletedBy, iri('users', userId(sb, 'admin')));
      assert.ok(list((await client.get('/users?deleted=true')).body).some((u) => u.hexUuid === id));
      assert.equal((await client.delete(`/users/${id}`)).status, 204, 'deleting again is fine');
      assert.equal((await client.post(`/users/${id}/restore`)).status, 204);
      const restored = obj((await client.get(`/users/${id}`)).body);
      assert.equal(restored.deleted, null);
      assert.equal(restored.deletedBy, null);
      assertProblem(await client.post('/users/00000000-0000-4000-8000-000000000000/restore'), 404);
    });

    it('purges soft-deleted users after the retention period (injected clock), with their links', async () => {
      const id = await createUser('purge.later');
      await client.post(`/users/${id}/groups`, { addedGroups: [iri('groups', groupId(sb, 'lehrer'))] });
      assert.equal((await client.delete(`/users/${id}`)).status, 204);
      clock.advance(7 * DAY - 1000);
      assert.equal((await client.get(`/users/${id}`)).status, 200, 'still inside the retention period');
      clock.advance(2000);
      assertProblem(await client.get(`/users/${id}`), 404);
      assert.equal(sb.data.users.has(id), false);
      assert.equal(sb.data.memberships.leftOf(groupId(sb, 'lehrer')).includes(id), false);
      assertProblem(await client.post(`/users/${id}/restore`), 404);
    });

    it('deletes for good with purge=true; protects admin; 404 for unknown users', async () => {
      const id = await createUser('purge.now');
      await client.post(`/groups/${groupId(sb, 'ag.robotik')}/members`, { addedMembers: [id] });
      assert.equal((await client.delete(`/users/${id}?purge=true`)).status, 204);
      assertProblem(await client.get(`/users/${id}`), 404);
      const members = list((await client.get(`/groups/${groupId(sb, 'ag.robotik')}/members`)).body);
      assert.ok(!members.some((m) => m.hexUuid === id));
      const admin = userId(sb, 'admin');
      assertProblem(await client.delete(`/users/${admin}`), 403);
      assertProblem(await client.delete(`/users/${admin}?purge=true`), 403);
      assert.equal(sb.data.users.get(admin)?.deleted, null);
      assertProblem(await client.delete('/users/00000000-0000-4000-8000-000000000000'), 404);
    });

    it('sets, resets and revokes passwords; the state is visible through data only', async () => {
      const id = await createUser('pass.word');
      assert.deepEqual(sb.data.passwordState(id), {
        hasPassword: false,
        hasAdminPassword: false,
        passwordIsTemporary: false,
      });
      assert.equal((await client.post(`/users/${id}/password`, { password: 'correct horse' })).status, 204);
      assert.ok(sb.data.verifyPassword(id, 'correct horse'));
      assert.deepEqual(
        violationPaths(assertProblem(await client.post(`/users/${id}/password`, { password: 'short' }), 422)),
        ['password'],
      );
      assertProblem(await client.post(`/users/${id}/password`, {}), 422);
      assertProblem(await client.post(`/users/${id}/password`, { password: 12345678 }), 400);
      assert.ok(sb.data.verifyPassword(id, 'correct horse'), 'a refused change changes nothing');
      const reset = await client.post(`/users/${id}/password/reset`);
      assert.equal(reset.status, 200);
      const temporary = String(obj(reset.body).password);
      assert.ok(temporary.length >= 8);
      assert.ok(sb.data.verifyPassword(id, temporary));
      assert.equal(sb.data.passwordState(id).passwordIsTemporary, true);

      assert.equal(
        (await client.post(`/users/${id}/admin_password`, { password: 'admin secret' })).status,
        204,
      );
      assert.ok(sb.data.verifyAdminPassword(id, 'admin secret'));
      const adminReset = await client.post(`/users/${id}/admin_password/reset`);
      assert.equal(adminReset.status, 200);
      assert.ok(sb.data.verifyAdminPassword(id, String(obj(adminReset.body).password)));
      assert.equal((await client.delete(`/users/${id}/admin_password`)).status, 204);
      assert.equal(sb.data.passwordState(id).hasAdminPassword, false);

      const admin = userId(sb, 'admin');
      assert.equal((await client.delete(`/users/${admin}/admin_password`)).status, 204);
      assert.ok(
        sb.data.userRoles.has(admin, roleId('ROLE_ADMIN')),
        'revoking the admin password keeps ROLE_ADMIN',
      );
      const user = obj((await client.get(`/users/${id}`)).body);
      assert.ok(!JSON.stringify(user).includes('assword'));
      assertProblem(await client.post('/users/00000000-0000-4000-8000-000000000000/password/reset'), 404);
    });
  });

  describe('relations: one store, visible from both sides', () => {
    it('adds groups to a user with IRIs in either id form or bare UUIDs; members see it; adding twice is fine', async () => {
      const id = await createUser('link.groups');
      const klasse = groupId(sb, 'klasse.5a');
      const robotik = groupId(sb, 'ag.robotik');
      const res = await client.post(`/users/${id}/groups?_attributes=groups.group`, {
        addedGroups: [iri('groups', klasse), `${BASE}/groups/${robotik}`, klasse],
      });
      assert.equal(res.status, 200);
      assert.deepEqual(obj(res.body).groups, [{ group: 'klasse.5a' }, { group: 'ag.robotik' }]);
      const members = list((await client.get(`/groups/${klasse}/members?_attributes=user`)).body);
      assert.ok(members.some((m) => m.user === 'link.groups'));
      const group = obj((await client.get(`/groups/${robotik}`)).body);
      assert.ok((group.members as string[]).includes(iri('users', id)));
      assert.equal(
        (await client.post(`/users/${id}/groups`, { addedGroups: [iri('groups', klasse)] })).status,
        200,
      );

      assert.equal((await client.delete(`/users/${id}/groups/${uuidToBase58(klasse)}`)).status, 204);
      assert.equal(sb.data.memberships.has(id, klasse), false);
      assert.equal(
        (await client.delete(`/users/${id}/groups/${klasse}`)).status,
        204,
        'not linked any more: still 204',
      );
      assertProblem(await client.delete(`/users/${id}/groups/00000000-0000-4000-8000-000000000000`), 404);
      assertProblem(await client.delete(`/users/00000000-0000-4000-8000-000000000000/groups/${klasse}`), 404);
    });

    it('refuses a link request with any unknown or wrong-kind IRI (422) and changes nothing', async () => {
      const id = await createUser('link.refused');
      const lehrer = iri('groups', groupId(sb, 'lehrer'));
      const res = await client.post(`/users/${id}/groups`, {
        addedGroups: [
          lehrer,
          `${BASE}/groups/00000000-0000-4000-8000-000000000000`,
          iri('users', id),
          'junk',
        ],
      });
      assert.deepEqual(violationPaths(assertProblem(res, 422)), [
        'addedGroups[1]',
        'addedGroups[2]',
        'addedGroups[3]',
      ]);
      assert.deepEqual(sb.data.memberships.rightOf(id), []);
      assert.deepEqual(violationPaths(assertProblem(await client.post(`/users/${id}/groups`, {}), 422)), [
        'addedGroups',
      ]);
      assertProblem(await client.post(`/users/${id}/groups`, { addedGroups: lehrer }), 400);
      assertProblem(await client.post(`/users/${id}/groups`, { addedMembers: [lehrer] }), 400);
      assertProblem(
        await client.post(`/users/00000000-0000-4000-8000-000000000000/groups`, { addedGroups: [lehrer] }),
        404,
      );
    });

    it('links roles and direct privileges to users', async () => {
      const id = await createUser('link.roles');
      const teacher = roleId('ROLE_TEACHER');
      const colour = privilegeId('print_colour');
      const roles = await client.post(`/users/${id}/roles`, { addedRoles: [iri('roles', teacher)] });
      assert.deepEqual(obj(roles.body).roles, [iri('roles', teacher)]);
      assert.ok(
        list((await client.get(`/roles/${teacher}/users?_attributes=user`)).body).some(
          (u) => u.user === 'link.roles',
        ),
      );
      const privileges = await client.post(`/users/${id}/privileges`, { addedPrivileges: [colour] });
      assert.deepEqual(obj(privileges.body).privileges, [iri('privileges', colour)]);
      assert.equal((await client.delete(`/users/${id}/roles/${teacher}`)).status, 204);
      assert.equal((await client.delete(`/users/${id}/privileges/${colour}`)).status, 204);
      const after = obj((await client.get(`/users/${id}`)).body);
      assert.deepEqual([after.roles, after.privileges], [[], []]);
    });

    it('adds and removes group members, privileges and flags; the other side sees it', async () => {
      const group = groupId(sb, 'klasse.7b');
      const id = await createUser('link.member');
      const members = await client.post(`/groups/${group}/members`, { addedMembers: [iri('users', id)] });
      assert.ok((obj(members.body).members as string[]).includes(iri('users', id)));
      assert.deepEqual(obj((await client.get(`/users/${id}`)).body).groups, [iri('groups', group)]);
      assert.equal((await client.delete(`/groups/${group}/members/${uuidToBase58(id)}`)).status, 204);
      assert.deepEqual(obj((await client.get(`/users/${id}`)).body).groups, []);

      const share = privilegeId('files_share_groups');
      await client.post(`/groups/${group}/privileges`, { addedPrivileges: [iri('privileges', share)] });
      const privilege = obj((await client.get(`/privileges/${share}`)).body);
      assert.ok((privilege.groups as string[]).includes(iri('groups', group)));
      assert.equal((await client.delete(`/groups/${group}/privileges/${share}`)).status, 204);
      assert.ok(
        !(obj((await client.get(`/privileges/${share}`)).body).groups as string[]).includes(
          iri('groups', group),
        ),
      );

      const list1 = flagId('mail_list');
      const flagged = await client.post(`/groups/${group}/group_flags?_attributes=flags.name`, {
        addedFlags: [iri('group_flags', list1)],
      });
      assert.deepEqual(obj(flagged.body).flags, [{ name: 'has_home' }, { name: 'mail_list' }]);
      assert.equal((await client.delete(`/groups/${group}/group_flags/${list1}`)).status, 204);
      assert.deepEqual(sb.data.groupFlagLinks.rightOf(group), [flagId('has_home')]);
      assertProblem(
        await client.delete(`/groups/${group}/group_flags/00000000-0000-4000-8000-000000000000`),
        404,
      );
    });

    it('links privileges to roles, visible from the privilege', async () => {
      const student = roleId('ROLE_STUDENT');
      const blocked = privilegeId('internet_blocked');
      const res = await client.post(`/roles/${student}/privileges`, {
        addedPrivileges: [iri('privileges', blocked)],
      });
      assert.deepEqual(obj(res.body).privileges, [iri('privileges', blocked)]);
      assert.deepEqual(obj((await client.get(`/privileges/${blocked}`)).body).roles, [iri('roles', student)]);
      assert.equal((await client.delete(`/roles/${student}/privileges/${blocked}`)).status, 204);
      assert.deepEqual(obj((await client.get(`/privileges/${blocked}`)).body).roles, []);
    });
  });

  describe('groups and roles', () => {
    it('creates a group with the account derived from the name, or given, with an owner', async () => {
      const res = await client.post('/groups', { name: 'Klasse 9 Übung' });
      assert.equal(res.status, 201);
      const body = obj(res.body);
      assert.equal(body.group, 'klasse.9.uebung');
      // Decomposed (`U` and U+0308, as macOS writes names): the same name and account, taken (422).
      const decomposed = await client.post('/groups', { name: 'Klasse 9 U\u0308bung' });
      assert.deepEqual(violationPaths(assertProblem(decomposed, 422)), ['name', 'name']);
      assert.match(JSON.stringify(decomposed.body), /A group with this name already exists/);
      assert.deepEqual(
        [body.owner, body.home, body.privileges, body.flags, body.members, body.deleted],
        [null, null, [], [], [], null],
      );
      assert.equal(body.createdBy, iri('users', userId(sb, 'admin')));
      assert.equal(res.headers.get('location'), iri('groups', String(body.hexUuid)));
      const owned = obj(
        (
          await client.post('/groups', {
            name: 'Theater AG',
            group: 'ag.theater',
            owner: iri('users', userId(sb, 'thomas.becker')),
          })
        ).body,
      );
      assert.equal(owned.group, 'ag.theater');
      assert.equal(owned.owner, iri('users', userId(sb, 'thomas.becker')));
    });

    it('refuses bad groups with 422: missing name, duplicates, taken accounts, unknown owner', async () => {
      const before = sb.data.groups.size;
      assert.deepEqual(violationPaths(assertProblem(await client.post('/groups', {}), 422)), ['name']);
      assert.deepEqual(violationPaths(assertProblem(await client.post('/groups', { name: 'Lehrer' }), 422)), [
        'name',
        'name',
      ]);
      assert.deepEqual(
        violationPaths(assertProblem(await client.post('/groups', { name: 'Other', group: 'admin' }), 422)),
        ['group'],
      );
      assert.deepEqual(violationPaths(assertProblem(await client.post('/groups', { name: '!!!' }), 422)), [
        'name',
      ]);
      assert.deepEqual(
        violationPaths(
          assertProblem(
            await client.post('/groups', {
              name: 'Owned',
              owner: `${BASE}/users/00000000-0000-4000-8000-000000000000`,
            }),
            422,
          ),
        ),
        ['owner'],
      );
      assertProblem(await client.post('/groups', { name: 'Typed', group: 5 }), 400);
      // 33 `ä` are a short name, but 66 characters of account: the violation says which is too long.
      const long = assertProblem(await client.post('/groups', { name: 'ä'.repeat(33) }), 422);
      assert.deepEqual(
        (long.violations as { propertyPath: string; message: string }[]).map((v) => [
          v.propertyPath,
          v.message,
        ]),
        [
          [
            'name',
            'The account derived from this value is too long (66 characters). It should have 64 characters or less.',
          ],
        ],
      );
      assert.equal(sb.data.groups.size, before);
    });

    it('merge-patches a group (name, account, owner set and cleared); admins is protected', async () => {
      const id = String(obj((await client.post('/groups', { name: 'Patch Group' })).body).hexUuid);
      const owner = iri('users', userId(sb, 'claudia.hoffmann'));
      const res = await client.patch(`/groups/${id}`, {
        owner,
        name: 'Patched Group',
        group: 'patched.group',
      });
      assert.equal(res.status, 200);
      assert.deepEqual(
        [obj(res.body).owner, obj(res.body).name, obj(res.body).group],
        [owner, 'Patched Group', 'patched.group'],
      );
      const owned = obj((await client.get(`/groups/${id}?_attributes=owner.user`)).body);
      assert.deepEqual(owned.owner, { user: 'claudia.hoffmann' });
      assert.equal(obj((await client.patch(`/groups/${id}`, { owner: null })).body).owner, null);
      assertProblem(await client.patch(`/groups/${groupId(sb, 'admins')}`, { owner: null }), 403);
      assertProblem(await client.patch(`/groups/${id}`, { owner: 'nobody' }), 422);
      assertProblem(await client.patch(`/groups/${id}`, { members: [] }), 400);
      assertProblem(
        await client.patch(`/groups/${id}`, { name: 'X' }, { contentType: 'application/json' }),
        415,
      );
    });

    it('soft-deletes, restores and purges groups; admins cannot be deleted', async () => {
      const id = String(obj((await client.post('/groups', { name: 'Short Lived' })).body).hexUuid);
      await client.post(`/groups/${id}/members`, { addedMembers: [userId(sb, 'mia.fischer')] });
      assert.equal((await client.delete(`/groups/${id}`)).status, 204);
      const deleted = obj((await client.get(`/groups/${id}`)).body);
      assert.equal(deleted.deleted, '2026-03-02T10:00:00+00:00');
      assert.equal(deleted.deletedBy, iri('users', userId(sb, 'admin')));
      assert.equal((await client.post(`/groups/${id}/restore`)).status, 204);
      assert.equal(obj((await client.get(`/groups/${id}`)).body).deleted, null);
      assert.equal((await client.delete(`/groups/${id}?purge=true`)).status, 204);
      assertProblem(await client.get(`/groups/${id}`), 404);
      assert.ok(!sb.data.groupsOf(userId(sb, 'mia.fischer')).some((g) => g.id === id));
      assertProblem(await client.delete(`/groups/${groupId(sb, 'admins')}`), 403);
    });

    it('creates and deletes roles; ROLE_ADMIN is protected', async () => {
      const res = await client.post('/roles', {
        role: 'ROLE_LIBRARIAN',
        name: 'Librarian',
        module: 'Library',
      });
      assert.equal(res.status, 201);
      const id = String(obj(res.body).hexUuid);
      assert.deepEqual(obj(res.body).privileges, []);
      assert.deepEqual(
        violationPaths(
          assertProblem(await client.post('/roles', { role: 'ROLE_LIBRARIAN', name: 'Again' }), 422),
        ),
        ['role'],
      );
      assert.deepEqual(
        violationPaths(assertProblem(await client.post('/roles', { role: 'librarian', name: 'Bad' }), 422)),
        ['role'],
      );
      assert.deepEqual(violationPaths(assertProblem(await client.post('/roles', { role: 'ROLE_X' }), 422)), [
        'name',
      ]);
      const user = await createUser('role.holder');
      await client.post(`/users/${user}/roles`, { addedRoles: [id] });
      assert.equal((await client.delete(`/roles/${id}`)).status, 204);
      assertProblem(await client.get(`/roles/${id}`), 404);
      assert.deepEqual(obj((await client.get(`/users/${user}`)).body).roles, []);
      assertProblem(await client.delete(`/roles/${roleId('ROLE_ADMIN')}`), 403);
    });
  });

  describe('routing errors', () => {
    it('answers 405 with Allow for a wrong method on a known path, 404 for unknown paths', async () => {
      const id = userId(sb, 'admin');
      const put = await client.get(`/users/${id}`, { method: 'PUT' });
      assertProblem(put, 405);
      assert.equal(put.headers.get('allow'), 'GET, PATCH, DELETE, HEAD');
      assertProblem(await client.get(`/users/${id}/roles`), 405);
      assertProblem(await client.delete('/users'), 405);
      assertProblem(await client.get('/nothing/here'), 404);
      assertProblem(await api(sb, '/users', { method: 'PATCH', apiKey: sb.apiKey, json: {} }), 405);
    });
  });
});
