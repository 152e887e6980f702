// One end-to-end scenario driven the way a legacy integration (or a person with curl) drives the
// API: plain HTTP with Basic credentials and JSON bodies, nothing but the legacy paths. Create a
// group and a user, link them from both sides, grant privileges through a role and through the
// group, delete and restore the user, delete the group and the role.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type Json = Record<string, unknown> & { _id?: string };

describe('a legacy client runs a whole scenario', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  /** What `curl -u name:password -X METHOD -H 'Content-Type: application/json' -d BODY URL` does. */
  async function curl(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; location: string | null; json: Json & Json[] }> {
    const response = await fetch(`${proxy.url}/iserv/api/Service/Core${path}`, {
      method,
      headers: {
        authorization: proxy.authorization,
        accept: '*/*',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (text !== '') assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    return {
      status: response.status,
      location: response.headers.get('location'),
      json: (text === '' ? {} : JSON.parse(text)) as Json & Json[],
    };
  }

  const ids = (value: unknown) => [...(value as string[])].sort();

  it('creates, links, grants, deletes and restores through the legacy API alone', async () => {
    // 1. A group, from its name.
    const group = await curl('POST', '/Entity/Group', { name: 'Projekt Garten' });
    assert.equal(group.status, 201);
    assert.equal(group.json._id, 'projekt.garten');
    assert.ok(group.location?.endsWith('/Service/Core/Entity/Group/projekt.garten'));

    // 2. A user.
    const user = await curl('POST', '/Entity/User', {
      username: 'gina.gruen',
      firstname: 'Gina',
      lastname: 'Grün',
      status: 'a',
    });
    assert.equal(user.status, 201);
    assert.equal(user.json._id, 'gina.gruen');

    // 3. Link both ways: the user to the group, another user from the group's side.
    const joined = await curl('POST', '/Entity/User/gina.gruen/link/groups', ['projekt.garten']);
    assert.equal(joined.status, 200);
    assert.deepEqual(joined.json.groups, ['projekt.garten']);
    const members = await curl('POST', '/Entity/Group/projekt.garten/link/users', ['lena.mueller']);
    assert.equal(members.status, 200);
    assert.deepEqual(ids(members.json.users), ['gina.gruen', 'lena.mueller']);
    assert.ok(ids((await curl('GET', '/Entity/User/lena.mueller')).json.groups).includes('projekt.garten'));

    // 4. Privileges through a role: create it with one, give it another from the privilege side.
    const role = await curl('POST', '/Entity/Role', {
      name: 'Gärtner',
      module: 'Garden',
      privileges: ['files_share_groups'],
    });
    assert.equal(role.status, 201);
    assert.equal(role.json._id, 'ROLE_GAERTNER');
    assert.equal(role.location?.endsWith('/Service/Core/Entity/Role/ROLE_GAERTNER'), true);
    assert.equal((await curl('POST', '/Entity/User/gina.gruen/link/roles', ['ROLE_GAERTNER'])).status, 200);
    const viaPrivilege = await curl('POST', '/Entity/Privilege/print_colour/link/roles', ['ROLE_GAERTNER']);
    assert.equal(viaPrivilege.status, 200);
    assert.ok(ids(viaPrivilege.json.roles).includes('ROLE_GAERTNER'));
    assert.deepEqual(ids((await curl('GET', '/Entity/Role/ROLE_GAERTNER')).json.privileges), [
      'files_share_groups',
      'print_colour',
    ]);

    // 5. Privileges and a flag through the group.
    const granted = await curl('POST', '/Entity/Group/projekt.garten/link/assignedPrivileges', [
      'calendar_public_edit',
    ]);
    assert.equal(granted.status, 200);
    assert.deepEqual(granted.json.privileges, ['calendar_public_edit']);
    assert.ok(
      ids((await curl('GET', '/Entity/Privilege/calendar_public_edit')).json.groups).includes(
        'projekt.garten',
      ),
    );
    const flagged = await curl('POST', '/Entity/Group/projekt.garten/link/assignedFlags', ['mail_list']);
    assert.deepEqual(flagged.json.flags, ['mail_list']);

    // 6. The user as a client sees it now.
    const gina = (await curl('GET', '/Entity/User/gina.gruen')).json;
    assert.deepEqual(gina.groups, ['projekt.garten']);
    assert.deepEqual(gina.roles, ['ROLE_GAERTNER']);
    assert.equal(gina.admin, false);

    // 7. Delete the user: still readable with deleted set, out of the list; restore brings it back.
    assert.equal((await curl('DELETE', '/Entity/User/gina.gruen')).status, 204);
    const deleted = await curl('GET', '/Entity/User/gina.gruen');
    assert.match(String(deleted.json.deleted), /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(!(await curl('GET', '/Entity/User')).json.some((u) => u._id === 'gina.gruen'));
    assert.equal((await curl('POST', '/User/gina.gruen/restore')).status, 204);
    const restored = (await curl('GET', '/Entity/User/gina.gruen')).json;
    assert.equal(restored.deleted, null);
    assert.deepEqual(restored.groups, ['projekt.garten'], 'links survive delete and restore');
    assert.deepEqual(restored.roles, ['ROLE_GAERTNER']);

    // 8. Delete the group (soft) and the role (for good).
    assert.equal((await curl('DELETE', '/Entity/Group/projekt.garten')).status, 204);
    assert.match(
      String((await curl('GET', '/Entity/Group/projekt.garten')).json.deleted),
      /^\d{4}-\d{2}-\d{2}$/,
    );
    assert.ok(!(await curl('GET', '/Entity/Group')).json.some((g) => g._id === 'projekt.garten'));
    assert.equal((await curl('DELETE', '/Entity/Role/ROLE_GAERTNER')).status, 204);
    assert.equal((await curl('GET', '/Entity/Role/ROLE_GAERTNER')).status, 404);
    assert.deepEqual((await curl('GET', '/Entity/User/gina.gruen')).json.roles, []);
    assert.ok(
      !ids((await curl('GET', '/Entity/Privilege/print_colour')).json.roles).includes('ROLE_GAERTNER'),
    );
  });
});
