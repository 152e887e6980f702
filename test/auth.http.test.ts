// Every authentication outcome over real HTTP: credentials, ranges, IPv6 and IPv4-mapped peers,
// trusted proxies and forged X-Forwarded-For.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AuthHarness, call, closeSharedSandbox, PROTECTED, startHarness } from './auth-helpers.js';

interface ErrorBody {
  code: number;
  message: string;
  errors?: unknown[];
}

function assertError(
  response: { status: number; headers: Headers; body: unknown },
  status: number,
): ErrorBody {
  assert.equal(response.status, status);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const body = response.body as ErrorBody;
  assert.equal(body.code, status);
  assert.equal(typeof body.message, 'string');
  assert.doesNotMatch(JSON.stringify(body), /at .*\.(ts|js):\d+/, 'no stack trace');
  return body;
}

after(closeSharedSandbox);

describe('API-user authentication over IPv4, IPv6 and IPv4-mapped peers', () => {
  let h: AuthHarness;
  const passwords: Record<string, string> = {};

  before(async () => {
    h = await startHarness({ hosts: ['127.0.0.1', '::1', '::'] });
    passwords.local = await h.addUser('local', ['127.0.0.0/8', '::1/128']);
    passwords.v4only = await h.addUser('v4only', ['127.0.0.1/32']);
    passwords.v6only = await h.addUser('v6only', ['::1/128']);
    passwords.remote = await h.addUser('remote', ['10.0.0.0/8']);
  });
  after(() => h?.close());

  const v4 = () => h.urls['127.0.0.1'] ?? '';
  const v6 = () => h.urls['::1'] ?? '';
  const dual = () => h.urls['::'] ?? '';

  it('accepts the right credentials from inside the range', async () => {
    const response = await call(`${v4()}${PROTECTED}`, { user: 'local', password: passwords.local });
    assert.equal(response.status, 200);
    assert.equal((response.body as { openapi: string }).openapi, '3.1.0');
  });

  it('answers 401 with a Basic challenge without credentials', async () => {
    const response = await call(`${v4()}${PROTECTED}`);
    const body = assertError(response, 401);
    assert.equal(response.headers.get('www-authenticate'), 'Basic realm="idm-compat", charset="UTF-8"');
    assert.match(body.message, /Authentication required/);
  });

  it('answers 401 for malformed or non-Basic credentials', async () => {
    for (const authorization of [
      'Bearer abc',
      'Basic !!!',
      `Basic ${Buffer.from('nocolon').toString('base64')}`,
    ]) {
      const response = await call(`${v4()}${PROTECTED}`, { headers: { authorization } });
      assertError(response, 401);
      assert.ok(response.headers.get('www-authenticate'));
    }
  });

  it('answers the same 401 for a wrong password and for an unknown user', async () => {
    const wrong = await call(`${v4()}${PROTECTED}`, { user: 'local', password: 'not-the-password' });
    const unknown = await call(`${v4()}${PROTECTED}`, { user: 'nobody', password: 'whatever' });
    const a = assertError(wrong, 401);
    const b = assertError(unknown, 401);
    assert.deepEqual(a, b);
    assert.equal(wrong.headers.get('www-authenticate'), unknown.headers.get('www-authenticate'));
  });

  it('answers 403 from outside the ranges, but only after the password checked out', async () => {
    const right = await call(`${v4()}${PROTECTED}`, { user: 'remote', password: passwords.remote });
    const body = assertError(right, 403);
    assert.match(body.message, /127\.0\.0\.1/);
    // A wrong password from outside the range is a 401: ranges cannot be probed without the password.
    const wrong = await call(`${v4()}${PROTECTED}`, { user: 'remote', password: 'guess' });
    assertError(wrong, 401);
  });

  it('matches an IPv6 peer (::1) against IPv6 ranges', async () => {
    assert.equal(
      (await call(`${v6()}${PROTECTED}`, { user: 'v6only', password: passwords.v6only })).status,
      200,
    );
    assert.equal(
      (await call(`${v6()}${PROTECTED}`, { user: 'local', password: passwords.local })).status,
      200,
    );
    const v4user = await call(`${v6()}${PROTECTED}`, { user: 'v4only', password: passwords.v4only });
    assert.match(assertError(v4user, 403).message, /::1/);
  });

  it('matches an IPv4-mapped peer (::ffff:127.0.0.1 on a dual-stack socket) against IPv4 ranges', async () => {
    assert.equal(
      (await call(`${dual()}${PROTECTED}`, { user: 'v4only', password: passwords.v4only })).status,
      200,
    );
    const v6user = await call(`${dual()}${PROTECTED}`, { user: 'v6only', password: passwords.v6only });
    // The mapped peer is reported (and matched) as the IPv4 address it is.
    assert.match(assertError(v6user, 403).message, /may not call from 127\.0\.0\.1$/);
  });

  it('ignores X-Forwarded-For when no proxy is trusted', async () => {
    const response = await call(`${v4()}${PROTECTED}`, {
      user: 'remote',
      password: passwords.remote,
      headers: { 'x-forwarded-for': '10.1.2.3' },
    });
    assertError(response, 403);
  });

  it('protects everything below the base path; health checks stay open', async () => {
    for (const path of [
      '/iserv/api',
      '/iserv/api/',
      '/iserv/api/docs/',
      '/iserv/api/Service/Core/Entity/User',
      '/iserv/api/nothing/here',
    ]) {
      assertError(await call(`${v4()}${path}`), 401);
    }
    assert.equal((await call(`${v4()}/healthz`)).status, 200);
    const unknown = await call(`${v4()}/iserv/api/nothing/here`, {
      user: 'local',
      password: passwords.local,
    });
    assertError(unknown, 404);
  });

  it('sets the API user on the request log line', async () => {
    await call(`${v4()}${PROTECTED}`, {
      user: 'local',
      password: passwords.local,
      headers: { 'x-request-id': 'log-apiuser-1' },
    });
    const line = h.logSink.lines().find((l) => l.reqId === 'log-apiuser-1' && l.msg === 'request completed');
    assert.equal(line?.apiUser, 'local');
    assert.equal(line?.status, 200);
  });

  it('redacts a credential pasted into the path on the request log line, and keeps a name that only looks like one', async () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.PastedSig-42';
    const paths = {
      'log-path-bearer': `/iserv/api/Service/Core/Entity/User/Bearer%20${jwt}`,
      'log-path-token': `/iserv/api/Service/Core/Entity/User/ada;token=${jwt}`,
      'log-path-group': '/iserv/api/Service/Core/Entity/Group/Basic%20English',
      // A secret's parameter as the whole segment, as the query's redaction reads it.
      'log-path-param': '/iserv/api/Service/Core/Entity/User/secretpass%3DPastedSig-43',
      'log-path-sso': `/iserv/api/Service/Core/Entity/User/token=${jwt}`,
      // Every name the query's redaction takes for a secret's, in a segment too.
      'log-path-key': '/iserv/api/Service/Core/Entity/User/api_key=PastedSig-44',
      'log-path-session': '/iserv/api/Service/Core/Entity/User/ada;session_id=PastedSig-45',
      'log-path-credential': '/iserv/api/Service/Core/Entity/User/credential%3DPastedSig-46',
    };
    for (const [requestId, path] of Object.entries(paths))
      await call(`${v4()}${path}`, {
        user: 'local',
        password: passwords.local,
        headers: { 'x-request-id': requestId },
      });
    const logged = (requestId: string) =>
      h.logSink.lines().find((l) => l.reqId === requestId && l.msg === 'request completed')?.path;
    assert.ok(!h.logSink.text.includes('PastedSig-4'), 'the pasted tokens are nowhere in the log');
    assert.equal(logged('log-path-param'), '/iserv/api/Service/Core/Entity/User/[redacted]');
    assert.equal(logged('log-path-sso'), '/iserv/api/Service/Core/Entity/User/[redacted]');
    for (const requestId of ['log-path-key', 'log-path-credential'])
      assert.equal(logged(requestId), '/iserv/api/Service/Core/Entity/User/[redacted]', requestId);
    // A session parameter is redacted in place, as a token parameter is.
    assert.equal(logged('log-path-session'), '/iserv/api/Service/Core/Entity/User/ada;session_id=[redacted]');
    assert.equal(logged('log-path-bearer'), '/iserv/api/Service/Core/Entity/User/[redacted]');
    assert.equal(logged('log-path-token'), '/iserv/api/Service/Core/Entity/User/ada;token=[redacted]');
    assert.equal(logged('log-path-group'), '/iserv/api/Service/Core/Entity/Group/Basic English');
  });
});

describe('trusted proxies', () => {
  let h: AuthHarness;
  let password = '';

  before(async () => {
    // Only IPv4 loopback is a trusted proxy; ::1 is an ordinary client.
    h = await startHarness({
      hosts: ['127.0.0.1', '::1'],
      config: { server: { trustedProxies: ['127.0.0.0/8'] } },
    });
    password = await h.addUser('proxied', ['198.51.100.0/24']);
  });
  after(() => h?.close());

  const through = (xff: string | undefined, host: '127.0.0.1' | '::1' = '127.0.0.1') =>
    call(`${h.urls[host]}${PROTECTED}`, {
      user: 'proxied',
      password,
      headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
    });

  it('takes the client address from X-Forwarded-For of a trusted peer', async () => {
    assert.equal((await through('198.51.100.7')).status, 200);
  });

  it('skips further trusted proxies from the right', async () => {
    assert.equal((await through('198.51.100.7, 127.0.0.5, 127.0.0.9')).status, 200);
  });

  it('uses the rightmost untrusted entry, so a forged entry on the left does not help', async () => {
    // The client sent "X-Forwarded-For: 198.51.100.7"; the proxy appended the real 203.0.113.9.
    const response = await through('198.51.100.7, 203.0.113.9');
    assert.equal(response.status, 403);
    assert.match((response.body as ErrorBody).message, /203\.0\.113\.9/);
  });

  it('uses the peer when a trusted proxy sends no X-Forwarded-For', async () => {
    const response = await through(undefined);
    assert.equal(response.status, 403);
    assert.match((response.body as ErrorBody).message, /127\.0\.0\.1/);
  });

  it('fails closed on a garbage entry where the client should be', async () => {
    const response = await through('198.51.100.7, not-an-address');
    assert.equal(response.status, 403);
    assert.match((response.body as ErrorBody).message, /unknown address/);
  });

  it('ignores X-Forwarded-For from an untrusted peer (::1)', async () => {
    const response = await through('198.51.100.7', '::1');
    assert.equal(response.status, 403);
    assert.match((response.body as ErrorBody).message, /::1/);
  });
});

describe('a trusted proxy connecting over IPv6', () => {
  let h: AuthHarness;
  let password = '';

  before(async () => {
    // Only the IPv6 loopback is a trusted proxy; 127.0.0.1 is an ordinary client.
    h = await startHarness({
      hosts: ['127.0.0.1', '::1'],
      config: { server: { trustedProxies: ['::1/128'] } },
    });
    password = await h.addUser('v6proxied', ['198.51.100.0/24', '2001:db8:7::/48']);
  });
  after(() => h?.close());

  const through = (xff: string, host: '127.0.0.1' | '::1' = '::1') =>
    call(`${h.urls[host]}${PROTECTED}`, {
      user: 'v6proxied',
      password,
      headers: { 'x-forwarded-for': xff },
    });

  it('takes IPv4, ip:port, IPv4-mapped and [v6]:port clients from its X-Forwarded-For', async () => {
    for (const xff of [
      '198.51.100.7',
      '198.51.100.7:5040',
      '::ffff:198.51.100.7',
      '[2001:db8:7::1]:443',
      '2001:db8:7::1, ::1',
    ]) {
      const response = await through(xff);
      assert.equal(response.status, 200, `${xff}: ${response.text}`);
    }
  });

  it('uses the rightmost untrusted entry and names it in the 403', async () => {
    const response = await through('198.51.100.7, [2001:db8:9::1]:443');
    assert.match(assertError(response, 403).message, /may not call from 2001:db8:9::1$/);
  });

  it('fails closed on a garbage entry where the client should be', async () => {
    const response = await through('198.51.100.7, [198.51.100.8]:443');
    assert.match(assertError(response, 403).message, /unknown address/);
  });

  it('ignores X-Forwarded-For from 127.0.0.1, which is not trusted here', async () => {
    const response = await through('198.51.100.7', '127.0.0.1');
    assert.match(assertError(response, 403).message, /may not call from 127\.0\.0\.1$/);
  });
});
