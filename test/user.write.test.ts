// User writes through the proxy: create, update, soft delete, restore, purge; every kind of bad
// input answers a 4xx JSON error and changes nothing in the successor; protected users 403.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  USER_FIELDS,
  USER_WRITABLE_FIELDS,
  userSchema,
  userWritableSchema,
} from '../src/legacy/user/schema.js';
import { sandboxClock, sandboxUser, startUserProxy, type UserProxy } from './user-helpers.js';

type ErrorBody = { code: number; message: string; errors?: { path: string; message: string }[] };

describe('user writes', () => {
  let proxy: UserProxy;
  const clock = sandboxClock();

  before(async () => {
    proxy = await startUserProxy({ sandbox: { clock, retentionSeconds: 7 * 24 * 3600 } });
  });
  after(async () => {
    await proxy?.close();
  });

  describe('create', () => {
    it('answers 201 with the full user and a Location, and the successor has it', async () => {
      const answer = await proxy.call<Record<string, unknown>>('POST', '/Entity/User', {
        username: 'ada.l',
        firstname: 'Ada',
        lastname: 'Lovelace',
        status: 'a',
        auxInfo: '5a',
      });
      assert.equal(answer.status, 201, answer.text);
      const user = userSchema.strict().parse(answer.body);
      assert.deepEqual(Object.keys(answer.body), [...USER_FIELDS]);
      assert.equal(user._id, 'ada.l');
      assert.equal(answer.headers.get('location'), `${proxy.core}/Entity/User/ada.l`);
      assert.equal(user.status, 'a');
      assert.equal(user.auxInfo, '5a');
      assert.equal(user.type, null);
      assert.equal(user.deleted, null);
      assert.deepEqual([user.roles, user.groups, user.privileges, user.admin], [[], [], [], false]);
      assert.match(user.created ?? '', /^\d{4}-\d{2}-\d{2}$/);
      const record = sandboxUser(proxy, 'ada.l');
      assert.equal(record?.status, 'active');
      assert.equal(record?.auxInfo, '5a');
      const fetched = await proxy.call('GET', '/Entity/User/ada.l');
      assert.deepEqual(fetched.body, answer.body, 'GET answers the same shape');
    });

    it('round-trips every status through the value table', async () => {
      for (const [legacy, successor] of [
        ['a', 'active'],
        ['r', 'registered'],
        ['i', 'inactive'],
      ] as const) {
        const username = `status.${legacy}`;
        const created = await proxy.call<{ status: string }>('POST', '/Entity/User', {
          username,
          firstname: 'S',
          lastname: legacy,
          status: legacy,
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.status, legacy);
        assert.equal(sandboxUser(proxy, username)?.status, successor);
        const read = await proxy.call<{ status: string }>('GET', `/Entity/User/${username}`);
        assert.equal(read.body.status, legacy);
      }
    });

    it('rejects bad bodies with 400 and creates nothing', async () => {
      const before = proxy.sandbox.data.users.size;
      const cases: [string, unknown, RegExp][] = [
        ['malformed JSON', '{"username": "x",', /malformed json/i],
        ['not an object', '["x"]', /invalid request body/i],
        ['wrong type', { username: 'bad.type', firstname: 5, lastname: 'X' }, /invalid request body/i],
        ['unknown field', { username: 'bad.field', firstname: 'X', lastname: 'Y', email: 'x@y' }, /invalid/i],
        [
          'invalid status',
          { username: 'bad.status', firstname: 'X', lastname: 'Y', status: 'x' },
          /invalid/i,
        ],
        ['missing username', { firstname: 'X', lastname: 'Y' }, /invalid/i],
        ['empty body', '', /body is required/i],
      ];
      for (const [label, body, message] of cases) {
        const answer = await proxy.call<ErrorBody>('POST', '/Entity/User', body);
        assert.equal(answer.status, 400, `${label}: ${answer.text}`);
        assert.equal(answer.body.code, 400, label);
        assert.match(answer.body.message, message, label);
      }
      const unknown = await proxy.call<ErrorBody>('POST', '/Entity/User', {
        username: 'bad.field',
        firstname: 'X',
        lastname: 'Y',
        email: 'x@y',
      });
      assert.ok(
        unknown.body.errors?.some((e) => e.path === 'body' && /email/.test(e.message)),
        unknown.text,
      );
      const status = await proxy.call<ErrorBody>('POST', '/Entity/User', {
        username: 'bad.status',
        firstname: 'X',
        lastname: 'Y',
        status: 'x',
      });
      assert.deepEqual(
        status.body.errors?.map((e) => e.path),
        ['body.status'],
      );
      assert.equal(proxy.sandbox.data.users.size, before, 'nothing was created');
    });

    it('passes the successor validation messages on as a 400 (duplicate account)', async () => {
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/User', {
        username: 'ada.l',
        firstname: 'Ada',
        lastname: 'Again',
      });
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.body.message, /successor rejected/i);
      assert.ok(
        answer.body.errors?.some((e) => /already in use/.test(e.message)),
        answer.text,
      );
    });
  });

  describe('update', () => {
    it('changes the given fields and answers exactly the writable fields', async () => {
      const answer = await proxy.call<Record<string, unknown>>('PUT', '/Entity/User/ada.l', {
        lastname: 'King',
        status: 'i',
        type: 'teacher',
        importId: 'imp-7',
      });
      assert.equal(answer.status, 200, answer.text);
      userWritableSchema.strict().parse(answer.body);
      assert.deepEqual(Object.keys(answer.body), [...USER_WRITABLE_FIELDS]);
      assert.deepEqual(answer.body, {
        username: 'ada.l',
        firstname: 'Ada',
        lastname: 'King',
        status: 'i',
        type: 'teacher',
        importId: 'imp-7',
        auxInfo: '5a',
      });
      const record = sandboxUser(proxy, 'ada.l');
      assert.equal(record?.status, 'inactive');
      assert.equal(record?.lastname, 'King');
    });

    it('clears optional fields with null', async () => {
      const answer = await proxy.call<{ type: unknown }>('PUT', '/Entity/User/ada.l', { type: null });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.type, null);
      assert.equal(sandboxUser(proxy, 'ada.l')?.type, null);
    });

    it('follows a rename: the new ID works at once, the old one is 404 (cache invalidated)', async () => {
      await proxy.call('GET', '/Entity/User/status.r');
      const answer = await proxy.call<{ username: string }>('PUT', '/Entity/User/status.r', {
        username: 'status.renamed',
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.username, 'status.renamed');
      assert.equal((await proxy.call('GET', '/Entity/User/status.r')).status, 404);
      const renamed = await proxy.call<{ _id: string }>('GET', '/Entity/User/status.renamed');
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body._id, 'status.renamed');
    });

    it('rejects unknown fields, wrong types and bad statuses with 400 and changes nothing', async () => {
      const before = structuredClone(sandboxUser(proxy, 'ada.l'));
      for (const body of [
        { nickname: 'x' },
        { firstname: ['A'] },
        { status: 'active' },
        { username: '' },
        '{"firstname": ',
        '"text"',
      ]) {
        const answer = await proxy.call<ErrorBody>('PUT', '/Entity/User/ada.l', body);
        assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
        assert.equal(answer.body.code, 400);
      }
      assert.deepEqual(sandboxUser(proxy, 'ada.l'), before);
    });

    it('answers 404 for an unknown user and 403 for the protected one', async () => {
      const unknown = await proxy.call<ErrorBody>('PUT', '/Entity/User/nobody.here', { firstname: 'X' });
      assert.equal(unknown.status, 404, unknown.text);
      const protectedUser = await proxy.call<ErrorBody>('PUT', '/Entity/User/admin', { firstname: 'Evil' });
      assert.equal(protectedUser.status, 403, protectedUser.text);
      assert.match(protectedUser.body.message, /may not be deleted or updated/);
      assert.equal(sandboxUser(proxy, 'admin')?.firstname, 'Sandbox');
    });
  });

  describe('delete, restore, purge', () => {
    it('soft-deletes (204, empty body): GET shows deleted/deletedBy, the list leaves the user out', async () => {
      const answer = await proxy.call('DELETE', '/Entity/User/status.i');
      assert.equal(answer.status, 204);
      // The seed: every operation responds with application/json, the empty 204s included.
      assert.equal(answer.headers.get('content-type'), 'application/json');
      assert.equal(answer.text, '');
      const read = await proxy.call<{ deleted: string | null; deletedBy: string | null }>(
        'GET',
        '/Entity/User/status.i',
      );
      assert.equal(read.status, 200);
      assert.match(read.body.deleted ?? '', /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(read.body.deletedBy, 'admin');
      const list = await proxy.call<{ _id: string }[]>('GET', '/Entity/User');
      assert.ok(!list.body.some((u) => u._id === 'status.i'));
    });

    it('restores a deleted user (204)', async () => {
      const answer = await proxy.call('POST', '/User/status.i/restore');
      assert.equal(answer.status, 204, answer.text);
      assert.equal(answer.text, '');
      const read = await proxy.call<{ deleted: unknown; deletedBy: unknown }>('GET', '/Entity/User/status.i');
      assert.equal(read.body.deleted, null);
      assert.equal(read.body.deletedBy, null);
      assert.equal(sandboxUser(proxy, 'status.i')?.deleted, null);
    });

    it('answers 404 once the successor has purged the user after its retention period', async () => {
      assert.equal((await proxy.call('DELETE', '/Entity/User/status.a')).status, 204);
      assert.equal((await proxy.call('GET', '/Entity/User/status.a')).status, 200, 'still there, deleted');
      clock.advance(8 * 24 * 3600_000);
      const gone = await proxy.call<ErrorBody>('GET', '/Entity/User/status.a');
      assert.equal(gone.status, 404, gone.text);
      const restore = await proxy.call<ErrorBody>('POST', '/User/status.a/restore');
      assert.equal(restore.status, 404, restore.text);
    });

    it('answers 404 after a purge with purge=true through the successor API', async () => {
      await proxy.call('GET', '/Entity/User/ada.l'); // warm the ID cache
      const record = sandboxUser(proxy, 'ada.l');
      assert.ok(record);
      const purge = await proxy.successor.request({
        method: 'DELETE',
        path: `/users/${record.id}`,
        query: { purge: 'true' },
      });
      assert.equal(purge.status, 204);
      assert.equal((await proxy.call('GET', '/Entity/User/ada.l')).status, 404);
      assert.equal((await proxy.call('DELETE', '/Entity/User/ada.l')).status, 404);
    });

    it('answers 403 for the protected user and 404 for an unknown one', async () => {
      const protectedUser = await proxy.call<ErrorBody>('DELETE', '/Entity/User/admin');
      assert.equal(protectedUser.status, 403, protectedUser.text);
      assert.equal(sandboxUser(proxy, 'admin')?.deleted, null);
      assert.equal((await proxy.call('DELETE', '/Entity/User/nobody.here')).status, 404);
      assert.equal((await proxy.call('POST', '/User/nobody.here/restore')).status, 404);
    });
  });

  it('answers 405 with Allow for a wrong method on a known path', async () => {
    const answer = await proxy.call<ErrorBody>('PATCH', '/Entity/User/ada.l', { firstname: 'X' });
    assert.equal(answer.status, 405);
    assert.match(answer.headers.get('allow') ?? '', /GET/);
  });
});
