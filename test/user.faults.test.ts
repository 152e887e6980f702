// Successor failures as the legacy caller sees them (SPEC 6), caused for real with the sandbox's
// fault switches: failing API → 502, token endpoint down → 503, too slow → 504, each with a
// message that says what is wrong; a failure in the middle of a multi-ID unlink says what was
// applied and what was not.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type RunningSandbox, startSandbox } from '../src/sandbox/index.js';
import { type LoopbackServer, startLoopback } from './successor-helpers.js';
import { linksOf, sandboxUser, startUserProxy, type UserProxy } from './user-helpers.js';

type ErrorBody = { code: number; message: string };

describe('user operations when the successor fails', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy({ timeouts: { totalMs: 600 } });
  });
  after(async () => {
    await proxy?.close();
  });

  it('answers 502 when the successor API fails, for reads and writes, and changes nothing', async () => {
    assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 200);
    proxy.sandbox.faults.set({ errorRate: 1, errorStatus: 500 });
    try {
      for (const [method, path, body] of [
        ['GET', '/Entity/User', undefined],
        ['GET', '/Entity/User/thomas.becker', undefined],
        ['PUT', '/Entity/User/thomas.becker', { firstname: 'Changed' }],
        ['POST', '/Entity/User/thomas.becker/link/groups', ['ag.robotik']],
      ] as const) {
        const answer = await proxy.call<ErrorBody>(method, path, body);
        assert.equal(answer.status, 502, `${method} ${path}: ${answer.text}`);
        assert.equal(answer.body.code, 502);
        assert.match(answer.body.message, /^The successor is unreachable or failing; request id /);
        // (The request id is a random UUID, which may itself contain "500".)
        const words = answer.body.message.replace(answer.headers.get('x-request-id') ?? '', '');
        assert.doesNotMatch(words, /500|\/iserv\/idm/, 'the details are in the log only');
        const logged = proxy.logSink
          .lines()
          .find((line) => line.reqId === answer.headers.get('x-request-id') && line.msg === 'request failed');
        assert.match(String(logged?.successor), / with 500/);
        assert.doesNotMatch(answer.text, /secret|Bearer|at \w+ \(/);
      }
    } finally {
      proxy.sandbox.faults.reset();
    }
    assert.equal(sandboxUser(proxy, 'thomas.becker')?.firstname, 'Thomas');
  });

  it('answers 502, not an unknown ID or an empty 404, when the successor has no collection (a wrong base URL)', async () => {
    // A successor 404 on /users or /roles read as "no such user" (404, SSO "Unknown user") and
    // as a list's bare 404, where the proxy is misconfigured; only /readyz said why.
    proxy.sandbox.faults.set({
      rules: [
        { match: 'GET /users', status: 404 },
        { match: 'GET /roles', status: 404 },
        { match: 'POST /users', status: 404 },
      ],
    });
    try {
      const create = { username: 'never.made', firstname: 'N', lastname: 'M' };
      for (const [method, path, body] of [
        ['GET', '/Entity/User', undefined],
        ['GET', '/Entity/User/nobody.here', undefined],
        ['GET', '/Entity/Role', undefined],
        ['GET', '/Entity/Role/ROLE_NOBODY', undefined],
        // A create in the collection: its 404 was a bare "Not found".
        ['POST', '/Entity/User', create],
      ] as const) {
        const answer = await proxy.call<ErrorBody>(method, path, body);
        assert.equal(answer.status, 502, `${path}: ${answer.text}`);
        const logged = proxy.logSink
          .lines()
          .find((line) => line.reqId === answer.headers.get('x-request-id') && line.msg === 'request failed');
        assert.match(
          String(logged?.successor),
          /a collection that is always there, so successor\.baseUrl/,
          path,
        );
      }
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('answers 502 when the successor drops the connection', async () => {
    proxy.sandbox.faults.set({ rules: [{ match: 'GET *', status: 0 }] });
    try {
      const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/thomas.becker');
      assert.equal(answer.status, 502, answer.text);
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('answers 504 when the successor is slower than the client timeout', async () => {
    assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 200, 'token cached first');
    proxy.sandbox.faults.set({ latencyMs: 1_500 });
    try {
      const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/thomas.becker');
      assert.equal(answer.status, 504, answer.text);
      assert.match(answer.body.message, /did not answer in time/i);
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('says what was and was not applied when the successor fails in the middle of an unlink, and rolls back', async () => {
    const linked = await proxy.call('POST', '/Entity/User/thomas.becker/link/groups', [
      'ag.robotik',
      'klasse.7b',
    ]);
    assert.equal(linked.status, 200, linked.text);
    proxy.sandbox.faults.set({
      rules: [{ match: 'DELETE /users/{id}/groups/{groupId}', skip: 1, times: 1, status: 500 }],
    });
    try {
      const answer = await proxy.call<ErrorBody>('DELETE', '/Entity/User/thomas.becker/link/groups', [
        'ag.robotik',
        'klasse.7b',
      ]);
      assert.equal(answer.status, 502, answer.text);
      assert.match(
        answer.body.message,
        /Partly applied: remove group "ag\.robotik" from user "thomas\.becker"; not applied: remove group "klasse\.7b" from user "thomas\.becker"\. Rolled back \(add group "ag\.robotik" back to user "thomas\.becker"\): the state is as before the call/,
      );
    } finally {
      proxy.sandbox.faults.reset();
    }
    const groups = linksOf(proxy, 'thomas.becker').groups;
    assert.ok(groups.includes('ag.robotik') && groups.includes('klasse.7b'), groups.join(','));
  });
});

describe('writes with a successor client that lacks the write scope', () => {
  // SPEC 6: 401/403 after one renewal → 502 with a message that names the missing scope.
  for (const [how, scopes] of [
    ['the token endpoint refuses the write scope (invalid_scope)', undefined],
    ['the API refuses a token without it (403 with a challenge)', { write: ['iserv:idm:api-read'] }],
  ] as const) {
    it(`answers 502 naming the scope when ${how}; reads work, nothing changes`, async () => {
      const proxy = await startUserProxy({
        successor: (sandbox) => ({
          auth: {
            type: 'oauth2',
            issuer: sandbox.issuer,
            clientId: sandbox.clients.readOnly.clientId,
            clientSecret: sandbox.clients.readOnly.clientSecret,
            ...(scopes === undefined ? {} : { scopes }),
          },
        }),
      });
      try {
        assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 200);
        const answer = await proxy.call<ErrorBody>('PUT', '/Entity/User/thomas.becker', {
          firstname: 'Changed',
        });
        assert.equal(answer.status, 502, answer.text);
        assert.match(
          answer.body.message,
          /^The successor refused the proxy's access: the proxy's client lacks scope iserv:idm:api-write; request id /,
        );
        assert.doesNotMatch(
          answer.text,
          /idm-compat-readonly|sandbox-readonly-secret/,
          'the client stays in the log',
        );
        assert.equal(sandboxUser(proxy, 'thomas.becker')?.firstname, 'Thomas');
      } finally {
        await proxy.close();
      }
    });
  }
});

describe('user operations when the token endpoint is down', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy({ sandbox: { faults: { tokenEndpointDown: true } } });
  });
  after(async () => {
    await proxy?.close();
  });

  it('answers 503 naming the token problem, and recovers when the endpoint is back', async () => {
    const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/thomas.becker');
    assert.equal(answer.status, 503, answer.text);
    assert.match(answer.body.message, /no access token could be obtained/i);
    proxy.sandbox.faults.reset();
    assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 200);
  });
});

describe('a successor answer that is not JSON, with the temporary password in it', () => {
  // The successor's reset answer with the password unquoted (a broken serializer). V8's message
  // for it quotes the text around the error, i.e. the password; it must reach no log line.
  const temporary = 'TmpPw-4711';
  const API = '/iserv/idm/api/v1';
  let proxy: UserProxy | undefined;
  let successor: LoopbackServer;

  before(async () => {
    // Between the proxy and its sandbox: passes every call on, except the password reset.
    successor = await startLoopback(async (request, res) => {
      if (request.method === 'POST' && request.url.pathname.endsWith('/password/reset')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"password":${temporary}}`);
        return;
      }
      if (!proxy) {
        res.writeHead(503).end();
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'accept', 'content-type', 'x-iserv-authentication']) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const answer = await fetch(new URL(`${request.url.pathname}${request.url.search}`, proxy.sandbox.url), {
        method: request.method,
        headers,
        ...(request.body === '' ? {} : { body: request.body }),
      });
      res.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
      });
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
    proxy = await startUserProxy({ successor: { baseUrl: `${successor.url}${API}` } });
  });
  after(async () => {
    await proxy?.close();
    await successor?.close();
  });

  it('answers 502, and neither the answer nor any log line holds the password', async () => {
    assert.ok(proxy);
    const answer = await proxy.call<ErrorBody>('POST', '/User/thomas.becker/password/reset');
    assert.equal(answer.status, 502, answer.text);
    assert.match(answer.body.message, /^The successor gave an answer the proxy cannot use; request id /);
    assert.ok(!answer.text.includes(temporary), answer.text);
    const failed = proxy.logSink
      .lines()
      .find((line) => line.reqId === answer.headers.get('x-request-id') && line.msg === 'request failed');
    // The reset was answered 200 with a body that calls itself JSON: a write done whose answer is
    // unusable, taken as one without a body; the password it lacks then fails the answer.
    assert.match(String(failed?.successor), /lacks "password"/, 'the log says what was wrong');
    assert.ok(
      proxy.logSink
        .lines()
        .some(
          (line) =>
            /answer's body is unusable/.test(String(line.msg)) &&
            /with a body that is not valid JSON\b/.test(JSON.stringify(line.err)),
        ),
      'and why the answer was unusable',
    );
    assert.ok(
      successor.requests.some((request) => request.url.pathname.endsWith('/password/reset')),
      'the reset reached the successor',
    );
    assert.ok(!proxy.logSink.text.includes(temporary), 'the temporary password reached the log');
  });
});

describe('a token endpoint whose answer is not JSON, with a token in it', () => {
  // The token endpoint's answer with the access token unquoted (a broken serializer). The JSON
  // parser's message quotes the text around the error, i.e. the token; it must reach no log line
  // and no answer. The sandbox cannot answer so: a loopback server stands in front of its issuer,
  // passing discovery on (its URLs moved to itself) and answering the token request itself.
  const leaked = 'AccessTok-93f1c';
  let sandbox: RunningSandbox;
  let issuer: LoopbackServer;
  let proxy: UserProxy;

  before(async () => {
    sandbox = await startSandbox({ port: 0 });
    const origin = new URL(sandbox.issuer).origin;
    issuer = await startLoopback(async (request, res) => {
      if (request.method === 'POST') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"access_token":${leaked},"token_type":"Bearer"}`);
        return;
      }
      const answer = await fetch(new URL(`${request.url.pathname}${request.url.search}`, origin));
      res.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
      });
      res.end((await answer.text()).replaceAll(origin, issuer.url));
    });
    proxy = await startUserProxy({
      successor: {
        auth: {
          type: 'oauth2',
          issuer: sandbox.issuer.replace(origin, issuer.url),
          clientId: sandbox.clients.readWrite.clientId,
          clientSecret: sandbox.clients.readWrite.clientSecret,
        },
      },
    });
  });
  after(async () => {
    await proxy?.close();
    await issuer?.close();
    await sandbox?.close();
  });

  it('refuses the call, and neither the answer nor any log line holds the token', async () => {
    const answer = await proxy.call<ErrorBody>('GET', '/Entity/User/thomas.becker');
    assert.ok(answer.status >= 502 && answer.status <= 503, answer.text);
    assert.ok(
      issuer.requests.some((request) => request.method === 'POST'),
      'the token request reached the stand-in',
    );
    assert.ok(!answer.text.includes(leaked), answer.text);
    assert.ok(!proxy.logSink.text.includes(leaked.slice(0, 9)), 'the token reached the log');
    assert.match(proxy.logSink.text, /parsing error occured \(not valid JSON/, 'the log says what was wrong');
  });
});
