// One end-to-end scenario driven the way a legacy integration (or a person with curl) drives the
// API: plain HTTP with Basic credentials and JSON bodies, nothing but the legacy paths. Create a
// group and a user, link them from both sides, grant privileges through a role and through the
// group, sign the user in with SSO (form data, then the browser follows return_to to the portal
// target with login_hint), delete the user (SSO refused) and restore it (SSO works again), delete
// the group and the role.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Browser, type SsoAnswer } from './sso-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type Json = Record<string, unknown> & { _id?: string };
/** The SSO answer: the token on 200, the legacy error (`code`, `message`) on 400. */
type SsoJson = Partial<SsoAnswer> & { code?: number; message?: string };

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

  /** What `curl -u name:password URL/iserv/api/Service/Sso/authenticate -d username=NAME` does: form data. */
  async function ssoAuthenticate(username: string): Promise<{ status: number; json: SsoJson }> {
    const response = await fetch(`${proxy.url}/iserv/api/Service/Sso/authenticate`, {
      method: 'POST',
      headers: { authorization: proxy.authorization, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username }).toString(),
    });
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    return { status: response.status, json: (await response.json()) as SsoJson };
  }

  /** Signs `username` in: the token answer, then a browser from return_to through to the portal target. */
  async function signIn(username: string): Promise<void> {
    const answer = await ssoAuthenticate(username);
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json.username, username);
    assert.match(answer.json.token ?? '', /^[A-Za-z0-9_-]{43}$/);
    const returnTo = new URL(answer.json.return_to ?? '');
    assert.equal(`${returnTo.origin}${returnTo.pathname}`, `${proxy.url}/sso/continue`);
    assert.equal(returnTo.searchParams.get('token'), answer.json.token);
    const browser = new Browser();
    const { last } = await browser.follow(returnTo);
    const [first] = browser.hops;
    assert.equal(first?.status, 302, first?.text);
    const target = first?.location;
    assert.ok(target, 'continue redirects');
    assert.equal(`${target.origin}${target.pathname}`, `${proxy.url}/sso/landing`);
    assert.equal(target.searchParams.get('login_hint'), username);
    assert.equal(last.url.href, target.href, 'the browser arrived at the target');
    assert.equal(last.status, 200, last.text);
    assert.match(last.text, new RegExp(`Welcome, ${username.replace(/\./g, '\\.')}`));
    // The token is single-use: the same link a second time does not sign anyone in.
    const again = await new Browser().get(returnTo);
    assert.equal(again.status, 410, again.text);
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

    // 7. SSO for the user: a token from form data, the browser follows return_to to the target.
    await signIn('gina.gruen');

    // 8. Delete the user: still readable with deleted set, out of the list, no SSO; restore brings
    // it back, SSO included.
    assert.equal((await curl('DELETE', '/Entity/User/gina.gruen')).status, 204);
    const deleted = await curl('GET', '/Entity/User/gina.gruen');
    assert.match(String(deleted.json.deleted), /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(!(await curl('GET', '/Entity/User')).json.some((u) => u._id === 'gina.gruen'));
    const refused = await ssoAuthenticate('gina.gruen');
    assert.equal(refused.status, 400, JSON.stringify(refused.json));
    assert.equal(refused.json.code, 400);
    assert.equal(refused.json.message, 'User "gina.gruen" is deleted');
    assert.equal(refused.json.token, undefined);
    assert.equal((await curl('POST', '/User/gina.gruen/restore')).status, 204);
    await signIn('gina.gruen');
    const restored = (await curl('GET', '/Entity/User/gina.gruen')).json;
    assert.equal(restored.deleted, null);
    assert.deepEqual(restored.groups, ['projekt.garten'], 'links survive delete and restore');
    assert.deepEqual(restored.roles, ['ROLE_GAERTNER']);

    // 9. Delete the group (soft) and the role (for good).
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
