// The six Role operations through the proxy: list (privileges with `extended`), create from
// name/module/privileges with the technical key derived by the mapping rule, get, delete (403 for
// ROLE_ADMIN), link/unlink privileges; no update (405); bad input 400 and nothing changed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ROLE_EXTENDED_FIELDS,
  ROLE_FIELDS,
  ROLE_LIST_FIELDS,
  roleListItemSchema,
  roleSchema,
} from '../src/legacy/role/schema.js';
import {
  assertMethodsNotAllowed,
  type ErrorBody,
  privilegeLinks,
  rolePrivileges,
  snapshot,
} from './relation-helpers.js';
import { linksOf, startUserProxy, type UserProxy } from './user-helpers.js';

type Role = { name: string; module: string | null; privileges: string[]; _id: string };

const sorted = (list: readonly string[]) => [...list].sort();

describe('roles', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  describe('reads', () => {
    it('lists roles with name, module, _id; extended adds privileges; one successor read', async () => {
      proxy.resetCounts();
      const plain = await proxy.call<Role[]>('GET', '/Entity/Role');
      assert.equal(plain.status, 200, plain.text);
      for (const item of plain.body) {
        assert.deepEqual(Object.keys(item), [...ROLE_LIST_FIELDS]);
        roleListItemSchema.strict().parse(item);
      }
      assert.deepEqual(
        plain.body.find((r) => r._id === 'ROLE_TEACHER'),
        {
          name: 'Teacher',
          module: 'Core',
          _id: 'ROLE_TEACHER',
        },
      );
      assert.deepEqual(proxy.apiCalls(), { 'GET /roles': 1 });
      proxy.resetCounts();
      const extended = await proxy.call<Role[]>('GET', '/Entity/Role?extended=1');
      for (const item of extended.body)
        assert.deepEqual(Object.keys(item), [...ROLE_LIST_FIELDS, ...ROLE_EXTENDED_FIELDS]);
      assert.deepEqual(sorted(extended.body.find((r) => r._id === 'ROLE_TEACHER')?.privileges ?? []), [
        'calendar_public_edit',
        'files_share_groups',
        'mail_external',
      ]);
      assert.deepEqual(proxy.apiCalls(), { 'GET /roles': 1 }, 'no call per role');
    });

    it('reads a role with every field and _id', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Role>('GET', '/Entity/Role/ROLE_ADMIN');
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(Object.keys(answer.body), [...ROLE_FIELDS]);
      roleSchema.strict().parse(answer.body);
      assert.deepEqual(
        { ...answer.body, privileges: sorted(answer.body.privileges) },
        {
          name: 'Administrator',
          module: 'Core',
          privileges: ['core_manage_users', 'print_colour'],
          _id: 'ROLE_ADMIN',
        },
      );
      assert.deepEqual(proxy.apiCalls(), { 'GET /roles': 1 });
    });

    it('answers 404 for an unknown role', async () => {
      const answer = await proxy.call<ErrorBody>('GET', '/Entity/Role/ROLE_NOPE');
      assert.equal(answer.status, 404, answer.text);
      assert.match(answer.body.message, /No role with ID "ROLE_NOPE"/);
    });

    it('has no update: PUT (and other methods the seed lacks) answer 405 with Allow', async () => {
      await assertMethodsNotAllowed(
        proxy,
        [
          ['PUT', '/Entity/Role/ROLE_TEACHER', 'GET, HEAD, DELETE'],
          ['PATCH', '/Entity/Role/ROLE_TEACHER', 'GET, HEAD, DELETE'],
          ['POST', '/Entity/Role/ROLE_TEACHER', 'GET, HEAD, DELETE'],
          ['PUT', '/Entity/Role', 'GET, HEAD, POST'],
          ['GET', '/Entity/Role/ROLE_TEACHER/link/privileges', 'POST, DELETE'],
        ],
        { name: 'Renamed' },
      );
    });
  });

  describe('create', () => {
    it('creates a role; its legacy ID is the technical key derived from the name', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Role>('POST', '/Entity/Role', {
        name: 'Fachschaft Mathe',
        module: 'Core',
      });
      assert.equal(answer.status, 201, answer.text);
      assert.deepEqual(Object.keys(answer.body), [...ROLE_FIELDS]);
      roleSchema.strict().parse(answer.body);
      assert.deepEqual(answer.body, {
        name: 'Fachschaft Mathe',
        module: 'Core',
        privileges: [],
        _id: 'ROLE_FACHSCHAFT_MATHE',
      });
      assert.equal(
        answer.headers.get('location'),
        `${proxy.url}/iserv/api/Service/Core/Entity/Role/ROLE_FACHSCHAFT_MATHE`,
      );
      assert.deepEqual(proxy.apiCalls(), { 'POST /roles': 1 }, 'no privileges: no second call');
      const stored = proxy.sandbox.data.roleByName('ROLE_FACHSCHAFT_MATHE');
      assert.equal(stored?.name, 'Fachschaft Mathe');
      assert.equal(stored?.module, 'Core');
      const read = await proxy.call<Role>('GET', '/Entity/Role/ROLE_FACHSCHAFT_MATHE');
      assert.equal(read.status, 200, read.text);
    });

    it('transliterates the name for the key and grants the given privileges', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Role>('POST', '/Entity/Role', {
        name: 'Übungsleitung Sport-Halle',
        module: 'Sport',
        privileges: ['print_colour', 'mail_external', 'print_colour'],
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body._id, 'ROLE_UEBUNGSLEITUNG_SPORT_HALLE');
      assert.deepEqual(sorted(answer.body.privileges), ['mail_external', 'print_colour']);
      assert.deepEqual(rolePrivileges(proxy, 'ROLE_UEBUNGSLEITUNG_SPORT_HALLE'), [
        'mail_external',
        'print_colour',
      ]);
      assert.deepEqual(proxy.apiCalls(), {
        'GET /privileges': 1,
        'POST /roles': 1,
        'POST /roles/{id}/privileges': 1,
      });
      assert.ok(privilegeLinks(proxy, 'mail_external').roles.includes('ROLE_UEBUNGSLEITUNG_SPORT_HALLE'));
    });

    it('checks every privilege ID before writing: unknown ones are a 400 listing each, no role is created', async () => {
      const before = snapshot(proxy);
      proxy.resetCounts();
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
        name: 'Bibliothek',
        module: 'Library',
        privileges: ['print_colour', 'no_such', 'mail_external', 'gone_too'],
      });
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.body.message, /nothing was changed/);
      assert.deepEqual(answer.body.errors, [
        { path: 'body.privileges.1', message: 'no privilege with ID "no_such"' },
        { path: 'body.privileges.3', message: 'no privilege with ID "gone_too"' },
      ]);
      assert.deepEqual(proxy.apiCalls(), { 'GET /privileges': 1 }, 'one batched lookup, no write');
      assert.equal(proxy.sandbox.data.roleByName('ROLE_BIBLIOTHEK'), undefined);
      assert.equal(snapshot(proxy), before);
    });

    it('refuses bad bodies with 400 and creates nothing', async () => {
      const before = snapshot(proxy);
      for (const body of [
        {},
        { name: 'Ohne Modul' },
        { module: 'Core' },
        { name: '', module: 'Core' },
        { name: 'X', module: 5 },
        { name: 'X', module: 'Core', role: 'ROLE_X' },
        { name: 'X', module: 'Core', privileges: 'print_colour' },
        { name: 'X', module: 'Core', privileges: [1] },
        ['X'],
        '{"name": "X",',
      ]) {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>('POST', '/Entity/Role', body);
        assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
        assert.deepEqual(proxy.apiCalls(), {}, JSON.stringify(body));
      }
      const taken = await proxy.call<ErrorBody>('POST', '/Entity/Role', { name: 'Teacher', module: 'Core' });
      assert.equal(taken.status, 400, taken.text);
      assert.ok(
        taken.body.errors?.some((e) => /already exists/.test(e.message)),
        taken.text,
      );
      const noKey = await proxy.call<ErrorBody>('POST', '/Entity/Role', { name: '!!!', module: 'Core' });
      assert.equal(noKey.status, 400, noKey.text);
      // The successor's words are about the key derived from the name, which the caller never sent.
      assert.equal(noKey.body.errors?.[0]?.path, 'body.name', noKey.text);
      assert.equal(
        noKey.body.errors?.[0]?.message,
        'A role name needs letters or digits after ROLE_. (said of the value derived from name)',
        noKey.text,
      );
      const japanese = await proxy.call<ErrorBody>('POST', '/Entity/Role', {
        name: '日本語',
        module: 'Core',
      });
      assert.equal(japanese.status, 400, japanese.text);
      assert.match(
        japanese.body.errors?.[0]?.message ?? '',
        /^A role name needs letters or digits after ROLE_\./,
      );
      assert.equal(snapshot(proxy), before);
    });
  });

  describe('delete', () => {
    it('deletes a role for good (204); users and privileges no longer list it', async () => {
      assert.equal(
        (
          await proxy.call('POST', '/Entity/Role', {
            name: 'Kurzzeit',
            module: 'Core',
            privileges: ['print_colour'],
          })
        ).status,
        201,
      );
      const linked = await proxy.call('POST', '/Entity/User/thomas.becker/link/roles', ['ROLE_KURZZEIT']);
      assert.equal(linked.status, 200, linked.text);
      proxy.resetCounts();
      const answer = await proxy.call('DELETE', '/Entity/Role/ROLE_KURZZEIT');
      assert.equal(answer.status, 204, answer.text);
      assert.equal(answer.text, '');
      assert.deepEqual(proxy.apiCalls(), { 'DELETE /roles/{id}': 1 });
      assert.equal((await proxy.call('GET', '/Entity/Role/ROLE_KURZZEIT')).status, 404);
      assert.ok(!linksOf(proxy, 'thomas.becker').roles.includes('ROLE_KURZZEIT'));
      const user = await proxy.call<{ roles: string[] }>('GET', '/Entity/User/thomas.becker');
      assert.ok(!user.body.roles.includes('ROLE_KURZZEIT'), user.text);
      const privilege = await proxy.call<{ roles: string[] }>('GET', '/Entity/Privilege/print_colour');
      assert.ok(!privilege.body.roles.includes('ROLE_KURZZEIT'), privilege.text);
    });

    it('answers 403 for ROLE_ADMIN and 404 for an unknown role, deleting nothing', async () => {
      const before = snapshot(proxy);
      const admin = await proxy.call<ErrorBody>('DELETE', '/Entity/Role/ROLE_ADMIN');
      assert.equal(admin.status, 403, admin.text);
      assert.match(admin.body.message, /may not be deleted/);
      assert.ok(proxy.sandbox.data.roleByName('ROLE_ADMIN'));
      const unknown = await proxy.call<ErrorBody>('DELETE', '/Entity/Role/ROLE_NOPE');
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(snapshot(proxy), before);
    });
  });

  describe('privilege links', () => {
    it('grants privileges to a role, visible on each privilege', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Role>('POST', '/Entity/Role/ROLE_STUDENT/link/privileges', [
        'print_colour',
        'calendar_public_edit',
      ]);
      assert.equal(answer.status, 200, answer.text);
      roleSchema.strict().parse(answer.body);
      assert.deepEqual(sorted(answer.body.privileges), ['calendar_public_edit', 'print_colour']);
      assert.deepEqual(rolePrivileges(proxy, 'ROLE_STUDENT'), ['calendar_public_edit', 'print_colour']);
      assert.deepEqual(proxy.apiCalls(), {
        'GET /roles': 1,
        'GET /privileges': 1,
        'POST /roles/{id}/privileges': 1,
      });
      const privilege = await proxy.call<{ roles: string[] }>(
        'GET',
        '/Entity/Privilege/calendar_public_edit',
      );
      assert.ok(privilege.body.roles.includes('ROLE_STUDENT'), privilege.text);
    });

    it('refuses unknown privilege IDs with 400, and an unknown role with 404; nothing changes', async () => {
      const before = snapshot(proxy);
      for (const method of ['POST', 'DELETE']) {
        const unknown = await proxy.call<ErrorBody>(method, '/Entity/Role/ROLE_STUDENT/link/privileges', [
          'print_colour',
          'no_such',
        ]);
        assert.equal(unknown.status, 400, unknown.text);
        assert.deepEqual(unknown.body.errors, [
          { path: 'body.1', message: 'no privilege with ID "no_such"' },
        ]);
        const missing = await proxy.call<ErrorBody>(method, '/Entity/Role/ROLE_NOPE/link/privileges', [
          'print_colour',
        ]);
        assert.equal(missing.status, 404, missing.text);
        const bad = await proxy.call<ErrorBody>(method, '/Entity/Role/ROLE_STUDENT/link/privileges', {
          privileges: ['print_colour'],
        });
        assert.equal(bad.status, 400, bad.text);
      }
      assert.equal(snapshot(proxy), before);
    });

    it('takes privileges from a role, ignoring ones it does not hold', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Role>('DELETE', '/Entity/Role/ROLE_STUDENT/link/privileges', [
        'print_colour',
        'core_manage_users',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body.privileges, ['calendar_public_edit']);
      assert.deepEqual(rolePrivileges(proxy, 'ROLE_STUDENT'), ['calendar_public_edit']);
      assert.ok(!privilegeLinks(proxy, 'print_colour').roles.includes('ROLE_STUDENT'));
      assert.deepEqual(proxy.apiCalls(), {
        'GET /roles': 1,
        'GET /privileges': 1,
        'DELETE /roles/{id}/privileges/{privilegeId}': 2,
        'GET /roles/{id}': 1,
      });
    });

    it('answers 404 for a cached role deleted elsewhere (another replica), not "the change went through"', async () => {
      const roles: string[] = [];
      for (const name of ['Vergangen', 'Verflossen']) {
        const created = await proxy.call<Role>('POST', '/Entity/Role', { name, module: 'Core' });
        assert.equal(created.status, 201, created.text);
        roles.push(created.body._id);
        // The ID cache holds the role; then it is deleted behind this proxy's back.
        assert.equal((await proxy.call('GET', `/Entity/Role/${created.body._id}`)).status, 200);
        assert.ok(
          proxy.sandbox.data.purge('roles', proxy.sandbox.data.roleByName(created.body._id)?.id ?? ''),
        );
      }
      const [unlinked, linked] = roles;
      const before = snapshot(proxy);
      // One item: the unlink is its DELETE (a tolerated 404) and the read for the answer.
      const unlink = await proxy.call<ErrorBody>('DELETE', `/Entity/Role/${unlinked}/link/privileges`, [
        'print_colour',
      ]);
      assert.equal(unlink.status, 404, unlink.text);
      assert.equal(unlink.body.message, `No role with ID "${unlinked}"`);
      // A write's own 404 reads like every other unknown path entity.
      const link = await proxy.call<ErrorBody>('POST', `/Entity/Role/${linked}/link/privileges`, [
        'print_colour',
      ]);
      assert.equal(link.status, 404, link.text);
      assert.equal(link.body.message, `No role with ID "${linked}"`);
      assert.equal(snapshot(proxy), before);
    });
  });
});
