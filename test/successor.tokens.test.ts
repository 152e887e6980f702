// The successor client's authentication against the sandbox IDM and its real oidc-provider:
// token reuse, early refresh, single-flight renewal, purge-and-retry on 401, scopes, API keys.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { toLegacyError } from '../src/http/errors.js';
import { ManualClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { type CallStats, combineObservers } from '../src/observe/observer.js';
import {
  READ_SCOPE,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
  WRITE_SCOPE,
} from '../src/sandbox/index.js';
import {
  countingCalls,
  createSuccessorClient,
  type SuccessorClient,
  type SuccessorClientOptions,
} from '../src/successor/client.js';
import { UpstreamError } from '../src/successor/errors.js';
import { LogSink } from './log-sink.js';
import { sendJson, startLoopback } from './successor-helpers.js';

const TOKEN = 'POST /token';
const USERS = 'GET /users';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function sandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sb = await startSandbox({ port: 0, ...options });
  cleanups.push(() => sb.close());
  return sb;
}

type OAuthAuth = Extract<SuccessorClientOptions['auth'], { type: 'oauth2' }>;

function client(
  sb: RunningSandbox,
  options: Omit<Partial<SuccessorClientOptions>, 'auth'> & { auth?: Partial<OAuthAuth> } = {},
): SuccessorClient {
  const { auth, ...rest } = options;
  const created = createSuccessorClient({
    baseUrl: sb.apiBaseUrl,
    retries: { max: 2, baseDelayMs: 5 },
    ...rest,
    auth: {
      type: 'oauth2',
      issuer: sb.issuer,
      clientId: sb.clients.readWrite.clientId,
      clientSecret: sb.clients.readWrite.clientSecret,
      scopes: { read: [READ_SCOPE], write: [READ_SCOPE, WRITE_SCOPE] },
      ...auth,
    },
  });
  cleanups.push(() => created.close());
  return created;
}

function upstream(code: UpstreamError['code'], check?: (error: UpstreamError) => void) {
  return (error: unknown) => {
    assert.ok(error instanceof UpstreamError, `expected an UpstreamError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    check?.(error);
    return true;
  };
}

const readUsers = (c: SuccessorClient) =>
  c.request({ method: 'GET', path: '/users', query: { itemsPerPage: '1' } });

describe('tokens', () => {
  test('one token serves many calls', async () => {
    const sb = await sandbox();
    const c = client(sb);
    for (let i = 0; i < 5; i++) await readUsers(c);
    assert.equal(sb.counters.get(TOKEN), 1);
    assert.equal(sb.counters.get(USERS), 5);
  });

  test('the token is renewed once when the clock passes expiry minus the margin', async () => {
    const sb = await sandbox({ tokenTtlSeconds: 3600 });
    const clock = new ManualClock();
    const c = client(sb, { clock, auth: { refreshMarginSeconds: 60 } });
    await readUsers(c);
    assert.equal(sb.counters.get(TOKEN), 1);
    clock.advance((3600 - 60 - 1) * 1000);
    await readUsers(c);
    assert.equal(sb.counters.get(TOKEN), 1, 'still inside the validity minus margin: no renewal');
    clock.advance(2_000);
    await readUsers(c);
    assert.equal(sb.counters.get(TOKEN), 2, 'past expiry minus margin: exactly one renewal');
    await readUsers(c);
    assert.equal(sb.counters.get(TOKEN), 2);
  });

  test('concurrent calls needing a token share one token request (2 and 10 callers)', async () => {
    const sb = await sandbox();
    const clock = new ManualClock();
    const c = client(sb, { clock });
    await Promise.all([readUsers(c), readUsers(c)]);
    assert.equal(sb.counters.get(TOKEN), 1);
    clock.advance(3600 * 1000);
    await Promise.all(Array.from({ length: 10 }, () => readUsers(c)));
    assert.equal(sb.counters.get(TOKEN), 2);
    assert.equal(sb.counters.get(USERS), 12);
  });

  test('read and write calls use separately cached tokens with their own scopes', async () => {
    const sb = await sandbox();
    const c = client(sb);
    await readUsers(c);
    await readUsers(c);
    await c.request({ method: 'POST', path: '/groups', body: { name: 'Token test group' } });
    await c.request({ method: 'POST', path: '/groups', body: { name: 'Token test group 2' } });
    assert.equal(sb.counters.get(TOKEN), 2);
  });

  test('a token the API no longer accepts (sandbox restarted with new keys) is purged, renewed once and the call retried once', async () => {
    const first = await startSandbox({ port: 0 });
    const port = Number(new URL(first.url).port);
    const c = client(first);
    await readUsers(c);
    await first.close();
    const second = await sandbox({ port });
    const results = await Promise.all(Array.from({ length: 10 }, () => readUsers(c)));
    assert.ok(results.every((r) => r.status === 200));
    assert.equal(second.counters.get(TOKEN), 1, 'ten callers hitting 401 share one renewal');
    assert.equal(second.counters.get(USERS), 20, 'each call: one 401, one retry');
  });

  test('an expired token (client clock wrong) gets one renewal and one retry', async () => {
    // Token times have whole-second resolution (exp = floor(iat) + ttl): with two seconds a fresh
    // token is valid for at least one more second, so the renewed one cannot expire before the
    // retry, while the first one has surely expired 2.1 s after it was issued.
    const sb = await sandbox({ tokenTtlSeconds: 2 });
    // The client's clock stands still, so it believes its token is still fresh.
    let renewals = 0;
    const kinds: string[] = [];
    const c = client(sb, {
      clock: new ManualClock(),
      auth: { refreshMarginSeconds: 0 },
      observer: combineObservers({
        tokenRenewal: () => renewals++,
        successorCall: (event) => kinds.push(event.kind),
      }),
    });
    await readUsers(c);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    sb.counters.reset();
    kinds.length = 0;
    const renewalsBefore = renewals;
    const stats: CallStats = { calls: 0, durationMs: 0 };
    await readUsers(countingCalls(c, stats));
    assert.equal(sb.counters.get(TOKEN), 1);
    assert.equal(sb.counters.get(USERS), 2);
    assert.equal(stats.calls, 2, "the request's counter has both API calls (the 401 and the retry)");
    assert.deepEqual(kinds.sort(), ['api', 'api', 'token'], 'the observer saw the token call apart');
    assert.equal(renewals - renewalsBefore, 1, 'the observer saw one token renewal');
  });

  test('a wrong client secret is unauthorized at the token endpoint, without the secret in the message', async () => {
    const sb = await sandbox();
    const c = client(sb, { auth: { clientSecret: 'not-the-secret-xyz' } });
    await assert.rejects(
      readUsers(c),
      upstream('unauthorized', (error) => {
        assert.equal(error.source, 'token');
        assert.match(error.message, /idm-compat/);
        assert.doesNotMatch(error.message, /not-the-secret-xyz/);
      }),
    );
    assert.equal(sb.counters.get(USERS), 0);
  });

  test('client_secret_basic works as well as client_secret_post', async () => {
    const sb = await sandbox();
    const basic = client(sb, { auth: { authMethod: 'client_secret_basic' } });
    const post = client(sb, { auth: { authMethod: 'client_secret_post' } });
    assert.equal((await readUsers(basic)).status, 200);
    assert.equal((await readUsers(post)).status, 200);
  });

  for (const [advertised, other] of [
    ['client_secret_basic', 'client_secret_post'],
    ['client_secret_post', 'client_secret_basic'],
  ] as const) {
    test(`auto uses ${advertised} when the issuer advertises only that; a fixed ${other} is refused there`, async () => {
      const sb = await sandbox({ clientAuthMethods: [advertised] });
      const sink = new LogSink();
      const auto = client(sb, {
        auth: { authMethod: 'auto' },
        logger: createLogger({ level: 'debug', destination: sink }),
      });
      assert.equal((await readUsers(auto)).status, 200);
      const discovered = sink.lines().find((line) => line.msg === 'issuer discovered');
      assert.equal((discovered?.successor as { authMethod?: unknown } | undefined)?.authMethod, advertised);
      assert.equal(sb.counters.get(TOKEN), 1);

      // The sandbox really refuses the method it does not advertise, so auto had to pick right.
      const fixed = client(sb, { auth: { authMethod: other } });
      await assert.rejects(
        readUsers(fixed),
        upstream('unauthorized', (error) => {
          assert.equal(error.source, 'token');
          assert.match(error.message, /invalid_client/);
        }),
      );
    });
  }
});

describe('scopes', () => {
  test('the read-only client asking for the write scope is forbidden at the token endpoint, naming the scope', async () => {
    const sb = await sandbox();
    const c = client(sb, { auth: { ...sb.clients.readOnly } });
    assert.equal((await readUsers(c)).status, 200);
    await assert.rejects(
      c.request({ method: 'POST', path: '/groups', body: { name: 'Not allowed' } }),
      upstream('forbidden', (error) => {
        assert.equal(error.source, 'token');
        assert.equal(error.details.scope, WRITE_SCOPE);
        assert.match(error.message, /iserv:idm:api-write/);
        assert.match(error.message, /idm-compat-readonly/);
      }),
    );
    assert.equal(sb.counters.get('POST /groups'), 0);
  });

  test('a token without the write scope gets 403 from the API, also after one renewal: forbidden naming the scope', async () => {
    const sb = await sandbox();
    const c = client(sb, {
      auth: { ...sb.clients.readOnly, scopes: { read: [READ_SCOPE], write: [READ_SCOPE] } },
    });
    await assert.rejects(
      c.request({ method: 'POST', path: '/groups', body: { name: 'Not allowed' } }),
      upstream('forbidden', (error) => {
        assert.equal(error.source, 'api');
        assert.equal(error.details.status, 403);
        assert.equal(error.details.scope, WRITE_SCOPE);
        assert.match(
          error.message,
          /the client lacks scope iserv:idm:api-write; grant it to client idm-compat-readonly/,
        );
      }),
    );
    // The scope may have been granted since the token was issued: one renewal, one retry.
    assert.equal(sb.counters.get('POST /groups'), 2);
    assert.equal(sb.counters.get(TOKEN), 2);
  });
});

describe('token endpoint failures', () => {
  test('token endpoint down: unavailable with source token', async () => {
    const sb = await sandbox({ faults: { tokenEndpointDown: true } });
    const c = client(sb);
    await assert.rejects(
      readUsers(c),
      upstream('unavailable', (error) => assert.equal(error.source, 'token')),
    );
    assert.equal(sb.counters.get(USERS), 0);
    sb.faults.reset();
    assert.equal((await readUsers(c)).status, 200, 'recovers once the endpoint is back');
  });

  test('an unreachable issuer: unavailable with source token; discovery is redone once it is back', async () => {
    const gone = await startSandbox({ port: 0 });
    const port = Number(new URL(gone.url).port);
    await gone.close();
    const c = client(gone, { timeouts: { connectMs: 1_000, totalMs: 2_000 } });
    await assert.rejects(
      readUsers(c),
      upstream('unavailable', (error) => assert.equal(error.source, 'token')),
    );
    await assert.rejects(
      readUsers(c),
      upstream('unavailable', (error) => assert.equal(error.source, 'token')),
    );
    const back = await sandbox({ port });
    assert.equal((await readUsers(c)).status, 200);
    assert.equal(back.counters.get(TOKEN), 1);
  });

  test('a token endpoint that answers too late: unavailable (no token) with source token, given up at the timeout', async () => {
    const sb = await sandbox({ faults: { latencyMs: 3_000 } });
    const c = client(sb, { timeouts: { connectMs: 1_000, totalMs: 300 } });
    const started = performance.now();
    await assert.rejects(
      readUsers(c),
      upstream('unavailable', (error) => {
        assert.equal(error.source, 'token');
        assert.match(error.message, /did not answer within 300 ms/);
      }),
    );
    assert.ok(performance.now() - started < 2_500, 'not when the late answer came');
    assert.equal(sb.counters.get(USERS), 0);
  });

  test('check() succeeds with a working successor and reports a broken one', async () => {
    const sb = await sandbox();
    await client(sb).check();
    sb.faults.set({ tokenEndpointDown: true });
    await assert.rejects(client(sb).check(), upstream('unavailable'));
  });
});

describe('a token endpoint that answers what the sandbox cannot (loopback fake)', () => {
  /** An OAuth2 server and API on one loopback port; `token` answers the token requests. */
  async function fakeIssuer(token: (path: string, res: ServerResponse) => void) {
    const state = { endpoint: '/token-old', issued: 0 };
    let base = '';
    const server = await startLoopback((req, res) => {
      const path = req.url.pathname;
      if (path === '/.well-known/openid-configuration')
        return sendJson(res, 200, {
          issuer: base,
          token_endpoint: `${base}${state.endpoint}`,
          token_endpoint_auth_methods_supported: ['client_secret_post'],
        });
      if (path.startsWith('/token')) return token(path, res);
      // The API takes the tokens of the current endpoint only.
      if (String(req.headers.authorization).startsWith(`Bearer ${state.endpoint}-`))
        return sendJson(res, 200, { ok: true });
      res.writeHead(401);
      res.end();
    });
    base = server.url;
    cleanups.push(() => server.close());
    const c = createSuccessorClient({
      baseUrl: `${base}/api`,
      auth: {
        type: 'oauth2',
        issuer: base,
        clientId: 'proxy',
        clientSecret: 's',
        scopes: { read: ['r'], write: ['w'] },
      },
      retries: { max: 0 },
    });
    cleanups.push(() => c.close());
    return { server, state, c };
  }

  test('a token endpoint that moved (the old one 404 with an OAuth error) is looked up again within the same call, not blamed on the credentials', async () => {
    const { server, state, c } = await fakeIssuer((path, res) =>
      path === state.endpoint
        ? sendJson(res, 200, {
            access_token: `${path}-T${++state.issued}`,
            token_type: 'Bearer',
            expires_in: 3600,
          })
        : sendJson(res, 404, { error: 'not_found', error_description: 'No route found' }),
    );
    const discoveries = () => server.requests.filter((r) => r.url.pathname.startsWith('/.well-known')).length;
    await c.request({ method: 'GET', path: '/x' });
    // Reconfigured: another token endpoint, the old tokens revoked.
    state.endpoint = '/token-new';
    assert.equal(
      (await c.request({ method: 'GET', path: '/x' })).status,
      200,
      'the call that meets the move finds the new endpoint',
    );
    assert.equal(discoveries(), 2);
    assert.deepEqual(
      server.requests.filter((r) => r.url.pathname.startsWith('/token')).map((r) => r.url.pathname),
      ['/token-old', '/token-old', '/token-new'],
    );
  });

  test('a token endpoint that answers no token answer right after discovery fails the call (bad_response) without asking twice', async () => {
    const { server, c } = await fakeIssuer((_path, res) =>
      sendJson(res, 404, { error: 'not_found', error_description: 'No route found' }),
    );
    await assert.rejects(
      c.request({ method: 'GET', path: '/x' }),
      upstream('bad_response', (error) => {
        assert.equal(error.source, 'token');
        assert.match(error.message, /answered 404 .*may have moved/);
        assert.doesNotMatch(error.message, /clientSecret/);
      }),
    );
    assert.equal(server.requests.filter((r) => r.url.pathname.startsWith('/token')).length, 1);
    // The next call looks the endpoint up again (its failure dropped the discovery), and asks
    // the endpoint of that fresh discovery once.
    await assert.rejects(c.request({ method: 'GET', path: '/x' }), upstream('bad_response'));
    assert.equal(server.requests.filter((r) => r.url.pathname.startsWith('/.well-known')).length, 2);
    assert.equal(server.requests.filter((r) => r.url.pathname.startsWith('/token')).length, 2);
  });

  test('a 403 with invalid_scope from the token endpoint names the scope, not a moved endpoint', async () => {
    const { c } = await fakeIssuer((_path, res) =>
      sendJson(res, 403, { error: 'invalid_scope', error_description: 'scope w is not granted' }),
    );
    await assert.rejects(
      c.request({ method: 'POST', path: '/x', body: {} }),
      upstream('forbidden', (error) => {
        assert.match(error.message, /refused scope w for client proxy/);
        assert.doesNotMatch(error.message, /moved/);
      }),
    );
  });

  test('a mistyped scope in both lists is named for reads and writes alike, not the write scope', async () => {
    // The sandbox refuses a scope nobody has; the write token's refusal blamed api-write, the
    // scope beyond the read ones, though the typo was the read scope it repeats.
    const sb = await sandbox();
    const typo = 'iserv:idm:api-raed';
    const c = client(sb, { auth: { scopes: { read: [typo], write: [typo, WRITE_SCOPE] } } });
    for (const [call, access] of [
      [() => readUsers(c), 'read'],
      [() => c.request({ method: 'POST', path: '/users', body: {} }), 'write'],
    ] as const) {
      await assert.rejects(
        call(),
        upstream('forbidden', (error) => {
          assert.match(
            error.message,
            new RegExp(
              `refused scope ${typo} for client idm-compat .*not known.*; grant it to client idm-compat, or correct successor\\.auth\\.scopes\\.${access} if the successor has no such scope`,
            ),
          );
        }),
      );
    }
  });

  test('a known scope whose name another requested one begins with is not blamed with it', async () => {
    const sb = await sandbox();
    const unknown = `${READ_SCOPE}.all`;
    const c = client(sb, { auth: { scopes: { read: [READ_SCOPE, unknown], write: [WRITE_SCOPE] } } });
    await assert.rejects(
      readUsers(c),
      upstream('forbidden', (error) => {
        assert.match(error.message, new RegExp(`refused scope ${unknown.replaceAll('.', '\\.')} for client`));
        assert.equal(error.details.scope, unknown);
      }),
    );
  });

  test('429 with Retry-After from the token endpoint: no token for now (unavailable), a legacy 503 with Retry-After', async () => {
    const { c } = await fakeIssuer((_path, res) => {
      res.writeHead(429, { 'retry-after': '30', 'content-type': 'text/plain' });
      res.end('slow down');
    });
    const error = await c.request({ method: 'GET', path: '/x' }).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    upstream('unavailable', (failure) => {
      assert.equal(failure.source, 'token');
      assert.equal(failure.details.retryAfter, '30');
    })(error);
    const legacy = toLegacyError(error);
    assert.equal(legacy.status, 503);
    assert.deepEqual(legacy.headers, { 'Retry-After': '30' });
  });
});

describe('API key mode', () => {
  test('the key goes in X-IServ-Authentication on every call and no token is requested', async () => {
    const sb = await sandbox();
    const c = createSuccessorClient({ baseUrl: sb.apiBaseUrl, auth: { type: 'apiKey', key: sb.apiKey } });
    cleanups.push(() => c.close());
    assert.equal((await readUsers(c)).status, 200);
    const created = await c.request({ method: 'POST', path: '/groups', body: { name: 'Key group' } });
    assert.equal(created.status, 201);
    await c.check();
    assert.equal(sb.counters.get(TOKEN), 0);
  });

  test('a wrong key is unauthorized, without the key in the message', async () => {
    const sb = await sandbox();
    const c = createSuccessorClient({
      baseUrl: sb.apiBaseUrl,
      auth: { type: 'apiKey', key: 'wrong-key-123' },
    });
    cleanups.push(() => c.close());
    await assert.rejects(
      readUsers(c),
      upstream('unauthorized', (error) => {
        assert.match(error.message, /X-IServ-Authentication/);
        assert.doesNotMatch(error.message, /wrong-key-123/);
      }),
    );
    assert.equal(sb.counters.get(USERS), 1, 'a rejected API key is not retried');
  });
});

describe('logging', () => {
  test('debug lines name method, path, status and duration, and never a secret or token', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        callback();
      },
    });
    const logger = createLogger({ level: 'debug', destination });
    const sb = await sandbox();
    const c = client(sb, { logger });
    await readUsers(c);
    await c.request({ method: 'POST', path: '/groups', body: { name: 'Logged group' } });
    await assert.rejects(c.request({ method: 'GET', path: '/users/00000000-0000-4000-8000-000000000000' }));
    const text = lines.join('\n');
    const calls = lines.map(
      (line) => JSON.parse(line) as { msg: string; successor?: Record<string, unknown> },
    );
    const apiCalls = calls.filter((line) => line.msg === 'successor call');
    assert.equal(apiCalls.length, 3);
    assert.deepEqual(
      apiCalls.map((line) => [line.successor?.method, line.successor?.status]),
      [
        ['GET', 200],
        ['POST', 201],
        ['GET', 404],
      ],
    );
    assert.ok(apiCalls.every((line) => typeof line.successor?.durationMs === 'number'));
    assert.doesNotMatch(text, /sandbox-secret/);
    assert.doesNotMatch(text, /Bearer/i);
    assert.doesNotMatch(text, /eyJ[\w-]+\.[\w-]+/, 'no JWT');
  });
});
