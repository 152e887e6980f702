// Hostile and careless input against the real proxy on the real sandbox over HTTP: bodies on
// operations that take none, oversized input quoted in messages, successor attribute names in
// error paths, writes to soft-deleted users, and internals in 5xx bodies.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { addApiUser } from '../src/auth/admin.js';
import { translationToLegacy } from '../src/http/errors.js';
import { TranslationError } from '../src/mapping/errors.js';
import { StoreUnavailableError } from '../src/store/errors.js';
import { openSqliteConnection } from '../src/store/sqlite/database.js';
import { type ErrorBody, groupLinks, snapshot } from './relation-helpers.js';
import { tempDir } from './temp-dir.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

describe('hardening', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy.close();
  });

  describe('operations without a body', () => {
    const operations: [method: string, path: string][] = [
      ['DELETE', '/Entity/User/lena.mueller'],
      ['POST', '/User/ben.krause/restore'],
      ['POST', '/User/lena.mueller/password/reset'],
      ['POST', '/User/lena.mueller/adminpassword/reset'],
      ['POST', '/User/lena.mueller/adminpassword/revoke'],
      ['DELETE', '/Entity/Group/ag.robotik'],
      ['DELETE', '/Entity/Role/ROLE_STAFF'],
    ];
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const bodies: [label: string, body: string][] = [
      ['malformed JSON', '{"a": '],
      ['10,000-deep JSON', deep],
      ['an object with a field', '{"password": "x"}'],
      ['an array with an item', '["lena.mueller"]'],
      ['JSON null', 'null'],
      ['plain text', 'hello'],
    ];

    for (const [method, path] of operations) {
      it(`${method} ${path} refuses a body with 400 and changes nothing`, async () => {
        const before = snapshot(proxy);
        for (const [label, body] of bodies) {
          proxy.resetCounts();
          const init: RequestInit = {
            method,
            headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
            body,
          };
          const response = await fetch(`${proxy.core}${path}`, init);
          const answer = (await response.json()) as ErrorBody;
          assert.equal(response.status, 400, `${label}: ${JSON.stringify(answer)}`);
          assert.equal(answer.code, 400);
          assert.match(answer.message, /takes no request body/);
          assert.deepEqual(proxy.apiCalls(), {}, `${label}: nothing reaches the successor`);
        }
        assert.equal(snapshot(proxy), before);
      });
    }

    it('still runs with an empty or blank body', async () => {
      const empty = await proxy.call('POST', '/User/lena.mueller/adminpassword/revoke', '');
      assert.equal(empty.status, 204, empty.text);
      const blank = await proxy.call('POST', '/User/lena.mueller/adminpassword/revoke', ' \r\n');
      assert.equal(blank.status, 204, blank.text);
    });

    it('runs with an empty JSON object or array, as HTTP clients send with every POST or DELETE', async () => {
      for (const body of ['{}', '[]', ' { }\n', '[\t]']) {
        const revoke = await fetch(`${proxy.core}/User/lena.mueller/adminpassword/revoke`, {
          method: 'POST',
          headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
          body,
        });
        assert.equal(revoke.status, 204, `${JSON.stringify(body)}: ${await revoke.text()}`);
      }
      const reset = await fetch(`${proxy.core}/User/lena.mueller/password/reset`, {
        method: 'POST',
        headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(reset.status, 200);
      assert.equal(typeof ((await reset.json()) as { password?: unknown }).password, 'string');
      const before = await proxy.call<{ deleted: unknown }>('GET', '/Entity/User/noah.hartmann');
      assert.equal(before.body.deleted, null, before.text);
      const deleted = await fetch(`${proxy.core}/Entity/User/noah.hartmann`, {
        method: 'DELETE',
        headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
        body: '[]',
      });
      assert.equal(deleted.status, 204, await deleted.text());
      const after = await proxy.call<{ deleted: unknown }>('GET', '/Entity/User/noah.hartmann');
      assert.notEqual(after.body.deleted, null, 'the user is soft-deleted');
    });
  });

  describe('quoted input is bounded', () => {
    // 10 KB: a whole URL stays under Node's 16 KB header limit.
    const long = 'x'.repeat(10_000);

    it('a 10 KB path ID: a short 404', async () => {
      const answer = await proxy.call<ErrorBody>('GET', `/Entity/User/${long}`);
      assert.equal(answer.status, 404, answer.text.slice(0, 200));
      assert.ok(answer.text.length < 1_000, `${answer.text.length} bytes`);
    });

    it('an unknown 250-character path ID: the message quotes 100 characters and cuts with …', async () => {
      const answer = await proxy.call<ErrorBody>('GET', `/Entity/User/${'x'.repeat(250)}`);
      assert.equal(answer.status, 404, answer.text);
      assert.equal(answer.body.message, `No user with ID "${'x'.repeat(100)}"…`);
    });

    it('an unknown 250-character link ID: quoted the same way in the message and its errors entry', async () => {
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/User/lena.mueller/link/roles', [
        'y'.repeat(250),
      ]);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.message, `Unknown role ID: "${'y'.repeat(100)}"…; nothing was changed`);
      assert.deepEqual(answer.body.errors, [
        { path: 'body.0', message: `no role with ID "${'y'.repeat(100)}"…` },
      ]);
    });

    it('a 10 KB path that names no operation', async () => {
      const answer = await proxy.call<ErrorBody>('GET', `/Entity/Nothing/${long}`);
      assert.equal(answer.status, 404);
      assert.ok(answer.text.length < 1_000, `${answer.text.length} bytes`);
      assert.match(answer.body.message, /^No such path: ".{100}"…$/);
    });

    it('1,000 unknown link IDs: the message lists 10 and the count of the rest, errors end with "and N more"', async () => {
      const ids = Array.from({ length: 1_000 }, (_, i) => `no-such-group-${i}-${'y'.repeat(40)}`);
      const before = snapshot(proxy);
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/User/lena.mueller/link/groups', ids);
      assert.equal(answer.status, 400, answer.text.slice(0, 200));
      assert.match(answer.body.message, /and 990 more; nothing was changed$/);
      assert.equal(answer.body.errors?.length, 101);
      assert.deepEqual(answer.body.errors?.at(-1), { path: 'body', message: 'and 900 more' });
      assert.ok(answer.text.length < 12_000, `${answer.text.length} bytes`);
      assert.equal(snapshot(proxy), before);
    });

    it('an unknown 10 KB body key is cut in the path and the message', async () => {
      const answer = await proxy.call<ErrorBody>('PUT', '/Entity/User/lena.mueller', { [long]: 1 });
      assert.equal(answer.status, 400);
      assert.ok(answer.text.length < 1_000, `${answer.text.length} bytes`);
    });

    it('an unknown 10 KB body ID of a link call', async () => {
      const answer = await proxy.call<ErrorBody>('POST', '/Entity/User/lena.mueller/link/roles', [long]);
      assert.equal(answer.status, 400);
      assert.ok(answer.text.length < 1_000, `${answer.text.length} bytes`);
    });
  });

  describe('successor refusals name legacy fields', () => {
    const cases: [label: string, method: string, path: string, body: unknown, field: string][] = [
      [
        'a taken username',
        'POST',
        '/Entity/User',
        { username: 'lena.mueller', firstname: 'A', lastname: 'B' },
        'body.username',
      ],
      [
        'an invalid username',
        'POST',
        '/Entity/User',
        { username: 'Bad Name!', firstname: 'A', lastname: 'B' },
        'body.username',
      ],
      ['a taken account', 'PUT', '/Entity/Group/ag.robotik', { account: 'lehrer' }, 'body.account'],
      // Not in the field table: the step's body fills the successor's attribute from this field.
      ['a password too short', 'POST', '/User/lena.mueller/password', { password: 'short' }, 'body.password'],
      // The successor refuses the role's technical key, which the step derives from the name.
      [
        'a role name whose key is taken',
        'POST',
        '/Entity/Role',
        { name: 'Staff', module: 'Core' },
        'body.name',
      ],
      [
        'an admin password too short',
        'POST',
        '/User/lena.mueller/adminpassword',
        { password: 'short' },
        'body.password',
      ],
    ];
    for (const [label, method, path, body, field] of cases) {
      it(`${label}: errors[].path is ${field}, never the successor's attribute`, async () => {
        const before = snapshot(proxy);
        const answer = await proxy.call<ErrorBody>(method, path, body);
        assert.equal(answer.status, 400, answer.text);
        assert.deepEqual(
          answer.body.errors?.map((e) => e.path),
          [field],
        );
        assert.match(answer.body.message, new RegExp(`^The successor rejected the request: ${field}: `));
        // A successor attribute named bare (`password: …`), not as a legacy path (`body.password: …`).
        assert.doesNotMatch(answer.text, /"(user|group)"|(?<![.\w])(user|group|password): |\/iserv\/idm/);
        assert.equal(snapshot(proxy), before);
      });
    }
  });

  describe('5xx bodies name no internals', () => {
    const UUID = /[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}/i;
    const assertNoInternals = (answer: { text: string; headers: Headers }, status: number) => {
      const requestId = answer.headers.get('x-request-id') ?? '';
      assert.ok(requestId !== '');
      const body = answer.text.replace(requestId, '<id>');
      assert.doesNotMatch(body, /\/iserv\/idm|\/iserv\/auth|127\.0\.0\.1|:\d{4,5}\b|successor\./, body);
      assert.doesNotMatch(body, UUID, body);
      assert.ok(
        answer.text.includes(`request id ${requestId}: the operator finds the details in the log`),
        answer.text,
      );
      const logged = proxy.logSink
        .lines()
        .find((line) => line.reqId === requestId && line.msg === 'request failed');
      assert.ok(logged, `a log line for ${requestId}`);
      assert.match(String(logged.successor), /\/iserv\/idm\/api\/v1\/users/, 'the details are in the log');
      assert.equal(JSON.parse(answer.text).code, status);
    };

    it('502 on a failing successor: what failed in words and the request id; the successor path only in the log', async () => {
      proxy.sandbox.faults.set({ rules: [{ match: 'PATCH /users/{id}', status: 500 }] });
      try {
        const answer = await proxy.call<ErrorBody>('PUT', '/Entity/User/lena.mueller', { firstname: 'X' });
        assert.equal(answer.status, 502, answer.text);
        assert.match(answer.body.message, /^The successor is unreachable or failing; request id /);
        assertNoInternals(answer, 502);
      } finally {
        proxy.sandbox.faults.reset();
      }
    });

    it('502 when the successor drops the connection: no address in the body', async () => {
      proxy.sandbox.faults.set({ rules: [{ match: 'GET *', status: 0 }] });
      try {
        const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/jonas.schmidt');
        assert.equal(answer.status, 502, answer.text);
        assertNoInternals(answer, 502);
      } finally {
        proxy.sandbox.faults.reset();
      }
    });
  });

  describe('a write whose answer fails after it went through', () => {
    it('says the change is in effect, so the caller reads back instead of repeating it', async () => {
      // The unlink reads the user (its links, for a rollback), deletes the link, and reads the user
      // again for its answer: that last read fails.
      assert.equal(
        (await proxy.call('POST', '/Entity/User/jonas.schmidt/link/groups', ['lehrer'])).status,
        200,
      );
      proxy.sandbox.faults.set({ rules: [{ match: 'GET /users/{id}', skip: 1, times: 1, status: 503 }] });
      try {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>('DELETE', '/Entity/User/jonas.schmidt/link/groups', [
          'lehrer',
        ]);
        assert.equal(answer.status, 502, answer.text);
        assert.match(answer.body.message, /^The successor is unreachable or failing; request id [^.]+\. /);
        assert.match(
          answer.body.message,
          /The change went through \(.+\); only its answer failed: read the user back instead of repeating the call$/,
        );
        assert.equal(proxy.apiCalls()['DELETE /users/{id}/groups/{groupId}'], 1);
      } finally {
        proxy.sandbox.faults.reset();
      }
      const user = await proxy.call<{ groups: string[] }>('GET', '/Entity/User/jonas.schmidt');
      assert.ok(!user.body.groups.includes('lehrer'), user.text);
    });

    it('answers a create whose legacy ID the locked store could not give with 503, the change in effect', async () => {
      // Groups get their legacy IDs from the store's ID table (a sequence) here; another process
      // holds the store's write lock for longer than the busy timeout (5 s).
      const tabled = await startUserProxy({ copyProfile: true });
      try {
        const file = path.join(tabled.profileDir, 'ids.json');
        const ids = JSON.parse(readFileSync(file, 'utf8'));
        ids.kinds.group = { strategy: 'table', assign: { rule: 'sequence', prefix: 'G', start: 1 } };
        writeFileSync(file, JSON.stringify(ids));
        assert.equal(tabled.mappings.reload().ok, true);
        assert.equal((await tabled.call('GET', '/Entity/Group')).status, 200, 'the seeded groups numbered');
        const other = openSqliteConnection(path.join(tabled.dir, 'store.db'));
        other.exec('BEGIN IMMEDIATE');
        let answer: Awaited<ReturnType<typeof tabled.call<ErrorBody>>>;
        try {
          answer = await tabled.call<ErrorBody>('POST', '/Entity/Group', { name: 'Locked Out' });
        } finally {
          other.exec('ROLLBACK');
          other.close();
        }
        assert.equal(answer.status, 503, answer.text);
        assert.equal(answer.headers.get('retry-after'), null);
        assert.match(
          answer.body.message,
          /^the store \(SQLite\) is unavailable: SQLITE_BUSY\. The change went through \(.+\); only its answer failed: read the group back instead of repeating the call$/,
        );
        const list = await tabled.call<{ name: string }[]>('GET', '/Entity/Group');
        assert.ok(
          list.body.some((group) => group.name === 'Locked Out'),
          'created, and numbered by the next read',
        );
      } finally {
        await tabled.close();
      }
    });

    it('answers a store that failed meanwhile with 503, the change in effect, and no Retry-After', () => {
      const error = translationToLegacy(
        new TranslationError(
          'unanswered',
          'The change went through (POST /groups); only its answer failed: read the group back instead of repeating the call',
          {
            cause: new StoreUnavailableError('the store (PostgreSQL) is unavailable: a statement timed out'),
          },
        ),
      );
      assert.equal(error.status, 503);
      assert.equal(
        error.message,
        'the store (PostgreSQL) is unavailable: a statement timed out. The change went through (POST /groups); only its answer failed: read the group back instead of repeating the call',
      );
      assert.equal(error.headers, undefined);
    });
  });

  describe('a timeout of a write', () => {
    let slow: UserProxy;
    before(async () => {
      slow = await startUserProxy({ timeouts: { totalMs: 400 } });
      const warm = await slow.call('PUT', '/Entity/User/lena.mueller', { firstname: 'Lena' });
      assert.equal(warm.status, 200, 'read and write tokens and the ID cached');
    });
    after(async () => {
      await slow.close();
    });

    it('504 says the outcome is unknown when the write itself got no answer, not on a read', async () => {
      slow.sandbox.faults.set({ latencyMs: 1_000 });
      try {
        // A create writes at once (nothing to resolve first).
        const write = await slow.call<ErrorBody>('POST', '/Entity/Group', { name: 'Late Group' });
        assert.equal(write.status, 504, write.text);
        assert.match(
          write.body.message,
          /^The successor did not answer in time; the outcome of the change is unknown/,
        );
        assert.doesNotMatch(write.text, /\/iserv\/idm|totalMs|\d+ ms/);
        const read = await slow.call<ErrorBody>('GET', '/Entity/User/lena.mueller');
        assert.equal(read.status, 504, read.text);
        assert.doesNotMatch(read.body.message, /outcome/);
      } finally {
        slow.sandbox.faults.reset();
      }
    });

    it('504 without "unknown" when the read before a write timed out: nothing was sent', async () => {
      slow.sandbox.faults.set({ latencyMs: 1_000 });
      try {
        // The update first reads the user (a soft-deleted one may not be changed).
        slow.resetCounts();
        const write = await slow.call<ErrorBody>('PUT', '/Entity/User/lena.mueller', { firstname: 'Never' });
        assert.equal(write.status, 504, write.text);
        assert.match(write.body.message, /^The successor did not answer in time; request id /);
        assert.doesNotMatch(write.body.message, /outcome|may or may not/);
        assert.deepEqual(Object.keys(slow.apiCalls()), ['GET /users/{id}']);
      } finally {
        slow.sandbox.faults.reset();
      }
      const user = await slow.call<{ firstname: string }>('GET', '/Entity/User/lena.mueller');
      assert.equal(user.body.firstname, 'Lena');
    });
  });

  describe('a write whose connection drops', () => {
    it('502 says the outcome is unknown when the write itself went out, not when the read before it dropped', async () => {
      // Dropped once the sandbox has read the request: from the proxy, just like a successor that
      // deleted the user and then lost the connection.
      proxy.sandbox.faults.set({ rules: [{ match: 'DELETE /users/{id}', status: 0 }] });
      try {
        const write = await proxy.call<ErrorBody>('DELETE', '/Entity/User/mia.fischer');
        assert.equal(write.status, 502, write.text);
        assert.match(
          write.body.message,
          /^The successor is unreachable or failing; the outcome of the change is unknown: it may or may not be in effect, check it before retrying; request id /,
        );
        // An update reads the user first (a soft-deleted one may not be changed).
        proxy.sandbox.faults.set({ rules: [{ match: 'GET *', status: 0 }] });
        proxy.resetCounts();
        const read = await proxy.call<ErrorBody>('PUT', '/Entity/User/mia.fischer', { firstname: 'Never' });
        assert.equal(read.status, 502, read.text);
        assert.doesNotMatch(read.body.message, /outcome|may or may not/);
        assert.ok(
          Object.keys(proxy.apiCalls()).every((call) => call.startsWith('GET ')),
          'only reads were sent',
        );
      } finally {
        proxy.sandbox.faults.reset();
      }
    });
  });

  describe('a link call that fails after its write', () => {
    it('rolls back only what it changed, also with one item and a later step failing', async () => {
      // A profile whose group unlink reads the members after its DELETE: with one item, that read
      // failing is a failure after the write, and the rollback must know the links before.
      const custom = await startUserProxy({ copyProfile: true });
      try {
        const file = path.join(custom.profileDir, 'operations', 'group.json');
        const table = JSON.parse(readFileSync(file, 'utf8'));
        table.operations['group.link.users.remove'].steps.push({
          method: 'GET',
          path: '/groups/{entity.uuid}/members',
        });
        writeFileSync(file, JSON.stringify(table));
        assert.equal(custom.mappings.reload().ok, true);
        assert.ok(
          !groupLinks(custom, 'klasse.7b').users.includes('lena.mueller'),
          'precondition: not a member',
        );
        assert.equal((await custom.call('GET', '/Entity/Group/klasse.7b')).status, 200, 'the ID cached');
        custom.sandbox.faults.set({ rules: [{ match: 'GET /groups/{id}/members', status: 503, times: 1 }] });
        const answer = await custom.call<ErrorBody>('DELETE', '/Entity/Group/klasse.7b/link/users', [
          'lena.mueller',
        ]);
        custom.sandbox.faults.reset();
        assert.equal(answer.status, 502, answer.text);
        assert.equal(custom.apiCalls()['POST /groups/{id}/members'], undefined, 'nothing re-added');
        assert.ok(!groupLinks(custom, 'klasse.7b').users.includes('lena.mueller'), 'still not a member');
      } finally {
        await custom.close();
      }
    });
  });

  describe('a store file locked by another process', () => {
    /** An SSO token for lena.mueller: a store write on every call. */
    const authenticate = () =>
      fetch(`${proxy.url}/iserv/api/Service/Sso/authenticate`, {
        method: 'POST',
        headers: { authorization: proxy.authorization },
        body: new URLSearchParams({ username: 'lena.mueller' }),
      });

    it('serves what needs no store write while it waits, then answers 503 with Retry-After, then serves again', async () => {
      // Another process holds the SQLite store's write lock beyond the busy timeout (5 s): the
      // throttle counter of a wrong password and the SSO token cannot be written.
      const issued = await authenticate();
      assert.equal(issued.status, 200, 'the credential cached');
      const link = ((await issued.json()) as { return_to: string }).return_to;
      assert.equal((await proxy.call('GET', '/Entity/User/lena.mueller')).status, 200, 'the ID cached');
      const wrong = `Basic ${Buffer.from('tester:not-the-password').toString('base64')}`;
      const other = openSqliteConnection(path.join(proxy.dir, 'store.db'));
      other.exec('BEGIN IMMEDIATE');
      let failedLogin: Response;
      let token: Response;
      let page: Response;
      try {
        // The proxy runs in this process: SQLite's own busy handler slept on its event loop for the
        // whole 5 s of each write, and nothing else was served meanwhile.
        const stood = monitorEventLoopDelay({ resolution: 10 });
        stood.enable();
        const writes = [
          fetch(`${proxy.core}/Entity/User/lena.mueller`, { headers: { authorization: wrong } }),
          authenticate(),
          // A browser following the SSO link: the token cannot be used up.
          fetch(link, { redirect: 'manual' }),
        ];
        const read = await Promise.race([
          proxy.call('GET', '/Entity/User/lena.mueller').then((answer) => answer.status),
          Promise.race(writes).then(() => 'a write was answered first'),
        ]);
        assert.equal(read, 200);
        const waiting = Promise.all(writes);
        await waiting;
        stood.disable();
        assert.ok(stood.max < 2.5e9, `the event loop stood still for ${Math.round(stood.max / 1e6)} ms`);
        [failedLogin, token, page] = await waiting;
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      for (const answer of [failedLogin, token]) {
        assert.equal(answer.status, 503);
        assert.equal(answer.headers.get('retry-after'), '5');
        assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
        assert.deepEqual(await answer.json(), {
          code: 503,
          message: 'the store (SQLite) is unavailable: SQLITE_BUSY',
        });
      }
      // The browser gets the SSO page, not the legacy JSON; the link still works afterwards.
      assert.equal(page.status, 503);
      assert.equal(page.headers.get('retry-after'), '5');
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(page.headers.get('cache-control'), 'no-store');
      assert.match(await page.text(), /<h1>Sign-in is not available right now<\/h1>/);
      assert.equal((await fetch(link, { redirect: 'manual' })).status, 302, 'the token was not used up');
      assert.equal((await authenticate()).status, 200, 'the lock released, tokens are written again');
      const guess = () =>
        fetch(`${proxy.core}/Entity/User/lena.mueller`, { headers: { authorization: wrong } }).then(
          (answer) => answer.status,
        );
      // That user's failure went uncounted: its checks past the cache get the 503 for 5 s more,
      // then failures are counted again.
      assert.equal(await guess(), 503);
      let status = 503;
      for (let i = 0; i < 30 && status === 503; i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        status = await guess();
      }
      assert.equal(status, 401);
    });

    it('lets the right password in when the counters of an earlier failure cannot be reset (logged), not 503', async () => {
      const password = (
        await addApiUser(proxy.store, proxy.services.clock, 'resetter', ['127.0.0.0/8', '::1/128'])
      ).password;
      const basic = (secret: string) => `Basic ${Buffer.from(`resetter:${secret}`).toString('base64')}`;
      const login = (secret: string) =>
        fetch(`${proxy.core}/Entity/User/lena.mueller`, { headers: { authorization: basic(secret) } });
      assert.equal((await login('a-typo')).status, 401, 'one failure: a counter the success resets');
      const other = openSqliteConnection(path.join(proxy.dir, 'store.db'));
      other.exec('BEGIN IMMEDIATE');
      let answer: Response;
      try {
        answer = await login(password);
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      assert.equal(answer.status, 200, await answer.text());
      const warned = proxy.logSink
        .lines()
        .find((line) => line.msg === 'could not reset the failed-login counters after a successful login');
      assert.equal(warned?.apiUser, 'resetter');
      assert.ok(!proxy.logSink.text.includes(password));
    });

    it('does not tell the right password from wrong ones while the failures cannot be counted: 503 for both', async () => {
      const password = (
        await addApiUser(proxy.store, proxy.services.clock, 'oracle', ['127.0.0.0/8', '::1/128'])
      ).password;
      const login = (secret: string) =>
        fetch(`${proxy.core}/Entity/User/lena.mueller`, {
          headers: { authorization: `Basic ${Buffer.from(`oracle:${secret}`).toString('base64')}` },
        });
      const other = openSqliteConnection(path.join(proxy.dir, 'store.db'));
      other.exec('BEGIN IMMEDIATE');
      let wrong: Response;
      try {
        wrong = await login('a-guess');
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      assert.equal(wrong.status, 503, 'the failure could not be counted');
      // Right after: the right password gets the same answer, not a 200 that would confirm it.
      const right = await login(password);
      assert.equal(right.status, 503, await right.text());
    });

    it('waits for a lock another process holds for a moment, and writes', async () => {
      assert.equal((await authenticate()).status, 200, 'the credential and the successor token at hand');
      const other = openSqliteConnection(path.join(proxy.dir, 'store.db'));
      other.exec('BEGIN IMMEDIATE');
      const release = () => {
        clearTimeout(timer);
        if (!released) other.exec('ROLLBACK');
        released = true;
      };
      let released = false;
      const timer = setTimeout(release, 300);
      try {
        const answer = await authenticate();
        assert.equal(answer.status, 200, await answer.text());
        assert.ok(released, 'answered after the lock was released');
      } finally {
        release();
        other.close();
      }
    });
  });

  describe('a soft-deleted user', () => {
    const changes: [method: string, path: string, body: unknown][] = [
      ['PUT', '/Entity/User/ben.krause', { firstname: 'Changed' }],
      ['POST', '/Entity/User/ben.krause/link/groups', ['lehrer']],
      ['DELETE', '/Entity/User/ben.krause/link/groups', ['schueler']],
      ['POST', '/Entity/User/ben.krause/link/roles', ['ROLE_TEACHER']],
      ['DELETE', '/Entity/User/ben.krause/link/roles', ['ROLE_STUDENT']],
      ['POST', '/Entity/User/ben.krause/link/privileges', ['mail_external']],
      ['DELETE', '/Entity/User/ben.krause/link/privileges', ['mail_external']],
      ['POST', '/User/ben.krause/password', { password: 'a-new-password' }],
      ['POST', '/User/ben.krause/password/reset', undefined],
      ['POST', '/User/ben.krause/adminpassword', { password: 'a-new-password' }],
      ['POST', '/User/ben.krause/adminpassword/reset', undefined],
      ['POST', '/User/ben.krause/adminpassword/revoke', undefined],
    ];

    it('refuses every change with 403 and writes nothing; GET still answers', async () => {
      assert.ok(proxy.sandbox.data.userByAccount('ben.krause')?.deleted, 'precondition: soft-deleted');
      const before = snapshot(proxy);
      for (const [method, path, body] of changes) {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>(method, path, body);
        assert.equal(answer.status, 403, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.body.code, 403);
        assert.match(answer.body.message, /deleted and may not be changed; restore it first/);
        assert.ok(
          Object.keys(proxy.apiCalls()).every((key) => key.startsWith('GET ')),
          `${method} ${path}: no write: ${JSON.stringify(proxy.apiCalls())}`,
        );
      }
      assert.equal(snapshot(proxy), before);
      const read = await proxy.call<{ deleted: string | null }>('GET', '/Entity/User/ben.krause');
      assert.equal(read.status, 200);
      assert.notEqual(read.body.deleted, null);
    });

    it('accepts changes again once restored', async () => {
      assert.equal((await proxy.call('POST', '/User/ben.krause/restore')).status, 204);
      const answer = await proxy.call('PUT', '/Entity/User/ben.krause', { firstname: 'Benno' });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(proxy.sandbox.data.userByAccount('ben.krause')?.firstname, 'Benno');
    });
  });
});

describe('a profile without the refusal of a soft-deleted user', () => {
  let proxy: UserProxy;
  let dir = '';
  before(async () => {
    // The default profile with `refuseWhen` taken off the link of groups and the unlink of roles
    // (docs/mappings.md).
    dir = tempDir('no-refusal');
    const profile = path.join(dir, 'iserv-idm-v1');
    cpSync(path.resolve('mappings/iserv-idm-v1'), profile, { recursive: true });
    const file = path.join(profile, 'operations', 'user.json');
    const table = JSON.parse(readFileSync(file, 'utf8')) as {
      operations: Record<string, { subject: { refuseWhen?: unknown } }>;
    };
    for (const id of ['user.link.groups.add', 'user.link.roles.remove']) {
      const operation = table.operations[id];
      assert.ok(operation?.subject.refuseWhen, `precondition: the default profile refuses in ${id}`);
      delete operation.subject.refuseWhen;
    }
    writeFileSync(file, JSON.stringify(table));
    proxy = await startUserProxy({ profile });
  });
  after(async () => {
    await proxy?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('links a group to a soft-deleted user with the write alone, and still refuses what keeps the refusal', async () => {
    assert.ok(proxy.sandbox.data.userByAccount('ben.krause')?.deleted, 'precondition: soft-deleted');
    const first = await proxy.call('POST', '/Entity/User/ben.krause/link/groups', ['lehrer']);
    assert.equal(first.status, 200, first.text);
    // Warm ID caches: the link is its POST, no read of the user first.
    proxy.resetCounts();
    const again = await proxy.call('POST', '/Entity/User/ben.krause/link/groups', ['lehrer']);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(proxy.apiCalls(), { 'POST /users/{id}/groups': 1 });
    const unlink = await proxy.call<ErrorBody>('DELETE', '/Entity/User/ben.krause/link/groups', ['lehrer']);
    assert.equal(unlink.status, 403, unlink.text);
  });

  it('unlinks one role with its DELETE and the read-back, and reads the links first only to undo several', async () => {
    const linked = await proxy.call('POST', '/Entity/User/lena.mueller/link/roles', [
      'ROLE_STAFF',
      'ROLE_STUDENT',
    ]);
    assert.equal(linked.status, 200, linked.text);
    proxy.resetCounts();
    // One role: nothing can need undoing, so nothing is read before the DELETE.
    const one = await proxy.call<{ roles: string[] }>('DELETE', '/Entity/User/lena.mueller/link/roles', [
      'ROLE_STAFF',
    ]);
    assert.equal(one.status, 200, one.text);
    assert.ok(!one.body.roles.includes('ROLE_STAFF') && one.body.roles.includes('ROLE_STUDENT'), one.text);
    assert.deepEqual(proxy.apiCalls(), { 'DELETE /users/{id}/roles/{roleId}': 1, 'GET /users/{id}': 1 });
    proxy.resetCounts();
    // Two roles: the links before, for an exact undo should the second DELETE fail.
    const two = await proxy.call<{ roles: string[] }>('DELETE', '/Entity/User/lena.mueller/link/roles', [
      'ROLE_STUDENT',
      'ROLE_STAFF',
    ]);
    assert.equal(two.status, 200, two.text);
    assert.ok(!two.body.roles.includes('ROLE_STUDENT'), two.text);
    assert.deepEqual(proxy.apiCalls(), { 'DELETE /users/{id}/roles/{roleId}': 2, 'GET /users/{id}': 2 });
  });
});
