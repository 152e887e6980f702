// Linking users, privileges and group flags to a group through the proxy: bodies are JSON arrays
// of legacy IDs, all resolved in one batched read before anything is written (unknown → 400,
// nothing changed; unknown group → 404), both directions idempotent, every link visible from the
// other side, and the successor calls of each operation counted.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GROUP_FIELDS, groupSchema } from '../src/legacy/group/schema.js';
import { type ErrorBody, groupLinks, onlyReads, privilegeLinks, snapshot } from './relation-helpers.js';
import { linksOf, startUserProxy, type UserProxy } from './user-helpers.js';

type Group = { users: string[]; privileges: string[]; flags: string[] } & Record<string, unknown>;

const sorted = (list: readonly string[]) => [...list].sort();

describe('group links', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
    assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Schach AG' })).status, 201);
  });
  after(async () => {
    await proxy?.close();
  });

  describe('users', () => {
    it('adds members: one resolution of the group, one batched lookup of the users, one write', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Group>('POST', '/Entity/Group/schach.ag/link/users', [
        'thomas.becker',
        'lena.mueller',
        'jonas.schmidt',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(Object.keys(answer.body), [...GROUP_FIELDS]);
      groupSchema.strict().parse(answer.body);
      assert.deepEqual(sorted(answer.body.users), ['jonas.schmidt', 'lena.mueller', 'thomas.becker']);
      assert.deepEqual(groupLinks(proxy, 'schach.ag').users, [
        'jonas.schmidt',
        'lena.mueller',
        'thomas.becker',
      ]);
      assert.deepEqual(proxy.apiCalls(), {
        'GET /groups': 1,
        'GET /users': 1,
        'POST /groups/{id}/members': 1,
      });
    });

    it('is visible from the user side', async () => {
      const user = await proxy.call<{ groups: string[] }>('GET', '/Entity/User/lena.mueller');
      assert.equal(user.status, 200, user.text);
      assert.ok(user.body.groups.includes('schach.ag'), user.text);
      assert.ok(linksOf(proxy, 'lena.mueller').groups.includes('schach.ag'));
    });

    it('is idempotent: adding members again changes nothing and is not an error', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Group>('POST', '/Entity/Group/schach.ag/link/users', [
        'thomas.becker',
        'thomas.becker',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(groupLinks(proxy, 'schach.ag').users, [
        'jonas.schmidt',
        'lena.mueller',
        'thomas.becker',
      ]);
      assert.deepEqual(proxy.apiCalls(), { 'POST /groups/{id}/members': 1 }, 'warm cache: just the write');
    });

    it('refuses a body with unknown user IDs with 400 listing each, and writes nothing', async () => {
      const before = snapshot(proxy);
      for (const method of ['POST', 'DELETE']) {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>(method, '/Entity/Group/schach.ag/link/users', [
          'thomas.becker',
          'no.body',
          'lena.mueller',
          'nobody.else',
        ]);
        assert.equal(answer.status, 400, answer.text);
        assert.match(
          answer.body.message,
          /Unknown user IDs: "no\.body", "nobody\.else"; nothing was changed/,
        );
        assert.deepEqual(answer.body.errors, [
          { path: 'body.1', message: 'no user with ID "no.body"' },
          { path: 'body.3', message: 'no user with ID "nobody.else"' },
        ]);
        assert.ok(onlyReads(proxy.apiCalls()), JSON.stringify(proxy.apiCalls()));
      }
      assert.equal(snapshot(proxy), before);
    });

    it('removes members, ignoring ones that are not members, and answers the group', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Group>('DELETE', '/Entity/Group/schach.ag/link/users', [
        'thomas.becker',
        'jonas.schmidt',
        'mia.fischer',
      ]);
      assert.equal(answer.status, 200, answer.text);
      groupSchema.strict().parse(answer.body);
      assert.deepEqual(answer.body.users, ['lena.mueller']);
      assert.deepEqual(groupLinks(proxy, 'schach.ag').users, ['lena.mueller']);
      assert.ok(!linksOf(proxy, 'thomas.becker').groups.includes('schach.ag'));
      assert.deepEqual(proxy.apiCalls(), {
        'GET /groups': 1,
        'GET /users': 1,
        'DELETE /groups/{id}/members/{userId}': 3,
        'GET /groups/{id}': 1,
      });
      const again = await proxy.call<Group>('DELETE', '/Entity/Group/schach.ag/link/users', [
        'thomas.becker',
      ]);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body.users, ['lena.mueller']);
    });

    it('answers the group unchanged for an empty list, without writing', async () => {
      for (const method of ['POST', 'DELETE']) {
        proxy.resetCounts();
        const answer = await proxy.call<Group>(method, '/Entity/Group/schach.ag/link/users', []);
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(answer.body.users, ['lena.mueller']);
        assert.ok(onlyReads(proxy.apiCalls()));
      }
    });

    it('refuses bodies that are not arrays of ID strings', async () => {
      const before = snapshot(proxy);
      for (const body of [{ users: ['admin'] }, ['admin', 5], '"admin"', '[admin]', [''], '', [null]]) {
        for (const method of ['POST', 'DELETE']) {
          const answer = await proxy.call<ErrorBody>(method, '/Entity/Group/schach.ag/link/users', body);
          assert.equal(answer.status, 400, `${method} ${JSON.stringify(body)}: ${answer.text}`);
          assert.equal(answer.body.code, 400);
        }
      }
      assert.equal(snapshot(proxy), before);
    });

    it('answers 404 for an unknown group, even when the body has unknown IDs too', async () => {
      const before = snapshot(proxy);
      for (const path of ['users', 'assignedPrivileges', 'assignedFlags']) {
        for (const method of ['POST', 'DELETE']) {
          const answer = await proxy.call<ErrorBody>(method, `/Entity/Group/no.such.group/link/${path}`, [
            'nope',
          ]);
          assert.equal(answer.status, 404, `${method} ${path}: ${answer.text}`);
          assert.match(answer.body.message, /No group with ID "no\.such\.group"/);
        }
      }
      assert.equal(snapshot(proxy), before);
    });
  });

  describe('assigned privileges', () => {
    it('grants privileges to a group, visible on the privilege', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Group>('POST', '/Entity/Group/schach.ag/link/assignedPrivileges', [
        'print_colour',
        'calendar_public_edit',
      ]);
      assert.equal(answer.status, 200, answer.text);
      groupSchema.strict().parse(answer.body);
      assert.deepEqual(sorted(answer.body.privileges), ['calendar_public_edit', 'print_colour']);
      assert.deepEqual(groupLinks(proxy, 'schach.ag').privileges, ['calendar_public_edit', 'print_colour']);
      assert.deepEqual(proxy.apiCalls(), { 'GET /privileges': 1, 'POST /groups/{id}/privileges': 1 });
      const privilege = await proxy.call<{ groups: string[] }>('GET', '/Entity/Privilege/print_colour');
      assert.ok(privilege.body.groups.includes('schach.ag'), privilege.text);
    });

    it('refuses unknown privilege IDs with 400 and changes nothing', async () => {
      const before = snapshot(proxy);
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/Group/schach.ag/link/assignedPrivileges', [
        'mail_external',
        'no_such_privilege',
      ]);
      assert.equal(answer.status, 400, answer.text);
      assert.deepEqual(answer.body.errors, [
        { path: 'body.1', message: 'no privilege with ID "no_such_privilege"' },
      ]);
      assert.equal(snapshot(proxy), before);
    });

    it('takes privileges from a group (one DELETE per ID, held or not), visible on the privilege', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Group>('DELETE', '/Entity/Group/schach.ag/link/assignedPrivileges', [
        'print_colour',
        'mail_external',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body.privileges, ['calendar_public_edit']);
      assert.deepEqual(
        proxy.apiCalls(),
        {
          'GET /groups': 1,
          'GET /privileges': 1,
          'DELETE /groups/{id}/privileges/{privilegeId}': 2,
          'GET /groups/{id}': 1,
        },
        'cold cache: the group with its privileges, one batched lookup, the writes, the read-back',
      );
      assert.deepEqual(groupLinks(proxy, 'schach.ag').privileges, ['calendar_public_edit']);
      assert.ok(!privilegeLinks(proxy, 'print_colour').groups.includes('schach.ag'));
      const privilege = await proxy.call<{ groups: string[] }>('GET', '/Entity/Privilege/print_colour');
      assert.ok(!privilege.body.groups.includes('schach.ag'), privilege.text);
    });
  });

  describe('assigned flags', () => {
    it('sets group flags by their legacy IDs (the flag name) and shows them in the group', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Group>('POST', '/Entity/Group/schach.ag/link/assignedFlags', [
        'has_home',
        'hidden',
      ]);
      assert.equal(answer.status, 200, answer.text);
      groupSchema.strict().parse(answer.body);
      assert.deepEqual(sorted(answer.body.flags), ['has_home', 'hidden']);
      assert.deepEqual(groupLinks(proxy, 'schach.ag').flags, ['has_home', 'hidden']);
      assert.deepEqual(proxy.apiCalls(), {
        'GET /groups': 1,
        'GET /group_flags': 1,
        'POST /groups/{id}/group_flags': 1,
      });
      const list = await proxy.call<Group[]>('GET', '/Entity/Group?extended=1');
      const listed = list.body.find((g) => g._id === 'schach.ag');
      assert.deepEqual(sorted(listed?.flags ?? []), ['has_home', 'hidden']);
    });

    it('refuses unknown flag IDs with 400 and changes nothing', async () => {
      const before = snapshot(proxy);
      const answer = await proxy.call<ErrorBody>('DELETE', '/Entity/Group/schach.ag/link/assignedFlags', [
        'not_a_flag',
        'hidden',
      ]);
      assert.equal(answer.status, 400, answer.text);
      assert.deepEqual(answer.body.errors, [
        { path: 'body.0', message: 'no group flag with ID "not_a_flag"' },
      ]);
      assert.equal(snapshot(proxy), before);
    });

    it('clears group flags (one DELETE per ID, set or not)', async () => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<Group>('DELETE', '/Entity/Group/schach.ag/link/assignedFlags', [
        'hidden',
        'mail_list',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(
        proxy.apiCalls(),
        {
          'GET /groups': 1,
          'GET /group_flags': 1,
          'DELETE /groups/{id}/group_flags/{flagId}': 2,
          'GET /groups/{id}': 1,
        },
        'cold cache: the group with its flags, one batched lookup, the writes, the read-back',
      );
      assert.deepEqual(answer.body.flags, ['has_home']);
      assert.deepEqual(groupLinks(proxy, 'schach.ag').flags, ['has_home']);
    });
  });

  it('may change the links of the protected group (only PUT and DELETE are refused)', async () => {
    const added = await proxy.call<Group>('POST', '/Entity/Group/admins/link/users', ['thomas.becker']);
    assert.equal(added.status, 200, added.text);
    assert.ok(added.body.users.includes('thomas.becker'));
    const removed = await proxy.call<Group>('DELETE', '/Entity/Group/admins/link/users', ['thomas.becker']);
    assert.equal(removed.status, 200, removed.text);
    assert.ok(!removed.body.users.includes('thomas.becker'));
  });
});
