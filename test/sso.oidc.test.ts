// The proxy as OIDC relying party: the full round trip against the sandbox's real oidc-provider
// (authorization code + PKCE, auto-approved login for login_hint), followed by hand like a
// browser with cookies; a provider that signs in someone else (sandbox fault ssoLoginAs) is
// refused with 403; provider errors, replays, other browsers and slow logins get their pages;
// tampered callbacks (wrong state, another login's state, a replayed or made-up code, a nonce
// that is not the login's) are refused and never reach sso.target; a token endpoint's 400 with a
// challenge is a refusal, or with invalid_client a proxy misconfiguration (a provider of a few
// lines, for the answer the real one never gives).
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { parseConfig } from '../src/config/load.js';
import { ManualClock } from '../src/lib/clock.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/index.js';
import { SANDBOX_SSO_CLIENT_ID } from '../src/sso/sandbox.js';
import { hashSecret } from '../src/sso/tokens.js';
import { openSqliteConnection } from '../src/store/sqlite/database.js';
import { Browser, type SsoProxy, startSsoProxy } from './sso-helpers.js';
import { type LoopbackServer, startLoopback } from './successor-helpers.js';

function assertPage(hop: { status: number; headers: Headers; text: string }, status: number) {
  assert.equal(hop.status, status, hop.text);
  assert.match(hop.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(hop.headers.get('cache-control'), 'no-store');
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 9;
}

/** A call of the sandbox's API, as an administrator would make it; fails the test unless 2xx. */
async function sandboxApi(
  sandbox: RunningSandbox,
  method: string,
  path: string,
  body: unknown,
): Promise<void> {
  const answer = await fetch(`${sandbox.apiBaseUrl}${path}`, {
    method,
    headers: {
      'x-iserv-authentication': sandbox.apiKey,
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
    },
    body: JSON.stringify(body),
  });
  assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${await answer.text()}`);
}

/** Creates a user at the sandbox; its successor UUID. */
async function createUser(sandbox: RunningSandbox, account: string): Promise<string> {
  await sandboxApi(sandbox, 'POST', '/users', { user: account, firstname: 'Sso', lastname: 'Test' });
  const id = sandbox.data.userByAccount(account)?.id;
  assert.ok(id, account);
  return id;
}

/** Renames a user at the sandbox (the legacy `PUT …/User/{id} {"username": …}`). */
async function renameUser(sandbox: RunningSandbox, account: string, to: string): Promise<void> {
  const id = sandbox.data.userByAccount(account)?.id;
  assert.ok(id, account);
  await sandboxApi(sandbox, 'PATCH', `/users/${id}`, { user: to });
}

/** The `sso` fields of the last identity mismatch warning in `proxy`'s log. */
function lastMismatch(proxy: SsoProxy): Record<string, unknown> | undefined {
  const warning = proxy.logSink
    .lines()
    .filter((l) => l.msg?.toString().startsWith('SSO identity mismatch'))
    .at(-1);
  if (warning) assert.equal(warning.level, 40);
  return warning?.sso as Record<string, unknown> | undefined;
}

/**
 * A reverse proxy in front of idm-compat that publishes it under `prefix` and strips the prefix
 * on the way in (GET only, as a browser's SSO hops are). `backend` is set once the proxy runs,
 * since the proxy's legacy.publicUrl must name the front first.
 */
async function prefixFront(
  prefix: string,
): Promise<{ front: LoopbackServer; url: string; backend: { url: string } }> {
  const backend = { url: '' };
  const front = await startLoopback(async (request, res) => {
    if (!request.url.pathname.startsWith(`${prefix}/`)) {
      res.writeHead(404).end();
      return;
    }
    const answer = await fetch(
      `${backend.url}${request.url.pathname.slice(prefix.length)}${request.url.search}`,
      {
        redirect: 'manual',
        headers: request.headers.cookie === undefined ? {} : { cookie: request.headers.cookie },
      },
    );
    const headers: [string, string][] = [];
    answer.headers.forEach((value, name) => {
      if (name !== 'set-cookie' && name !== 'content-length' && name !== 'content-encoding')
        headers.push([name, value]);
    });
    for (const cookie of answer.headers.getSetCookie()) headers.push(['set-cookie', cookie]);
    res.writeHead(answer.status, headers.flat());
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  return { front, url: `${front.url}${prefix}`, backend };
}

/** The `sso` fields of the proxy's last "failed at the identity provider" log line. */
function lastProviderFailure(proxy: SsoProxy): { failure?: string; reason?: string } | undefined {
  const warning = proxy.logSink
    .lines()
    .filter((l) => l.msg === 'SSO login failed at the identity provider')
    .at(-1);
  return warning?.sso as { failure?: string; reason?: string } | undefined;
}

/** The discovery document of a small provider at `issuer`: code flow, RS256 ID tokens, keys at /jwks. */
function discoveryOf(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    jwks_uri: `${issuer}/jwks`,
    response_types_supported: ['code'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
  };
}

describe('SSO with OIDC in sandbox mode (the embedded provider)', () => {
  const clock = new ManualClock(Date.now());
  let proxy: SsoProxy;
  let callback: string;
  before(async () => {
    proxy = await startSsoProxy({ clock });
    callback = `${proxy.server.publicUrl}/sso/callback`;
  });
  after(() => proxy?.close());

  /** Follows return_to up to (not into) the proxy's callback. */
  async function toCallback(browser: Browser, returnTo: string): Promise<URL> {
    const { next, last } = await browser.follow(returnTo, (url) => url.href.startsWith(callback));
    assert.ok(next, `stopped at ${last.url.href}: ${last.status} ${last.text}`);
    return next;
  }

  it('runs the round trip: continue → provider (PKCE, state, nonce, login_hint) → callback → sso.target', async () => {
    const { return_to } = await proxy.token('lena.mueller');
    const browser = new Browser();
    const first = await browser.get(return_to);
    assert.equal(first.status, 302);
    const authorize = first.location;
    assert.ok(authorize);
    assert.equal(`${authorize.origin}${authorize.pathname}`, `${proxy.sandbox.issuer}/auth`);
    const params = authorize.searchParams;
    assert.equal(params.get('client_id'), SANDBOX_SSO_CLIENT_ID);
    assert.equal(params.get('response_type'), 'code');
    assert.equal(params.get('redirect_uri'), callback);
    assert.equal(params.get('login_hint'), 'lena.mueller');
    assert.equal(params.get('code_challenge_method'), 'S256');
    assert.match(params.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.ok(params.get('state'));
    assert.ok(params.get('nonce'));
    assert.deepEqual(params.get('scope')?.split(' '), ['openid', 'profile']);
    const binding = [...browser.cookies.keys()].filter((name) => name.startsWith('idm_compat_sso_'));
    assert.equal(binding.length, 1, 'the login is bound to this browser');

    const { last } = await browser.follow(authorize);
    const back = browser.hops.find((hop) => hop.url.href.startsWith(callback));
    assert.ok(back, 'the provider sent the browser to the callback');
    assert.ok(back.url.searchParams.get('code'));
    assert.equal(back.status, 302);
    assert.equal(back.location?.href, `${proxy.server.publicUrl}/sso/landing?login_hint=lena.mueller`);
    assertPage(last, 200);
    assert.match(last.text, /Welcome, lena\.mueller/);
    // The callback's line names the token as its issue and use did, so the three can be joined.
    const tokenOf = (line: Record<string, unknown> | undefined) =>
      (line?.sso as { tokenId?: string } | undefined)?.tokenId;
    const verified = tokenOf(proxy.logSink.lines().find((l) => l.msg === 'SSO login verified'));
    assert.match(verified ?? '', /^[0-9a-f]{12}$/);
    for (const msg of ['SSO token issued', 'SSO token used'])
      assert.ok(
        proxy.logSink.lines().some((l) => l.msg === msg && tokenOf(l) === verified),
        msg,
      );

    // The callback is single-use: a replay (even with the binding cookie) is refused.
    const replay = await new Browser().get(back.url);
    assertPage(replay, 410);
  });

  it('refuses (403) an ID token for someone other than the user the token was issued for', async () => {
    proxy.sandbox.faults.set({ ssoLoginAs: 'mia.fischer' });
    try {
      const { return_to } = await proxy.token('lena.mueller');
      const browser = new Browser();
      const { last } = await browser.follow(return_to);
      assert.ok(last.url.href.startsWith(callback), last.url.href);
      assertPage(last, 403);
      assert.match(last.text, /issued for lena\.mueller/);
      assert.ok(!browser.hops.some((hop) => hop.location?.pathname === '/sso/landing'), 'never sent on');
      const warning = proxy.logSink
        .lines()
        .find((l) => l.msg?.toString().startsWith('SSO identity mismatch'));
      assert.ok(warning, 'a warning in the log');
      assert.equal(warning.level, 40);
      const sso = warning.sso as { expected: { username: string }; received: { username: string } };
      assert.equal(sso.expected.username, 'lena.mueller');
      assert.equal(sso.received.username, 'mia.fischer');
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('refuses (403) a newcomer who took over the username since the token was issued (sub is not the UUID)', async () => {
    // The token's user was renamed and a new user created under its old name: the provider signed
    // in the newcomer by login_hint, whose username claim matched, and the check let them in.
    const original = await createUser(proxy.sandbox, 'sso.z');
    const { return_to } = await proxy.token('sso.z');
    await renameUser(proxy.sandbox, 'sso.z', 'sso.z.old');
    const newcomer = await createUser(proxy.sandbox, 'sso.z');
    assert.notEqual(newcomer, original);
    const browser = new Browser();
    const { last } = await browser.follow(return_to);
    assert.ok(last.url.href.startsWith(callback), last.url.href);
    assertPage(last, 403);
    assert.match(last.text, /Signed in as someone else/);
    assert.ok(!browser.hops.some((hop) => hop.location?.pathname === '/sso/landing'), 'never sent on');
    const sso = lastMismatch(proxy);
    assert.deepEqual(sso?.expected, { username: 'sso.z', uuid: original, usernameNow: 'sso.z.old' });
    assert.deepEqual(sso?.received, { username: 'sso.z', sub: newcomer });
    const code = browser.hops.find((hop) => hop.url.href.startsWith(callback))?.url.searchParams.get('code');
    assert.ok(code);
    assert.ok(!proxy.logSink.text.includes(code), 'no code in the log');
  });

  /** Locks a user at the sandbox (as an administrator would, through its API). */
  async function lock(account: string): Promise<void> {
    const user = proxy.sandbox.data.userByAccount(account);
    assert.ok(user);
    const patch = await fetch(`${proxy.sandbox.apiBaseUrl}/users/${user.id}`, {
      method: 'PATCH',
      headers: {
        'x-iserv-authentication': proxy.sandbox.apiKey,
        'content-type': 'application/merge-patch+json',
      },
      body: JSON.stringify({ locked: true }),
    });
    assert.equal(patch.status, 200, await patch.text());
  }

  it('shows a 400 page when the provider refuses the login (user locked after the token was issued)', async () => {
    const { return_to } = await proxy.token('finn.koch');
    await lock('finn.koch');
    const browser = new Browser();
    const { last } = await browser.follow(return_to);
    assert.ok(last.url.href.startsWith(callback));
    assert.equal(last.url.searchParams.get('error'), 'access_denied');
    assertPage(last, 400);
    assert.match(last.text, /refused/);
  });

  it("signs in each token's user in a browser that signed in before, and refuses one locked since", async () => {
    const browser = new Browser();
    const jonas = await browser.follow((await proxy.token('jonas.schmidt')).return_to);
    assertPage(jonas.last, 200);
    assert.match(jonas.last.text, /Welcome, jonas\.schmidt/);
    // The provider's session is jonas's; the next token is paul's.
    const paul = await browser.follow((await proxy.token('paul.wagner')).return_to);
    assertPage(paul.last, 200);
    assert.match(paul.last.text, /Welcome, paul\.wagner/);

    const { return_to } = await proxy.token('paul.wagner');
    await lock('paul.wagner');
    const { last } = await browser.follow(return_to);
    assert.ok(last.url.href.startsWith(callback), last.url.href);
    assert.equal(last.url.searchParams.get('error'), 'access_denied');
    assertPage(last, 400);
  });

  it("two users' sign-ins open at once in one browser: the later one passes, the earlier one gets the provider's refusal page", async () => {
    const browser = new Browser();
    const earlier = await toCallback(browser, (await proxy.token('lena.mueller')).return_to);
    const later = await toCallback(browser, (await proxy.token('mia.fischer')).return_to);
    const done = await browser.get(later);
    assert.equal(done.status, 302, done.text);
    assert.equal(done.location?.searchParams.get('login_hint'), 'mia.fischer');
    // The provider signed mia in in this browser and dropped lena's session with its code.
    const refused = await browser.get(earlier);
    assertPage(refused, 400);
    assert.match(refused.text, /The identity provider refused the sign-in/);
    assert.match(refused.text, /a later sign-in of another user in this browser/);
  });

  it('finishes a login only in the browser that started it', async () => {
    const { return_to } = await proxy.token('luca.richter');
    const browser = new Browser();
    const back = await toCallback(browser, return_to);
    const stranger = await new Browser().get(back);
    assertPage(stranger, 400);
    assert.match(stranger.text, /another browser/);
    const owner = await browser.get(back);
    assert.equal(owner.status, 302, owner.text);
    assert.equal(owner.location?.searchParams.get('login_hint'), 'luca.richter');
    assert.ok(
      ![...browser.cookies.keys()].some((name) => name.startsWith('idm_compat_sso_')),
      'the binding cookie is cleared',
    );
  });

  it('gives a started login loginTtlSeconds (300) to come back', async () => {
    const { return_to } = await proxy.token('marie.klein');
    const browser = new Browser();
    const back = await toCallback(browser, return_to);
    clock.advance(300_000);
    const hop = await browser.get(back);
    assertPage(hop, 410);
  });

  it('answers unknown or missing state with 400', async () => {
    for (const query of ['?code=x&state=unknown', '?code=x', '']) {
      const hop = await new Browser().get(`${callback}${query}`);
      assertPage(hop, 400);
    }
  });

  describe('a tampered callback is refused and never sends the browser to sso.target', () => {
    const landing = () => `${proxy.server.publicUrl}/sso/landing`;

    /** No hop of the browser went to, or was sent to, sso.target. */
    function assertNeverSentOn(browser: Browser): void {
      for (const hop of browser.hops) {
        assert.ok(!hop.url.href.startsWith(landing()), `visited ${hop.url.href}`);
        assert.ok(!hop.location?.href.startsWith(landing()), `${hop.url.href} sent the browser on`);
      }
    }

    /** The callback URL with `change` applied to its query. */
    function tampered(back: URL, change: (query: URLSearchParams) => void): URL {
      const url = new URL(back);
      change(url.searchParams);
      return url;
    }

    it('refuses a wrong state (400); the login stays open for the real callback', async () => {
      const { return_to } = await proxy.token('lena.mueller');
      const browser = new Browser();
      const back = await toCallback(browser, return_to);
      const state = back.searchParams.get('state') ?? '';
      assert.ok(state);
      const flipped = `${state.slice(0, -1)}${state.endsWith('A') ? 'B' : 'A'}`;
      for (const wrong of [flipped, `${state}x`, 'x', '']) {
        const hop = await browser.get(tampered(back, (q) => q.set('state', wrong)));
        assertPage(hop, 400);
        assert.equal(hop.location, undefined);
        assert.ok(!hop.text.includes(state), 'no state in the page');
      }
      const noState = await browser.get(tampered(back, (q) => q.delete('state')));
      assertPage(noState, 400);
      assertNeverSentOn(browser);
      const real = await browser.get(back);
      assert.equal(real.status, 302, real.text);
      assert.equal(real.location?.href, `${landing()}?login_hint=lena.mueller`);
    });

    it("refuses the state of another open login with this login's code (PKCE fails: 400)", async () => {
      const browser = new Browser();
      const first = await toCallback(browser, (await proxy.token('thomas.becker')).return_to);
      const second = await toCallback(browser, (await proxy.token('thomas.becker')).return_to);
      const otherState = second.searchParams.get('state') ?? '';
      assert.notEqual(first.searchParams.get('state'), otherState);
      const hop = await browser.get(tampered(first, (q) => q.set('state', otherState)));
      assertPage(hop, 400);
      assert.equal(hop.location, undefined);
      assertNeverSentOn(browser);
      // That login is used up by the attempt: its real callback does not sign anyone in either.
      const after = await browser.get(second);
      assertPage(after, 410);
      assertNeverSentOn(browser);
      assert.ok(proxy.logSink.lines().some((l) => l.msg === 'SSO login failed at the identity provider'));
    });

    it('refuses a replayed code: a code already exchanged, presented with a new login (400)', async () => {
      const browser = new Browser();
      const done = await toCallback(browser, (await proxy.token('mia.fischer')).return_to);
      const finished = await browser.get(done);
      assert.equal(finished.status, 302, finished.text);
      assert.equal(finished.location?.href, `${landing()}?login_hint=mia.fischer`);
      const usedCode = done.searchParams.get('code') ?? '';
      assert.ok(usedCode);

      const attacker = new Browser();
      const fresh = await toCallback(attacker, (await proxy.token('mia.fischer')).return_to);
      assert.notEqual(fresh.searchParams.get('code'), usedCode);
      const replay = await attacker.get(tampered(fresh, (q) => q.set('code', usedCode)));
      assertPage(replay, 400);
      // The provider's refusal, not a failed check (which is the 403's page).
      assert.match(replay.text, /The identity provider refused the sign-in/);
      assert.doesNotMatch(replay.text, /did not pass the checks/);
      assert.equal(replay.location, undefined);
      assertNeverSentOn(attacker);
    });

    it('refuses a made-up code (400)', async () => {
      const browser = new Browser();
      const back = await toCallback(browser, (await proxy.token('mia.fischer')).return_to);
      const hop = await browser.get(tampered(back, (q) => q.set('code', 'not-a-code-the-provider-issued')));
      assertPage(hop, 400);
      assertNeverSentOn(browser);
    });

    it('refuses an ID token whose nonce is not the one of the login (403)', async () => {
      const browser = new Browser();
      const back = await toCallback(browser, (await proxy.token('lena.mueller')).return_to);
      // The login expects another nonce than the provider put into the ID token, as if the code
      // had been obtained for a different login: the one thing PKCE and state cannot catch.
      const db = openSqliteConnection(proxy.dbPath);
      try {
        const changed = db
          .prepare('UPDATE sso_logins SET nonce = ? WHERE state_hash = ? AND consumed_at IS NULL')
          .run('a-different-nonce', hashSecret(back.searchParams.get('state') ?? ''));
        assert.equal(changed.changes, 1);
      } finally {
        db.close();
      }
      const hop = await browser.get(back);
      assertPage(hop, 403);
      assert.equal(hop.location, undefined);
      assertNeverSentOn(browser);
      const sso = lastProviderFailure(proxy);
      assert.equal(sso?.failure, 'invalid');
      assert.match(
        sso?.reason ?? '',
        /^the code exchange: unexpected JWT claim value encountered: unexpected ID Token "nonce" claim value \(OAUTH_JWT_CLAIM_COMPARISON_FAILED\)$/,
      );
    });

    it('refuses a callback with another iss or a parameter given twice (403), logging which check failed', async () => {
      // The log said only "invalid response encountered (OAUTH_INVALID_RESPONSE)".
      const cases: [string, (query: URLSearchParams) => void, RegExp][] = [
        [
          'iss',
          (q) => q.set('iss', 'https://elsewhere.example/auth'),
          /^the code exchange: invalid response encountered: unexpected "iss" \(issuer\) response parameter value \(OAUTH_INVALID_RESPONSE\)$/,
        ],
        [
          'state twice',
          (q) => q.append('state', q.get('state') ?? ''),
          /^the code exchange: invalid response encountered: "state" parameter must be provided only once \(OAUTH_INVALID_RESPONSE\)$/,
        ],
      ];
      for (const [name, change, reason] of cases) {
        const browser = new Browser();
        const back = await toCallback(browser, (await proxy.token('lena.mueller')).return_to);
        assert.ok(back.searchParams.get('iss'), 'the provider sends iss (RFC 9207)');
        const hop = await browser.get(tampered(back, change));
        assertPage(hop, 403);
        assertNeverSentOn(browser);
        const sso = lastProviderFailure(proxy);
        assert.equal(sso?.failure, 'invalid', name);
        assert.match(sso?.reason ?? '', reason, name);
        for (const secret of [back.searchParams.get('code'), back.searchParams.get('state')])
          assert.ok(
            secret && !JSON.stringify(proxy.logSink.lines()).includes(secret),
            `${name}: no code or state in the log`,
          );
      }
    });
  });

  it('uses the SSO token up at /sso/continue (a second use is 410, not a second login)', async () => {
    const { return_to } = await proxy.token('lea.braun');
    assert.equal((await new Browser().get(return_to)).status, 302);
    assertPage(await new Browser().get(return_to), 410);
  });
});

/**
 * A sandbox as an external provider: the proxy's API client, and the relying party `legacy-sso`
 * (secret `legacy-sso-secret`) with the redirect URIs given.
 */
function oidcSandbox(legacySso: {
  redirectUris: string[];
  applicationType?: 'native';
}): Promise<RunningSandbox> {
  return startSandbox({
    interactiveLogin: 'auto-approve',
    clients: [
      {
        clientId: 'idm-compat',
        clientSecret: 'sandbox-secret',
        scopes: ['iserv:idm:api-read', 'iserv:idm:api-write'],
      },
      { clientId: 'legacy-sso', clientSecret: 'legacy-sso-secret', scopes: [], ...legacySso },
    ],
  });
}

describe('SSO with sso.oidc configured (production mode, external provider)', () => {
  let sandbox: RunningSandbox;
  let proxy: SsoProxy;
  before(async () => {
    sandbox = await oidcSandbox({
      redirectUris: ['http://127.0.0.1/sso/callback'],
      applicationType: 'native',
    });
    proxy = await startSsoProxy({
      sandbox,
      env: { SSO_SECRET: 'legacy-sso-secret' },
      config: {
        sso: {
          target: 'https://portal.example/login',
          oidc: {
            issuer: sandbox.issuer,
            clientId: 'legacy-sso',
            clientSecret: { env: 'SSO_SECRET' },
            scopes: ['openid', 'profile', 'email'],
          },
        },
      },
    });
  });
  after(async () => {
    await proxy?.close();
    await sandbox?.close();
  });

  it('signs the user in at the configured provider and sends the browser to sso.target', async () => {
    const { return_to } = await proxy.token('thomas.becker');
    const { last, next } = await new Browser().follow(
      return_to,
      (url) => url.origin === 'https://portal.example',
    );
    assert.equal(last.status, 302);
    assert.ok(last.url.pathname === '/sso/callback', last.url.href);
    assert.equal(next?.href, 'https://portal.example/login?login_hint=thomas.becker');
  });

  it('accepts the identity by sub (the successor UUID) when the username claim is not in the ID token', async () => {
    const other = await startSsoProxy({
      sandbox,
      config: {
        sso: {
          target: 'https://portal.example/login',
          oidc: {
            issuer: sandbox.issuer,
            clientId: 'legacy-sso',
            clientSecret: 'legacy-sso-secret',
            usernameClaim: 'nickname',
          },
        },
      },
    });
    try {
      const { return_to } = await other.token('sabine.krueger');
      const { next } = await new Browser().follow(
        return_to,
        (url) => url.origin === 'https://portal.example',
      );
      assert.equal(next?.searchParams.get('login_hint'), 'sabine.krueger');
    } finally {
      await other.close();
    }
  });

  it("answers 502 'not set up correctly' when the provider refuses the proxy's own client secret", async () => {
    // invalid_client at the token endpoint fails every sign-in: it was the 400 of one refused
    // sign-in, whose page told the visitor to start again.
    const wrong = await startSsoProxy({
      sandbox,
      config: {
        sso: {
          target: 'https://portal.example/login',
          oidc: { issuer: sandbox.issuer, clientId: 'legacy-sso', clientSecret: 'not-the-secret' },
        },
      },
    });
    try {
      const { return_to } = await wrong.token('lena.mueller');
      const { last } = await new Browser().follow(return_to);
      assertPage(last, 502);
      assert.match(last.text, /Single sign-on is not set up correctly/);
      assert.doesNotMatch(last.text, /not-the-secret/);
      const logged = wrong.logSink.lines().find((l) => l.msg === 'SSO login failed at the identity provider');
      assert.match(JSON.stringify(logged), /invalid_client/);
      assert.match(JSON.stringify(logged), /"failure":"misconfigured"/);
    } finally {
      await wrong.close();
    }
  });

  it('answers 502 when the provider is unreachable, without using the token up', async () => {
    const port = await closedPort();
    const down = await startSsoProxy({
      sandbox,
      config: {
        sso: {
          oidc: { issuer: `http://127.0.0.1:${port}/auth`, clientId: 'x', clientSecret: 'y' },
        },
      },
    });
    try {
      const { return_to } = await down.token('lena.mueller');
      const first = await new Browser().get(return_to);
      assertPage(first, 502);
      const again = await new Browser().get(return_to);
      assertPage(again, 502);
      assert.ok(!again.text.includes('already used'), 'the token is still unused');
      assert.ok(down.logSink.lines().some((l) => l.msg === 'SSO login failed at the identity provider'));
    } finally {
      await down.close();
    }
  });
});

describe('SSO at a provider whose discovery is unusable', () => {
  let sandbox: RunningSandbox;
  let broken: HttpServer;
  let issuer = '';
  before(async () => {
    sandbox = await oidcSandbox({
      redirectUris: ['http://127.0.0.1/sso/callback'],
      applicationType: 'native',
    });
    // Answers every request with 200 JSON that is no discovery document (no issuer, no endpoints),
    // with 404 under /missing, or a document of another issuer under /other.
    broken = createHttpServer((request, response) => {
      request.resume();
      if (request.url?.startsWith('/missing')) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end('{"error":"not_found"}');
        return;
      }
      if (request.url?.startsWith('/other')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"issuer":"https://elsewhere.example/auth"}');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"hello":"world"}');
    });
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(broken.address() as { port: number }).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => broken.close(() => resolve()));
    await sandbox.close();
  });

  // The log's reason names what failed: it was "discovery of …: unexpected HTTP response status
  // code (OAUTH_RESPONSE_IS_NOT_CONFORM)", without the status or the address asked.
  const reasons: Record<string, (at: string) => string> = {
    '/auth': (at) =>
      `discovery of ${at}: invalid response encountered: "response" body "issuer" property must be a string (OAUTH_INVALID_RESPONSE)`,
    '/missing/auth': (at) =>
      `discovery of ${at}: ${at}/.well-known/openid-configuration answered 404: unexpected HTTP response status code (OAUTH_RESPONSE_IS_NOT_CONFORM)`,
    '/other/auth': (at) =>
      `discovery of ${at}: discovered metadata issuer does not match the expected issuer (the document names "https://elsewhere.example/auth"; set sso.oidc.issuer to it) (OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED)`,
  };
  for (const [path, reason] of Object.entries(reasons)) {
    it(`answers 502, not a failed check, when the discovery at ${path} is no usable document; the token stays unused; the log says why`, async () => {
      // It was a 403 "could not be verified … start the sign-in again", which no retry could mend.
      const proxy = await startSsoProxy({
        sandbox,
        config: { sso: { oidc: { issuer: `${issuer}${path}`, clientId: 'x', clientSecret: 'y' } } },
      });
      try {
        const { return_to } = await proxy.token('lena.mueller');
        const first = await new Browser().get(return_to);
        assertPage(first, 502);
        const again = await new Browser().get(return_to);
        assertPage(again, 502);
        const logged = proxy.logSink
          .lines()
          .find((l) => l.msg === 'SSO login failed at the identity provider');
        const sso = logged?.sso as { failure?: string; reason?: string } | undefined;
        assert.equal(sso?.failure, 'unavailable');
        assert.equal(sso?.reason, reason(`${issuer}${path}`));
      } finally {
        await proxy.close();
      }
    });
  }
});

describe('SSO at a provider whose token endpoint answers 400 with a WWW-Authenticate challenge', () => {
  // A provider of a few lines (the sandbox's oidc-provider never answers the code exchange with a
  // challenge): discovery, an authorization endpoint that sends the browser straight back with a
  // code, and a token endpoint answering 400 with `WWW-Authenticate: Bearer error="…"`.
  let sandbox: RunningSandbox;
  let provider: LoopbackServer;
  let tokenError = '';
  /** Whether the token endpoint refuses with a challenge, else with an OAuth error body. */
  let challenge = true;
  before(async () => {
    sandbox = await oidcSandbox({
      redirectUris: ['http://127.0.0.1/sso/callback'],
      applicationType: 'native',
    });
    provider = await startLoopback((request, res) => {
      const issuer = `http://${request.headers.host}/auth`;
      if (request.url.pathname === '/auth/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(discoveryOf(issuer)));
        return;
      }
      if (request.url.pathname === '/auth/authorize') {
        const back = new URL(request.url.searchParams.get('redirect_uri') ?? '');
        back.searchParams.set('code', 'a-code');
        back.searchParams.set('state', request.url.searchParams.get('state') ?? '');
        res.writeHead(302, { location: back.href }).end();
        return;
      }
      if (request.url.pathname === '/auth/token') {
        // It repeats what it was sent, as a debugging provider may: the code, the PKCE verifier,
        // the client's credentials in base64 and decoded.
        const basic = String(request.headers.authorization ?? '').replace(/^Basic /, '');
        const description = `got ${request.body} from ${basic} = ${Buffer.from(basic, 'base64').toString('utf8')}`;
        if (!challenge) {
          res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: tokenError, error_description: description }));
          return;
        }
        res
          .writeHead(400, {
            'content-type': 'application/json',
            'www-authenticate': `Bearer error="${tokenError}", error_description="${description}"`,
          })
          .end(JSON.stringify({ error: tokenError }));
        return;
      }
      res.writeHead(404).end();
    });
  });
  after(async () => {
    await provider?.close();
    await sandbox?.close();
  });

  const cases = [
    { error: 'invalid_grant', withChallenge: true, status: 400, page: /refused/, failure: 'refused' },
    {
      error: 'invalid_client',
      withChallenge: true,
      status: 502,
      page: /Single sign-on is not set up correctly/,
      failure: 'misconfigured',
    },
    // Without a challenge the provider's error_description is quoted in the log line.
    { error: 'invalid_grant', withChallenge: false, status: 400, page: /refused/, failure: 'refused' },
  ];
  for (const { error, withChallenge, status, page, failure } of cases) {
    it(`shows a ${status} page for ${withChallenge ? 'a challenge' : 'an error body'} with ${error}, and logs it as ${failure} without the secrets the provider repeats`, async () => {
      tokenError = error;
      challenge = withChallenge;
      const proxy = await startSsoProxy({
        sandbox,
        config: {
          sso: {
            target: 'https://portal.example/login',
            oidc: {
              issuer: `${provider.url}/auth`,
              clientId: 'legacy-sso',
              clientSecret: 'the-client-secret',
            },
          },
        },
      });
      try {
        const { return_to } = await proxy.token('lena.mueller');
        const { last } = await new Browser().follow(
          return_to,
          (url) => url.origin === 'https://portal.example',
        );
        assert.equal(last.url.pathname, '/sso/callback');
        assertPage(last, status);
        assert.match(last.text, page);
        assert.ok(
          provider.requests.some((r) => r.method === 'POST' && r.url.pathname === '/auth/token'),
          'the code was exchanged',
        );
        const logged = JSON.stringify(
          proxy.logSink.lines().find((l) => l.msg === 'SSO login failed at the identity provider'),
        );
        assert.match(logged, new RegExp(`"failure":"${failure}"`));
        assert.match(logged, new RegExp(error));
        const exchange = provider.requests.findLast(
          (r) => r.method === 'POST' && r.url.pathname === '/auth/token',
        );
        const verifier = new URLSearchParams(exchange?.body ?? '').get('code_verifier') ?? '';
        assert.ok(verifier.length > 20, 'the exchange sent a PKCE verifier');
        const basic = Buffer.from('legacy-sso:the-client-secret').toString('base64');
        for (const secret of ['the-client-secret', 'a-code', verifier, basic])
          assert.ok(!proxy.logSink.text.includes(secret), `the log holds ${secret}: ${logged}`);
      } finally {
        await proxy.close();
      }
    });
  }
});

describe('SSO at a provider whose sub is not the successor UUID (the username claim decides)', () => {
  // A provider of a few lines that signs in whoever login_hint names, with an opaque `sub` and the
  // name as preferred_username: a correct ID token (signed, nonce, audience) for the name.
  let sandbox: RunningSandbox;
  let provider: LoopbackServer;
  let proxy: SsoProxy;
  const nonces = new Map<string, { nonce: string; name: string }>();
  before(async () => {
    sandbox = await oidcSandbox({
      redirectUris: ['http://127.0.0.1/sso/callback'],
      applicationType: 'native',
    });
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    provider = await startLoopback(async (request, res) => {
      const issuer = `http://${request.headers.host}/auth`;
      const json = (body: unknown): void => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      switch (request.url.pathname) {
        case '/auth/.well-known/openid-configuration':
          return json(discoveryOf(issuer));
        case '/auth/jwks':
          return json({ keys: [jwk] });
        case '/auth/authorize': {
          const params = request.url.searchParams;
          const code = `code-${nonces.size}`;
          nonces.set(code, { nonce: params.get('nonce') ?? '', name: params.get('login_hint') ?? '' });
          const back = new URL(params.get('redirect_uri') ?? '');
          back.searchParams.set('code', code);
          back.searchParams.set('state', params.get('state') ?? '');
          res.writeHead(302, { location: back.href }).end();
          return;
        }
        case '/auth/token': {
          const login = nonces.get(new URLSearchParams(request.body).get('code') ?? '');
          if (!login) {
            res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
            return;
          }
          const idToken = await new SignJWT({
            nonce: login.nonce,
            preferred_username: login.name,
          })
            .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
            .setIssuer(issuer)
            .setAudience('legacy-sso')
            .setSubject(`opaque-${login.name}`)
            .setIssuedAt()
            .setExpirationTime('5m')
            .sign(privateKey);
          return json({
            access_token: 'an-access-token',
            token_type: 'Bearer',
            expires_in: 300,
            id_token: idToken,
          });
        }
      }
      res.writeHead(404).end();
    });
    proxy = await startSsoProxy({
      sandbox,
      config: {
        sso: {
          target: 'https://portal.example/login',
          oidc: { issuer: `${provider.url}/auth`, clientId: 'legacy-sso', clientSecret: 'the-client-secret' },
        },
      },
    });
  });
  after(async () => {
    await proxy?.close();
    await provider?.close();
    await sandbox?.close();
  });

  /** Follows return_to up to sso.target (not into it): the last hop, and where it sends the browser. */
  function signIn(returnTo: string) {
    return new Browser().follow(returnTo, (url) => url.origin === 'https://portal.example');
  }

  it("signs the user in when the successor confirms that the token's user still has the username", async () => {
    await createUser(sandbox, 'opaque.a');
    const { last, next } = await signIn((await proxy.token('opaque.a')).return_to);
    assert.equal(last.url.pathname, '/sso/callback', last.text);
    assert.equal(next?.href, 'https://portal.example/login?login_hint=opaque.a');
    const completed = proxy.logSink
      .lines()
      .filter((l) => l.msg === 'request completed' && String(l.path).startsWith('/sso/callback'))
      .at(-1);
    assert.equal(completed?.successorCalls, 1, 'the successor was asked once');
  });

  it("refuses (403) once the token's user was renamed and another user took the name", async () => {
    const original = await createUser(sandbox, 'opaque.b');
    const { return_to } = await proxy.token('opaque.b');
    await renameUser(sandbox, 'opaque.b', 'opaque.b.old');
    await createUser(sandbox, 'opaque.b');
    const { last, next } = await signIn(return_to);
    assert.equal(next, undefined, 'never sent on');
    assert.equal(last.url.pathname, '/sso/callback');
    assertPage(last, 403);
    assert.match(last.text, /Signed in as someone else/);
    const sso = lastMismatch(proxy);
    assert.deepEqual(sso?.expected, { username: 'opaque.b', uuid: original, usernameNow: 'opaque.b.old' });
    assert.deepEqual(sso?.received, { username: 'opaque.b', sub: 'opaque-opaque.b' });
    assert.doesNotMatch(proxy.logSink.text, /an-access-token|the-client-secret|code-\d/);
  });

  it('answers the 502 page, not a sign-in, when the successor fails the confirming read', async () => {
    await createUser(sandbox, 'opaque.c');
    const { return_to } = await proxy.token('opaque.c');
    sandbox.faults.set({ rules: [{ match: 'GET /users/{id}', status: 503 }] });
    try {
      const { last, next } = await signIn(return_to);
      assert.equal(next, undefined, 'never sent on');
      assert.equal(last.url.pathname, '/sso/callback');
      assertPage(last, 502);
      assert.match(last.text, /Sign-in is not available right now/);
    } finally {
      sandbox.faults.reset();
    }
  });
});

describe('SSO behind a reverse proxy that strips a path prefix (legacy.publicUrl with a path)', () => {
  const PREFIX = '/idm-compat';

  /** Follows return_to to the end; it must be the landing page (through the front) welcoming `username`. */
  async function signIn(browser: Browser, publicUrl: string, returnTo: string, username: string) {
    assert.ok(returnTo.startsWith(`${publicUrl}/sso/continue?token=`), returnTo);
    const { last } = await browser.follow(returnTo);
    const route = browser.hops.map((hop) => `${hop.status} ${hop.url.pathname}`).join(' → ');
    assert.equal(last.url.href, `${publicUrl}/sso/landing?login_hint=${username}`, `${route}: ${last.text}`);
    assertPage(last, 200);
    const started = browser.hops.find((hop) => hop.url.pathname === `${PREFIX}/sso/continue`);
    const binding = started?.headers.getSetCookie().find((line) => line.startsWith('idm_compat_sso_'));
    assert.match(
      binding ?? '',
      /; Path=\/idm-compat\/sso(;|$)/,
      'the cookie goes where the browser comes back',
    );
    assert.ok(
      ![...browser.cookies.keys()].some((name) => name.startsWith('idm_compat_sso_')),
      'the binding cookie is cleared (deleted with the path it was set with)',
    );
  }

  it('finishes the login at the configured provider in the browser that started it', async () => {
    const { front, url: publicUrl, backend } = await prefixFront(PREFIX);
    const sandbox = await oidcSandbox({ redirectUris: [`${publicUrl}/sso/callback`] });
    const proxy = await startSsoProxy({
      sandbox,
      config: {
        legacy: { publicUrl },
        sso: { oidc: { issuer: sandbox.issuer, clientId: 'legacy-sso', clientSecret: 'legacy-sso-secret' } },
      },
    });
    backend.url = proxy.url;
    try {
      await signIn(new Browser(), publicUrl, (await proxy.token('lena.mueller')).return_to, 'lena.mueller');
    } finally {
      await proxy.close();
      await sandbox.close();
      await front.close();
    }
  });

  it("in sandbox mode, registers the callback with publicUrl's path at the embedded provider", async () => {
    const { front, url: publicUrl, backend } = await prefixFront(PREFIX);
    const proxy = await startSsoProxy({ config: { legacy: { publicUrl } } });
    backend.url = proxy.url;
    try {
      await signIn(new Browser(), publicUrl, (await proxy.token('mia.fischer')).return_to, 'mia.fischer');
    } finally {
      await proxy.close();
      await front.close();
    }
  });

  it('refuses a redirectUri on another origin than publicUrl in the configuration', () => {
    const config = (publicUrl: string | undefined, redirectUri: string) => () =>
      parseConfig(
        {
          sandbox: { enabled: true },
          server: { port: 8080 },
          ...(publicUrl === undefined ? {} : { legacy: { publicUrl } }),
          sso: {
            oidc: {
              issuer: 'https://school.example/iserv/auth',
              clientId: 'c',
              clientSecret: 's',
              redirectUri,
            },
          },
        },
        { label: 'test', env: {}, baseDir: '.' },
      );
    const refused =
      /sso\.oidc\.redirectUri: is on https:\/\/other\.example, but browsers start the login on https:\/\/school\.example \(legacy\.publicUrl\)/;
    assert.throws(
      config('https://school.example/idm-compat', 'https://other.example/idm-compat/sso/callback'),
      refused,
    );
    assert.throws(config(undefined, 'https://school.example/sso/callback'), /set legacy\.publicUrl/);
    assert.doesNotThrow(
      config('https://school.example/idm-compat', 'https://school.example/idm-compat/sso/callback'),
    );
    assert.doesNotThrow(config('https://school.example:443/', 'https://school.example/somewhere/callback'));
    assert.doesNotThrow(config(undefined, 'http://127.0.0.1:8080/sso/callback'));
  });
});
