// The six Privilege operations through the proxy: list (title, module, groups, roles, _id — the
// relations always included), get, link/unlink roles and groups. The successor links privileges
// from the role's or group's side, so a link call with k IDs is k writes (after one batched
// resolution of all k); no create, update or delete (405).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  PRIVILEGE_FIELDS,
  PRIVILEGE_LIST_FIELDS,
  privilegeListItemSchema,
  privilegeSchema,
} from '../src/legacy/privilege/schema.js';
import {
  assertMethodsNotAllowed,
  type ErrorBody,
  groupLinks,
  onlyReads,
  privilegeLinks,
  rolePrivileges,
  snapshot,
} from './relation-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type Privilege = {
  module: string | null;
  description: string | null;
  inverted: boolean;
  groups: string[];
  roles: string[];
  _id: string;
};
type Item = { title: string; module: string; groups: string[]; roles: string[]; _id: string };

const sorted = (list: readonly string[]) => [...list].sort();

describe('privileges', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  describe('reads', () => {
    it('lists privileges with title, module, groups, roles, _id — with or without extended — in one read', async () => {
      for (const query of ['', '?extended=1', '?extended[]=']) {
        proxy.resetCounts();
        const answer = await proxy.call<Item[]>('GET', `/Entity/Privilege${query}`);
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.body.length, proxy.sandbox.data.privileges.size);
        for (const item of answer.body) {
          assert.deepEqual(Object.keys(item), [...PRIVILEGE_LIST_FIELDS], query);
          privilegeListItemSchema.strict().parse(item);
        }
        const mail = answer.body.find((p) => p._id === 'mail_external');
        assert.ok(mail);
        assert.deepEqual(
          { ...mail, groups: sorted(mail.groups), roles: sorted(mail.roles) },
          {
            title: 'External e-mail',
            module: 'Mail',
            groups: ['lehrer'],
            roles: ['ROLE_STAFF', 'ROLE_TEACHER'],
            _id: 'mail_external',
          },
        );
        assert.deepEqual(answer.body.find((p) => p._id === 'internet_blocked')?.groups, []);
        assert.deepEqual(proxy.apiCalls(), { 'GET /privileges': 1 }, `no call per privilege (${query})`);
      }
    });

    it('reads a privilege with module, description, inverted, groups, roles and _id', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Privilege>('GET', '/Entity/Privilege/internet_blocked');
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(Object.keys(answer.body), [...PRIVILEGE_FIELDS]);
      privilegeSchema.strict().parse(answer.body);
      assert.deepEqual(answer.body, {
        module: 'Internet',
        description: 'Holders cannot use the internet',
        inverted: true,
        groups: [],
        roles: [],
        _id: 'internet_blocked',
      });
      assert.deepEqual(proxy.apiCalls(), { 'GET /privileges': 1 });
      const colour = await proxy.call<Privilege>('GET', '/Entity/Privilege/print_colour');
      assert.equal(colour.body.inverted, false);
      assert.deepEqual(sorted(colour.body.roles), ['ROLE_ADMIN', 'ROLE_STAFF']);
      assert.deepEqual(colour.body.groups, ['klasse.7b']);
    });

    it('answers 404 for an unknown privilege', async () => {
      const answer = await proxy.call<ErrorBody>('GET', '/Entity/Privilege/no_such');
      assert.equal(answer.status, 404, answer.text);
      assert.match(answer.body.message, /No privilege with ID "no_such"/);
    });

    it('cannot be created, updated or deleted: 405 with Allow, nothing changes', async () => {
      await assertMethodsNotAllowed(
        proxy,
        [
          ['POST', '/Entity/Privilege', 'GET, HEAD'],
          ['PUT', '/Entity/Privilege', 'GET, HEAD'],
          ['DELETE', '/Entity/Privilege', 'GET, HEAD'],
          ['PUT', '/Entity/Privilege/print_colour', 'GET, HEAD'],
          ['POST', '/Entity/Privilege/print_colour', 'GET, HEAD'],
          ['DELETE', '/Entity/Privilege/print_colour', 'GET, HEAD'],
          ['PATCH', '/Entity/Privilege/print_colour', 'GET, HEAD'],
          ['GET', '/Entity/Privilege/print_colour/link/roles', 'POST, DELETE'],
          ['PUT', '/Entity/Privilege/print_colour/link/groups', 'POST, DELETE'],
        ],
        { title: 'x' },
      );
    });
  });

  describe('role links', () => {
    it('grants the privilege to roles: one batched lookup, one write per role, visible on the roles', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Privilege>('POST', '/Entity/Privilege/files_share_groups/link/roles', [
        'ROLE_STUDENT',
        'ROLE_STAFF',
        'ROLE_TEACHER',
      ]);
      assert.equal(answer.status, 200, answer.text);
      privilegeSchema.strict().parse(answer.body);
      assert.deepEqual(sorted(answer.body.roles), ['ROLE_STAFF', 'ROLE_STUDENT', 'ROLE_TEACHER']);
      assert.deepEqual(privilegeLinks(proxy, 'files_share_groups').roles, [
        'ROLE_STAFF',
        'ROLE_STUDENT',
        'ROLE_TEACHER',
      ]);
      assert.deepEqual(proxy.apiCalls(), {
        'GET /privileges': 1,
        'GET /roles': 1,
        'POST /roles/{id}/privileges': 3,
        'GET /privileges/{id}': 1,
      });
      const role = await proxy.call<{ privileges: string[] }>('GET', '/Entity/Role/ROLE_STUDENT');
      assert.ok(role.body.privileges.includes('files_share_groups'), role.text);
    });

    it('takes the privilege from roles, ignoring ones that do not hold it', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Privilege>(
        'DELETE',
        '/Entity/Privilege/files_share_groups/link/roles',
        ['ROLE_STUDENT', 'ROLE_ADMIN'],
      );
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(sorted(answer.body.roles), ['ROLE_STAFF', 'ROLE_TEACHER']);
      assert.deepEqual(rolePrivileges(proxy, 'ROLE_STUDENT'), []);
      assert.deepEqual(
        proxy.apiCalls(),
        {
          'GET /privileges': 1,
          'GET /roles': 1,
          'DELETE /roles/{id}/privileges/{privilegeId}': 2,
          'GET /privileges/{id}': 1,
        },
        'cold cache: the privilege with its roles, one batched lookup, one DELETE per role, the read-back',
      );
      const role = await proxy.call<{ privileges: string[] }>('GET', '/Entity/Role/ROLE_STUDENT');
      assert.deepEqual(role.body.privileges, []);
    });

    it('refuses unknown role IDs with 400 listing each, an unknown privilege with 404; nothing changes', async () => {
      const before = snapshot(proxy);
      for (const method of ['POST', 'DELETE']) {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>(
          method,
          '/Entity/Privilege/files_share_groups/link/roles',
          ['ROLE_NOPE', 'ROLE_STAFF', 'ROLE_GONE'],
        );
        assert.equal(answer.status, 400, answer.text);
        assert.deepEqual(answer.body.errors, [
          { path: 'body.0', message: 'no role with ID "ROLE_NOPE"' },
          { path: 'body.2', message: 'no role with ID "ROLE_GONE"' },
        ]);
        assert.ok(onlyReads(proxy.apiCalls()), JSON.stringify(proxy.apiCalls()));
        const missing = await proxy.call<ErrorBody>(method, '/Entity/Privilege/no_such/link/roles', [
          'ROLE_STAFF',
        ]);
        assert.equal(missing.status, 404, missing.text);
      }
      assert.equal(snapshot(proxy), before);
    });
  });

  describe('group links', () => {
    it('grants the privilege to groups, visible on the groups', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Privilege>('POST', '/Entity/Privilege/internet_blocked/link/groups', [
        'klasse.5a',
        'klasse.7b',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(sorted(answer.body.groups), ['klasse.5a', 'klasse.7b']);
      assert.deepEqual(proxy.apiCalls(), {
        'GET /privileges': 1,
        'GET /groups': 1,
        'POST /groups/{id}/privileges': 2,
        'GET /privileges/{id}': 1,
      });
      assert.ok(groupLinks(proxy, 'klasse.5a').privileges.includes('internet_blocked'));
      const group = await proxy.call<{ privileges: string[] }>('GET', '/Entity/Group/klasse.7b');
      assert.ok(group.body.privileges.includes('internet_blocked'), group.text);
    });

    it('takes the privilege from groups', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Privilege>('DELETE', '/Entity/Privilege/internet_blocked/link/groups', [
        'klasse.7b',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(
        proxy.apiCalls(),
        { 'DELETE /groups/{id}/privileges/{privilegeId}': 1, 'GET /privileges/{id}': 1 },
        'warm cache, one group (nothing to undo, so no read before): the write, the read-back',
      );
      assert.deepEqual(answer.body.groups, ['klasse.5a']);
      const group = await proxy.call<{ privileges: string[] }>('GET', '/Entity/Group/klasse.7b');
      assert.ok(!group.body.privileges.includes('internet_blocked'), group.text);
    });

    it('refuses unknown group IDs and bad bodies with 400; nothing changes', async () => {
      const before = snapshot(proxy);
      const unknown = await proxy.call<ErrorBody>('POST', '/Entity/Privilege/internet_blocked/link/groups', [
        'no.such.group',
      ]);
      assert.equal(unknown.status, 400, unknown.text);
      assert.deepEqual(unknown.body.errors, [
        { path: 'body.0', message: 'no group with ID "no.such.group"' },
      ]);
      for (const body of [{ groups: [] }, 'klasse.5a', [3]]) {
        const bad = await proxy.call<ErrorBody>(
          'DELETE',
          '/Entity/Privilege/internet_blocked/link/groups',
          body,
        );
        assert.equal(bad.status, 400, bad.text);
      }
      assert.equal(snapshot(proxy), before);
    });

    it('answers 400 (an unknown body ID, not 404) for a group purged behind its back while its ID was cached, looked up afresh once', async () => {
      // Two groups the proxy knows (their IDs cached), then purged at the successor without it.
      const created: string[] = [];
      for (const name of ['Gone One', 'Gone Two', 'Kept One']) {
        const answer = await proxy.call<{ _id: string }>('POST', '/Entity/Group', { name });
        assert.equal(answer.status, 201, answer.text);
        created.push(answer.body._id);
      }
      const [one = '', two = '', kept = ''] = created;
      for (const id of [one, two])
        proxy.sandbox.data.purge('groups', proxy.sandbox.data.groupByAccount(id)?.id ?? '');
      const before = snapshot(proxy);

      // The one write names the group alone; the successor has no such group. Its UUID came from
      // the cache, so the group is looked up afresh once (it might have been created again): unknown.
      proxy.resetCounts();
      const single = await proxy.call<ErrorBody>('POST', '/Entity/Privilege/internet_blocked/link/groups', [
        one,
      ]);
      assert.equal(single.status, 400, single.text);
      assert.match(single.body.message, new RegExp(`^Unknown group ID: "${one}"; nothing was changed`));
      assert.deepEqual(single.body.errors, [{ path: 'body.0', message: `no group with ID "${one}"` }]);
      assert.equal(proxy.apiCalls()['POST /groups/{id}/privileges'], 1);
      assert.equal(proxy.apiCalls()['GET /groups'], 1);

      // Its second write fails so: the first is rolled back, and the caller hears of the body ID.
      const partly = await proxy.call<ErrorBody>('POST', '/Entity/Privilege/internet_blocked/link/groups', [
        kept,
        two,
      ]);
      assert.equal(partly.status, 400, partly.text);
      assert.match(
        partly.body.message,
        new RegExp(
          `^Body ID "${two}" names nothing the successor still has\\. Partly applied: .*Rolled back`,
        ),
      );
      assert.deepEqual(partly.body.errors, [
        { path: 'body.0', message: 'applied, then rolled back' },
        {
          path: 'body.1',
          message: 'not applied: the successor no longer has it (removed since the call began)',
        },
      ]);
      assert.equal(snapshot(proxy), before);

      // The purged IDs are forgotten: asked again, they are unknown before anything is written.
      proxy.resetCounts();
      const again = await proxy.call<ErrorBody>('POST', '/Entity/Privilege/internet_blocked/link/groups', [
        two,
      ]);
      assert.equal(again.status, 400, again.text);
      assert.deepEqual(again.body.errors, [{ path: 'body.0', message: `no group with ID "${two}"` }]);
      assert.equal(proxy.apiCalls()['POST /groups/{id}/privileges'], undefined);
    });

    it('answers 404 for an unknown privilege, even with unknown group IDs in the body; nothing changes', async () => {
      const before = snapshot(proxy);
      for (const method of ['POST', 'DELETE']) {
        for (const body of [['klasse.5a'], ['no.such.group']]) {
          proxy.mappings.current().ids.clear();
          proxy.resetCounts();
          const answer = await proxy.call<ErrorBody>(method, '/Entity/Privilege/no_such/link/groups', body);
          assert.equal(answer.status, 404, `${method} ${JSON.stringify(body)}: ${answer.text}`);
          assert.equal(answer.body.code, 404);
          assert.match(answer.body.message, /No privilege with ID "no_such"/);
          assert.deepEqual(
            proxy.apiCalls(),
            { 'GET /privileges': 1, 'GET /groups': 1 },
            'the path entity and the body IDs are resolved side by side; no write',
          );
        }
      }
      assert.equal(snapshot(proxy), before);
    });
  });
});
