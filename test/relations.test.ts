// Relations are one truth: a link made from either side is visible from the other (user ↔ group,
// group ↔ privilege, role ↔ privilege, user ↔ role), a link call checks all its IDs with one
// batched read before writing, and a successor failure between the writes of one call is an
// error that says which IDs were applied and which not — and the applied part is rolled back
// (exactly what the call changed), with the rollback's outcome in the message.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ErrorBody, groupLinks, privilegeLinks, rolePrivileges, snapshot } from './relation-helpers.js';
import { tempDir } from './temp-dir.js';
import { DEFAULT_PROFILE, linksOf, sandboxClock, startUserProxy, type UserProxy } from './user-helpers.js';

type Lists = Record<string, string[]>;

/**
 * What an unlink of lena.mueller, jonas.schmidt and mia.fischer says when the DELETE of the
 * second got no answer: the first rolled back, the second's outcome unknown (not "as before").
 */
function assertSecondOutcomeUnknown(body: ErrorBody): void {
  assert.match(
    body.message,
    /Partly applied: remove user "lena\.mueller" from group "(band|chor)"; outcome unknown: remove user "jonas\.schmidt" from group "\1"; not applied: remove user "mia\.fischer" from group "\1"\. Rolled back \(add user "lena\.mueller" back to group "\1"\); the outcome of remove user "jonas\.schmidt" from group "\1" is unknown \(no answer\): it may be in effect, check it\.$/,
  );
  assert.doesNotMatch(body.message, /the state is as before the call/);
  assert.deepEqual(body.errors, [
    { path: 'body.0', message: 'applied, then rolled back' },
    {
      path: 'body.1',
      message:
        'outcome unknown: the successor did not answer, so this one may or may not be in effect (not rolled back)',
    },
    { path: 'body.2', message: 'not applied' },
  ]);
}

describe('relations seen from both sides', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
    assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Umwelt AG' })).status, 201);
    assert.equal((await proxy.call('POST', '/Entity/Role', { name: 'Umwelt', module: 'Core' })).status, 201);
  });
  after(async () => {
    await proxy?.close();
  });

  const get = async (path: string): Promise<Lists> => {
    const answer = await proxy.call<Lists>('GET', path);
    assert.equal(answer.status, 200, `${path}: ${answer.text}`);
    return answer.body;
  };

  it('user ↔ group: linked from the user, seen on the group (GET and list); and the other way round', async () => {
    assert.equal(
      (await proxy.call('POST', '/Entity/User/mia.fischer/link/groups', ['umwelt.ag'])).status,
      200,
    );
    assert.ok((await get('/Entity/Group/umwelt.ag')).users?.includes('mia.fischer'));
    const list = await proxy.call<(Lists & { _id: string })[]>('GET', '/Entity/Group?extended=1');
    assert.ok(list.body.find((g) => g._id === 'umwelt.ag')?.users?.includes('mia.fischer'));

    assert.equal(
      (await proxy.call('POST', '/Entity/Group/umwelt.ag/link/users', ['paul.wagner'])).status,
      200,
    );
    assert.ok((await get('/Entity/User/paul.wagner')).groups?.includes('umwelt.ag'));
    const users = await proxy.call<(Lists & { _id: string })[]>('GET', '/Entity/User?extended=1');
    assert.ok(users.body.find((u) => u._id === 'paul.wagner')?.groups?.includes('umwelt.ag'));

    assert.equal(
      (await proxy.call('DELETE', '/Entity/Group/umwelt.ag/link/users', ['mia.fischer'])).status,
      200,
    );
    assert.ok(!(await get('/Entity/User/mia.fischer')).groups?.includes('umwelt.ag'));
    assert.equal(
      (await proxy.call('DELETE', '/Entity/User/paul.wagner/link/groups', ['umwelt.ag'])).status,
      200,
    );
    assert.deepEqual((await get('/Entity/Group/umwelt.ag')).users, []);
  });

  it('group ↔ privilege: granted on the group, seen on the privilege; and the other way round', async () => {
    const grant = await proxy.call('POST', '/Entity/Group/umwelt.ag/link/assignedPrivileges', [
      'print_colour',
    ]);
    assert.equal(grant.status, 200);
    assert.ok((await get('/Entity/Privilege/print_colour')).groups?.includes('umwelt.ag'));
    const list = await proxy.call<(Lists & { _id: string })[]>('GET', '/Entity/Privilege');
    assert.ok(list.body.find((p) => p._id === 'print_colour')?.groups?.includes('umwelt.ag'));

    const other = await proxy.call('POST', '/Entity/Privilege/mail_external/link/groups', ['umwelt.ag']);
    assert.equal(other.status, 200);
    assert.deepEqual((await get('/Entity/Group/umwelt.ag')).privileges?.slice().sort(), [
      'mail_external',
      'print_colour',
    ]);

    assert.equal(
      (await proxy.call('DELETE', '/Entity/Privilege/print_colour/link/groups', ['umwelt.ag'])).status,
      200,
    );
    assert.deepEqual((await get('/Entity/Group/umwelt.ag')).privileges, ['mail_external']);
    const take = await proxy.call('DELETE', '/Entity/Group/umwelt.ag/link/assignedPrivileges', [
      'mail_external',
    ]);
    assert.equal(take.status, 200);
    assert.ok(!(await get('/Entity/Privilege/mail_external')).groups?.includes('umwelt.ag'));
  });

  it('role ↔ privilege: granted on the role, seen on the privilege; and the other way round', async () => {
    assert.equal(
      (await proxy.call('POST', '/Entity/Role/ROLE_UMWELT/link/privileges', ['print_colour'])).status,
      200,
    );
    assert.ok((await get('/Entity/Privilege/print_colour')).roles?.includes('ROLE_UMWELT'));

    assert.equal(
      (await proxy.call('POST', '/Entity/Privilege/mail_external/link/roles', ['ROLE_UMWELT'])).status,
      200,
    );
    assert.deepEqual((await get('/Entity/Role/ROLE_UMWELT')).privileges?.slice().sort(), [
      'mail_external',
      'print_colour',
    ]);
    const roles = await proxy.call<(Lists & { _id: string })[]>('GET', '/Entity/Role?extended=1');
    assert.deepEqual(
      roles.body
        .find((r) => r._id === 'ROLE_UMWELT')
        ?.privileges?.slice()
        .sort(),
      ['mail_external', 'print_colour'],
    );

    assert.equal(
      (await proxy.call('DELETE', '/Entity/Privilege/print_colour/link/roles', ['ROLE_UMWELT'])).status,
      200,
    );
    assert.deepEqual((await get('/Entity/Role/ROLE_UMWELT')).privileges, ['mail_external']);
    assert.equal(
      (await proxy.call('DELETE', '/Entity/Role/ROLE_UMWELT/link/privileges', ['mail_external'])).status,
      200,
    );
    assert.ok(!(await get('/Entity/Privilege/mail_external')).roles?.includes('ROLE_UMWELT'));
  });

  it('user ↔ role: linked from the user, held in the successor, gone from the user when the role goes', async () => {
    assert.equal(
      (await proxy.call('POST', '/Entity/User/mia.fischer/link/roles', ['ROLE_UMWELT'])).status,
      200,
    );
    assert.ok((await get('/Entity/User/mia.fischer')).roles?.includes('ROLE_UMWELT'));
    const role = proxy.sandbox.data.roleByName('ROLE_UMWELT');
    assert.ok(role);
    assert.ok(proxy.sandbox.data.usersWithRole(role.id).some((u) => u.user === 'mia.fischer'));
    assert.equal((await proxy.call('DELETE', '/Entity/Role/ROLE_UMWELT')).status, 204);
    assert.ok(!(await get('/Entity/User/mia.fischer')).roles?.includes('ROLE_UMWELT'));
    assert.ok(!linksOf(proxy, 'mia.fischer').roles.includes('ROLE_UMWELT'));
  });

  it('group flags appear in group bodies from both the item and the list', async () => {
    assert.equal(
      (await proxy.call('POST', '/Entity/Group/umwelt.ag/link/assignedFlags', ['mail_list'])).status,
      200,
    );
    assert.deepEqual((await get('/Entity/Group/umwelt.ag')).flags, ['mail_list']);
    const list = await proxy.call<(Lists & { _id: string })[]>('GET', '/Entity/Group?extended');
    assert.deepEqual(list.body.find((g) => g._id === 'umwelt.ag')?.flags, ['mail_list']);
  });

  it('checks k IDs with one batched read before the first write', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const ids = ['lena.mueller', 'jonas.schmidt', 'mia.fischer', 'leon.weber', 'emma.meyer', 'paul.wagner'];
    const answer = await proxy.call('POST', '/Entity/Group/umwelt.ag/link/users', ids);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(proxy.apiCalls()['GET /users'], 1, JSON.stringify(proxy.apiCalls()));
    proxy.resetCounts();
    const refused = await proxy.call<ErrorBody>('DELETE', '/Entity/Group/umwelt.ag/link/users', [
      ...ids,
      'x.y',
    ]);
    assert.equal(refused.status, 400);
    assert.deepEqual(
      proxy.apiCalls(),
      { 'GET /groups/{id}': 1, 'GET /users': 1 },
      'the group with its current links; one read for all 7 IDs; no write',
    );
    assert.deepEqual(groupLinks(proxy, 'umwelt.ag').users, [...ids].sort());
  });
});

describe('relations the successor answers as IRIs instead of embedded objects', () => {
  // The reference's "relations as arrays of IRIs": every user read comes back with its roles,
  // groups and privileges as the IRIs of the embedded objects the proxy asked for.
  const asIris: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(String(input));
    if (init?.method !== 'GET' || !/\/users(\/|$)/.test(url.pathname) || !response.ok) return response;
    const body = (await response.json()) as Record<string, unknown>;
    const members = Array.isArray(body['hydra:member']) ? body['hydra:member'] : [body];
    for (const member of members as Record<string, unknown>[])
      for (const relation of ['roles', 'groups', 'privileges'])
        if (Array.isArray(member[relation]))
          member[relation] = (member[relation] as Record<string, unknown>[]).map((item) => item['@id']);
    return new Response(JSON.stringify(body), {
      status: response.status,
      headers: { 'content-type': response.headers.get('content-type') ?? 'application/ld+json' },
    });
  };
  const proxies: UserProxy[] = [];
  const dirs: string[] = [];
  after(async () => {
    for (const proxy of proxies) await proxy.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('admin is true exactly when roles holds ROLE_ADMIN, the roles read by their IRIs', async () => {
    const proxy = await startUserProxy({ successorFetch: asIris });
    proxies.push(proxy);
    const admin = await proxy.call<Record<string, unknown>>('GET', '/Entity/User/admin');
    assert.equal(admin.status, 200, admin.text);
    assert.deepEqual(admin.body.roles, ['ROLE_ADMIN']);
    assert.equal(admin.body.admin, true);
    assert.deepEqual(admin.body.groups, ['admins']);
    const pupil = await proxy.call<Record<string, unknown>>('GET', '/Entity/User/lena.mueller');
    assert.equal(pupil.status, 200, pupil.text);
    assert.deepEqual(pupil.body.roles, ['ROLE_STUDENT']);
    assert.equal(pupil.body.admin, false);
  });

  it('a profile that cannot check those references answers 502, never a silent admin: false', async () => {
    // admin compares an attribute that is not the role kind's ID: an IRI cannot be checked.
    const dir = tempDir('iris');
    dirs.push(dir);
    const profile = path.join(dir, 'iserv-idm-v1');
    cpSync(DEFAULT_PROFILE, profile, { recursive: true });
    const file = path.join(profile, 'fields', 'user.json');
    const table = JSON.parse(readFileSync(file, 'utf8'));
    table.fields.admin.contains.key = 'name';
    writeFileSync(file, JSON.stringify(table));
    const proxy = await startUserProxy({ profile, successorFetch: asIris });
    proxies.push(proxy);
    const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/admin', undefined, {
      'x-request-id': 'iri-admin',
    });
    assert.equal(answer.status, 502, answer.text);
    const failed = proxy.logSink
      .lines()
      .find((line) => line.reqId === 'iri-admin' && line.msg === 'request failed');
    assert.match(String(failed?.successor), /roles as references .* "admin" cannot be read/);
  });
});

describe('relations the successor embeds without the attribute asked for (only @id and @type)', () => {
  // A successor that applies `_attributes` to the top level only: every embedded relation of a
  // user or group comes back as `{"@id", "@type"}`, without the natural ID (`role`, `group`, `user`)
  // the proxy asked for. Such an object is a reference like an IRI, looked up by its UUID.
  const withoutIds: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(String(input));
    if (init?.method !== 'GET' || !/\/(users|groups)(\/|$)/.test(url.pathname) || !response.ok)
      return response;
    const body = (await response.json()) as Record<string, unknown>;
    const members = Array.isArray(body['hydra:member']) ? body['hydra:member'] : [body];
    const bare = (item: unknown) => {
      const ref = item as Record<string, unknown>;
      return { '@id': ref['@id'], '@type': ref['@type'] };
    };
    for (const member of members as Record<string, unknown>[])
      for (const relation of ['roles', 'groups', 'privileges', 'members', 'owner', 'createdBy']) {
        const value = member[relation];
        if (Array.isArray(value)) member[relation] = value.map(bare);
        else if (typeof value === 'object' && value !== null) member[relation] = bare(value);
      }
    return new Response(JSON.stringify(body), {
      status: response.status,
      headers: { 'content-type': response.headers.get('content-type') ?? 'application/ld+json' },
    });
  };
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy({ successorFetch: withoutIds });
  });
  after(async () => {
    await proxy?.close();
  });

  it('renders them by their legacy IDs, and admin from ROLE_ADMIN among them, never as empty', async () => {
    const sabine = await proxy.call<Record<string, unknown>>('GET', '/Entity/User/sabine.krueger');
    assert.equal(sabine.status, 200, sabine.text);
    assert.deepEqual(sabine.body.roles, ['ROLE_ADMIN', 'ROLE_STAFF']);
    assert.equal(sabine.body.admin, true);
    assert.deepEqual(sabine.body.groups, ['admins']);
    assert.equal(sabine.body.createdBy, 'admin');
    const group = await proxy.call<Record<string, unknown>>('GET', '/Entity/Group/admins');
    assert.equal(group.status, 200, group.text);
    assert.deepEqual(group.body.users, ['admin', 'sabine.krueger']);
    assert.equal(group.body.owner, 'admin');
    const users = await proxy.call<Record<string, unknown>[]>('GET', '/Entity/User?extended');
    assert.equal(users.status, 200, users.text);
    const listed = users.body.find((user) => user._id === 'sabine.krueger');
    assert.deepEqual(listed?.roles, ['ROLE_ADMIN', 'ROLE_STAFF']);
    assert.deepEqual(listed?.groups, ['admins']);
    const groups = await proxy.call<Record<string, unknown>[]>('GET', '/Entity/Group?extended');
    assert.equal(groups.status, 200, groups.text);
    assert.deepEqual(groups.body.find((g) => g._id === 'admins')?.users, ['admin', 'sabine.krueger']);
  });
});

describe('soft deletes and relations (decisions in docs/mappings.md)', () => {
  let proxy: UserProxy;
  const clock = sandboxClock();

  before(async () => {
    proxy = await startUserProxy({ sandbox: { clock, retentionSeconds: 7 * 24 * 3600 } });
    assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Schach AG' })).status, 201);
    assert.equal(
      (await proxy.call('POST', '/Entity/Group/schach.ag/link/users', ['emma.meyer'])).status,
      200,
    );
    assert.equal(
      (await proxy.call('POST', '/Entity/Group/schach.ag/link/assignedPrivileges', ['print_colour'])).status,
      200,
    );
  });
  after(async () => {
    await proxy?.close();
  });

  it("a soft-deleted group stays in its users' and privileges' lists until the successor purges it", async () => {
    assert.equal((await proxy.call('DELETE', '/Entity/Group/schach.ag')).status, 204);
    const user = await proxy.call<Lists>('GET', '/Entity/User/emma.meyer');
    assert.ok(user.body.groups?.includes('schach.ag'), user.text);
    const privilege = await proxy.call<Lists>('GET', '/Entity/Privilege/print_colour');
    assert.ok(privilege.body.groups?.includes('schach.ag'), privilege.text);
    clock.advance(8 * 24 * 3600_000);
    const purged = await proxy.call<Lists>('GET', '/Entity/User/emma.meyer');
    assert.ok(!purged.body.groups?.includes('schach.ag'), purged.text);
    assert.ok(
      !(await proxy.call<Lists>('GET', '/Entity/Privilege/print_colour')).body.groups?.includes('schach.ag'),
    );
  });

  it('deleting a deleted user and restoring one that is not deleted both answer 204 and change nothing', async () => {
    assert.equal((await proxy.call('DELETE', '/Entity/User/finn.koch')).status, 204);
    const deleted = proxy.sandbox.data.userByAccount('finn.koch')?.deleted;
    assert.ok(deleted);
    const before = snapshot(proxy);
    const again = await proxy.call('DELETE', '/Entity/User/finn.koch');
    assert.equal(again.status, 204, again.text);
    assert.equal(
      proxy.sandbox.data.userByAccount('finn.koch')?.deleted,
      deleted,
      'deleted when first deleted',
    );
    const restored = await proxy.call('POST', '/User/paul.wagner/restore');
    assert.equal(restored.status, 204, restored.text);
    assert.equal(snapshot(proxy), before);
  });
});

describe('a successor failure in the middle of a link call', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
    assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Band' })).status, 201);
  });
  after(async () => {
    await proxy?.close();
  });

  /** Runs `call` while the sandbox fails one request matching `match` after `skip` others, then clears the fault. */
  async function withFault<T>(
    [match, skip, status = 503]: [match: string, skip: number, status?: number],
    call: () => Promise<T>,
  ): Promise<T> {
    proxy.sandbox.faults.set({ rules: [{ match, skip, times: 1, status }] });
    try {
      return await call();
    } finally {
      proxy.sandbox.faults.reset();
    }
  }

  it('unlink fails at item 2: the error names every ID, and item 1 is re-added with one add call', async () => {
    const linked = await proxy.call('POST', '/Entity/Group/band/link/users', [
      'lena.mueller',
      'jonas.schmidt',
      'mia.fischer',
    ]);
    assert.equal(linked.status, 200, linked.text);
    const before = snapshot(proxy);
    proxy.resetCounts();
    const answer = await withFault(['DELETE /groups/{id}/members/{userId}', 1], () =>
      proxy.call<ErrorBody>('DELETE', '/Entity/Group/band/link/users', [
        'lena.mueller',
        'jonas.schmidt',
        'mia.fischer',
        'paul.wagner',
      ]),
    );
    assert.equal(answer.status, 502, answer.text);
    assert.equal(answer.body.code, 502);
    assert.match(
      answer.body.message,
      /^The successor is unreachable or failing; request id [\w-]+: the operator finds the details in the log\. /,
    );
    // (The request id is a random UUID, which may itself contain "503".)
    assert.doesNotMatch(
      answer.text.replaceAll(answer.headers.get('x-request-id') ?? '', ''),
      /503|\/iserv\/idm/,
      'the successor status and path are in the log only',
    );
    const logged = proxy.logSink
      .lines()
      .find((line) => line.reqId === answer.headers.get('x-request-id') && line.msg === 'request failed');
    assert.match(String(logged?.successor), /DELETE \/iserv\/idm\/api\/v1\/groups\/.* 503/);
    assert.match(
      answer.body.message,
      /Partly applied: remove user "lena\.mueller" from group "band"; not applied: remove user "jonas\.schmidt" from group "band", remove user "mia\.fischer" from group "band", remove user "paul\.wagner" from group "band"\. Rolled back \(add user "lena\.mueller" back to group "band"\): the state is as before the call\.$/,
    );
    assert.deepEqual(answer.body.errors, [
      { path: 'body.0', message: 'applied, then rolled back' },
      { path: 'body.1', message: 'not applied: the successor failed on this one' },
      { path: 'body.2', message: 'not applied' },
      { path: 'body.3', message: 'not applied' },
    ]);
    assert.deepEqual(proxy.apiCalls(), {
      'GET /groups/{id}': 1,
      'GET /users': 1,
      'DELETE /groups/{id}/members/{userId}': 2,
      'POST /groups/{id}/members': 1,
    });
    assert.equal(snapshot(proxy), before, 'the rollback restored the state');
    assert.deepEqual(groupLinks(proxy, 'band').users, ['jonas.schmidt', 'lena.mueller', 'mia.fischer']);
  });

  it('unlink whose 2nd DELETE loses its connection after it was sent: that one is "outcome unknown", never "not applied"', async () => {
    const linked = await proxy.call('POST', '/Entity/Group/band/link/users', [
      'lena.mueller',
      'jonas.schmidt',
    ]);
    assert.equal(linked.status, 200, linked.text);
    // The sandbox drops the connection once it has read the request (status 0): a successor that
    // did the DELETE and then failed looks the same from the proxy.
    const answer = await withFault(['DELETE /groups/{id}/members/{userId}', 1, 0], () =>
      proxy.call<ErrorBody>('DELETE', '/Entity/Group/band/link/users', [
        'lena.mueller',
        'jonas.schmidt',
        'mia.fischer',
      ]),
    );
    assert.equal(answer.status, 502, answer.text);
    assertSecondOutcomeUnknown(answer.body);
    assert.ok(groupLinks(proxy, 'band').users.includes('lena.mueller'), 'the applied one is rolled back');
  });

  it('rolls back exactly what the call changed: an ID that was not linked is not linked by the rollback', async () => {
    const before = snapshot(proxy);
    const answer = await withFault(['DELETE /groups/{id}/members/{userId}', 2], () =>
      proxy.call<ErrorBody>('DELETE', '/Entity/Group/band/link/users', [
        'paul.wagner',
        'lena.mueller',
        'jonas.schmidt',
      ]),
    );
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      /Rolled back \(add user "lena\.mueller" back to group "band"\): the state is as before the call/,
    );
    assert.deepEqual(answer.body.errors, [
      {
        path: 'body.0',
        message: 'applied without a change (it already was as asked): nothing to roll back',
      },
      { path: 'body.1', message: 'applied, then rolled back' },
      { path: 'body.2', message: 'not applied: the successor failed on this one' },
    ]);
    assert.ok(!groupLinks(proxy, 'band').users.includes('paul.wagner'));
    assert.equal(snapshot(proxy), before);
  });

  it('says so when the rollback fails too, naming what stays applied', async () => {
    const before = groupLinks(proxy, 'band').users;
    proxy.sandbox.faults.set({
      rules: [
        { match: 'DELETE /groups/{id}/members/{userId}', skip: 1, times: 1, status: 503 },
        { match: 'POST /groups/{id}/members', times: 1, status: 500 },
      ],
    });
    let answer: Awaited<ReturnType<typeof proxy.call<ErrorBody>>>;
    try {
      answer = await proxy.call<ErrorBody>('DELETE', '/Entity/Group/band/link/users', [
        'mia.fischer',
        'lena.mueller',
      ]);
    } finally {
      proxy.sandbox.faults.reset();
    }
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      /Partly applied: remove user "mia\.fischer" from group "band"; not applied: remove user "lena\.mueller" from group "band"\. Rollback failed \(The successor is unreachable or failing\): still applied: remove user "mia\.fischer" from group "band"\.$/,
    );
    const logged = proxy.logSink
      .lines()
      .find((line) => line.reqId === answer.headers.get('x-request-id') && line.msg === 'request failed');
    assert.match(
      String(logged?.rollback),
      /POST \/iserv\/idm\/api\/v1\/groups\/.* 500/,
      'why the rollback failed',
    );
    assert.deepEqual(answer.body.errors, [
      { path: 'body.0', message: 'applied and not rolled back: still in effect' },
      { path: 'body.1', message: 'not applied: the successor failed on this one' },
    ]);
    assert.deepEqual(
      groupLinks(proxy, 'band').users,
      before.filter((u) => u !== 'mia.fischer'),
      'exactly what the error says',
    );
  });

  it('a privilege unlinked from roles one by one is re-linked role by role', async () => {
    assert.equal(
      (
        await proxy.call('POST', '/Entity/Privilege/calendar_public_edit/link/roles', [
          'ROLE_STAFF',
          'ROLE_STUDENT',
        ])
      ).status,
      200,
    );
    const before = snapshot(proxy);
    assert.deepEqual(privilegeLinks(proxy, 'calendar_public_edit').roles, [
      'ROLE_STAFF',
      'ROLE_STUDENT',
      'ROLE_TEACHER',
    ]);
    proxy.resetCounts();
    const answer = await withFault(['DELETE /roles/{id}/privileges/{privilegeId}', 2, 504], () =>
      proxy.call<ErrorBody>('DELETE', '/Entity/Privilege/calendar_public_edit/link/roles', [
        'ROLE_STAFF',
        'ROLE_STUDENT',
        'ROLE_TEACHER',
      ]),
    );
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      /Partly applied: remove role "ROLE_STAFF" from privilege "calendar_public_edit", remove role "ROLE_STUDENT" from privilege "calendar_public_edit"; not applied: remove role "ROLE_TEACHER" from privilege "calendar_public_edit"\. Rolled back \(add role "ROLE_STAFF" back to privilege "calendar_public_edit", add role "ROLE_STUDENT" back to privilege "calendar_public_edit"\): the state is as before the call\.$/,
    );
    assert.equal(proxy.apiCalls()['POST /roles/{id}/privileges'], 2);
    assert.equal(snapshot(proxy), before);
  });

  it('a privilege granted to roles one by one is taken back from the ones this call added only', async () => {
    const before = snapshot(proxy);
    assert.ok(rolePrivileges(proxy, 'ROLE_ADMIN').includes('print_colour'));
    const answer = await withFault(['POST /roles/{id}/privileges', 2], () =>
      proxy.call<ErrorBody>('POST', '/Entity/Privilege/print_colour/link/roles', [
        'ROLE_ADMIN',
        'ROLE_STUDENT',
        'ROLE_TEACHER',
      ]),
    );
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      /Rolled back \(remove role "ROLE_STUDENT" again from privilege "print_colour"\): the state is as before the call/,
    );
    assert.deepEqual(
      answer.body.errors?.map((e) => e.message),
      [
        'applied without a change (it already was as asked): nothing to roll back',
        'applied, then rolled back',
        'not applied: the successor failed on this one',
      ],
    );
    assert.ok(rolePrivileges(proxy, 'ROLE_ADMIN').includes('print_colour'), 'ROLE_ADMIN keeps what it had');
    assert.equal(snapshot(proxy), before);
  });

  it('a role whose privileges cannot be granted is removed again', async () => {
    const before = snapshot(proxy);
    const answer = await withFault(['POST /roles/{id}/privileges', 0], () =>
      proxy.call<ErrorBody>('POST', '/Entity/Role', {
        name: 'Halbfertig',
        module: 'Core',
        privileges: ['print_colour'],
      }),
    );
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      /Partly applied: create role "Halbfertig"; not applied: grant privileges print_colour to the new role ROLE_HALBFERTIG\. Rolled back \(delete the new role ROLE_HALBFERTIG again\): the state is as before the call\.$/,
    );
    assert.doesNotMatch(
      answer.body.message.slice(answer.body.message.indexOf('Partly applied')),
      /[{}]|\/roles/,
      'the writes are named by what they did, not by raw path templates',
    );
    assert.equal(proxy.sandbox.data.roleByName('ROLE_HALBFERTIG'), undefined);
    assert.equal((await proxy.call('GET', '/Entity/Role/ROLE_HALBFERTIG')).status, 404);
    assert.equal(snapshot(proxy), before);
  });

  it('a failure of the one write of an add call changes nothing and is a plain 502', async () => {
    const before = snapshot(proxy);
    const answer = await withFault(['POST /groups/{id}/members', 0], () =>
      proxy.call<ErrorBody>('POST', '/Entity/Group/band/link/users', ['emma.meyer', 'finn.koch']),
    );
    assert.equal(answer.status, 502, answer.text);
    assert.doesNotMatch(answer.body.message, /Partly applied/);
    assert.equal(snapshot(proxy), before);
  });
});

describe('a write that gets no answer in time in the middle of a link call', () => {
  let proxy: UserProxy;
  const DELETE_MEMBER = 'DELETE /groups/{id}/members/{userId}';

  before(async () => {
    // A client with a 400 ms timeout whose 2nd DELETE meets the sandbox's latency fault: switched
    // on as that request is sent, off again as soon as the sandbox has counted it (so the
    // rollback after it is not delayed). The sandbox applies the DELETE once the latency is over.
    let deletes = 0;
    const slowSecondDelete: typeof fetch = async (input, init) => {
      if (init?.method !== 'DELETE' || ++deletes !== 2) return fetch(input, init);
      const seen = proxy.sandbox.counters.get(DELETE_MEMBER);
      proxy.sandbox.faults.set({ latencyMs: 1_500 });
      const response = fetch(input, init);
      response.catch(() => undefined);
      for (let waited = 0; proxy.sandbox.counters.get(DELETE_MEMBER) === seen && waited < 2_000; waited += 2)
        await sleep(2);
      proxy.sandbox.faults.set({ latencyMs: 0 });
      return response;
    };
    proxy = await startUserProxy({
      timeouts: { connectMs: 2_000, totalMs: 400 },
      retries: { max: 0 },
      successorFetch: slowSecondDelete,
    });
    assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Chor' })).status, 201);
    const linked = await proxy.call('POST', '/Entity/Group/chor/link/users', [
      'lena.mueller',
      'jonas.schmidt',
      'mia.fischer',
    ]);
    assert.equal(linked.status, 200, linked.text);
  });
  after(async () => {
    await proxy?.close();
  });

  it('calls its outcome unknown (not "not applied"), rolls back the applied one, and says to check it', async () => {
    const answer = await proxy.call<ErrorBody>('DELETE', '/Entity/Group/chor/link/users', [
      'lena.mueller',
      'jonas.schmidt',
      'mia.fischer',
    ]);
    assert.equal(answer.status, 504, answer.text);
    assert.match(answer.body.message, /^The successor did not answer in time; request id /);
    assert.doesNotMatch(answer.text, /400 ms|\/iserv\/idm/);
    const logged = proxy.logSink
      .lines()
      .find((line) => line.reqId === answer.headers.get('x-request-id') && line.msg === 'request failed');
    assert.match(
      String(logged?.successor),
      /did not answer DELETE .* within 400 ms/,
      'the details are in the log',
    );
    assertSecondOutcomeUnknown(answer.body);
    // And so it is: the successor carries the late DELETE out after the proxy has answered.
    for (
      let waited = 0;
      groupLinks(proxy, 'chor').users.includes('jonas.schmidt') && waited < 5_000;
      waited += 20
    )
      await sleep(20);
    assert.deepEqual(groupLinks(proxy, 'chor').users, ['lena.mueller', 'mia.fischer']);
  });
});
