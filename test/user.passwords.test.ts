// Password operations of a user through the proxy: set (204), reset (200 with a temporary
// password), admin password set/reset/revoke — and the admin role is neither granted nor taken.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { passwordAnswerSchema } from '../src/legacy/user/schema.js';
import { sandboxUser, startUserProxy, type UserProxy } from './user-helpers.js';

type ErrorBody = { code: number; message: string };

describe('user passwords', () => {
  let proxy: UserProxy;
  const userId = () => {
    const record = sandboxUser(proxy, 'pia.pass');
    assert.ok(record);
    return record.id;
  };

  before(async () => {
    proxy = await startUserProxy();
    const created = await proxy.call('POST', '/Entity/User', {
      username: 'pia.pass',
      firstname: 'Pia',
      lastname: 'Pass',
    });
    assert.equal(created.status, 201, created.text);
  });
  after(async () => {
    await proxy?.close();
  });

  it('sets the password (204, empty body)', async () => {
    const answer = await proxy.call('POST', '/User/pia.pass/password', { password: 'Correct-Horse-9' });
    assert.equal(answer.status, 204, answer.text);
    assert.equal(answer.text, '');
    assert.equal(proxy.sandbox.data.verifyPassword(userId(), 'Correct-Horse-9'), true);
  });

  it('resets the password to a temporary one it answers', async () => {
    const answer = await proxy.call<{ password: string }>('POST', '/User/pia.pass/password/reset');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('cache-control'), 'no-store', 'no cache keeps the temporary password');
    const { password } = passwordAnswerSchema.strict().parse(answer.body);
    assert.ok(password.length >= 8);
    assert.equal(proxy.sandbox.data.verifyPassword(userId(), password), true);
    assert.equal(proxy.sandbox.data.passwordState(userId()).passwordIsTemporary, true);
    assert.equal(proxy.sandbox.data.verifyPassword(userId(), 'Correct-Horse-9'), false);
  });

  it('sets an admin password without granting the admin role', async () => {
    const answer = await proxy.call('POST', '/User/pia.pass/adminpassword', { password: 'Admin-Secret-42' });
    assert.equal(answer.status, 204, answer.text);
    assert.equal(proxy.sandbox.data.verifyAdminPassword(userId(), 'Admin-Secret-42'), true);
    const user = await proxy.call<{ admin: boolean; roles: string[] }>('GET', '/Entity/User/pia.pass');
    assert.equal(user.body.admin, false);
    assert.deepEqual(user.body.roles, []);
  });

  it('resets the admin password to a temporary one it answers', async () => {
    const answer = await proxy.call<{ password: string }>('POST', '/User/pia.pass/adminpassword/reset');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    const { password } = passwordAnswerSchema.strict().parse(answer.body);
    assert.equal(proxy.sandbox.data.verifyAdminPassword(userId(), password), true);
  });

  it('revokes the admin password and keeps the admin role', async () => {
    const linked = await proxy.call('POST', '/Entity/User/pia.pass/link/roles', ['ROLE_ADMIN']);
    assert.equal(linked.status, 200, linked.text);
    const answer = await proxy.call('POST', '/User/pia.pass/adminpassword/revoke');
    assert.equal(answer.status, 204, answer.text);
    assert.equal(answer.text, '');
    assert.equal(proxy.sandbox.data.passwordState(userId()).hasAdminPassword, false);
    const user = await proxy.call<{ admin: boolean; roles: string[] }>('GET', '/Entity/User/pia.pass');
    assert.equal(user.body.admin, true, 'revoking the admin password keeps ROLE_ADMIN');
    assert.deepEqual(user.body.roles, ['ROLE_ADMIN']);
  });

  it('rejects bad password bodies with 400 and changes nothing', async () => {
    for (const path of ['/User/pia.pass/password', '/User/pia.pass/adminpassword']) {
      for (const body of [
        {},
        { password: '' },
        { password: 5 },
        { password: 'x', extra: 1 },
        '{"password"',
        '',
      ]) {
        const answer = await proxy.call<ErrorBody>('POST', path, body);
        assert.equal(answer.status, 400, `${path} ${JSON.stringify(body)}: ${answer.text}`);
        assert.equal(answer.body.code, 400);
      }
    }
    assert.equal(proxy.sandbox.data.passwordState(userId()).hasAdminPassword, false);
  });

  it('passes the successor password policy on as a 400', async () => {
    const answer = await proxy.call<ErrorBody>('POST', '/User/pia.pass/password', { password: 'x' });
    assert.equal(answer.status, 400, answer.text);
    assert.match(answer.body.message, /successor rejected/i);
  });

  it('answers 404 for an unknown user on every password operation', async () => {
    for (const [path, body] of [
      ['/User/nobody.x/password', { password: 'Correct-Horse-9' }],
      ['/User/nobody.x/password/reset', undefined],
      ['/User/nobody.x/adminpassword', { password: 'Correct-Horse-9' }],
      ['/User/nobody.x/adminpassword/reset', undefined],
      ['/User/nobody.x/adminpassword/revoke', undefined],
    ] as const) {
      const answer = await proxy.call<ErrorBody>('POST', path, body);
      assert.equal(answer.status, 404, `${path}: ${answer.text}`);
    }
  });
});
