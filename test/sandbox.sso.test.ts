import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, type JWTPayload, jwtVerify } from 'jose';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { discovery, keyClient, obj, sandbox, tokenResponse, userId } from './sandbox-helpers.js';

const CLIENT = { clientId: 'portal', clientSecret: 'portal-secret-1' };
const REDIRECT = 'http://127.0.0.1:9/sso/callback';

/**
 * A browser in miniature: follows redirects by hand, keeps cookies (in `cookies`, a fresh jar
 * unless given: a browser that signed in before brings its provider session), stops at the RP's
 * redirect URI. `visited` collects the URLs it went to.
 */
async function authorize(
  sb: RunningSandbox,
  params: Record<string, string>,
  cookies = new Map<string, string>(),
  visited: URL[] = [],
): Promise<URL> {
  let url = new URL(`${sb.issuer}/auth?${new URLSearchParams(params)}`);
  for (let hop = 0; hop < 10; hop++) {
    visited.push(url);
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const index = pair.indexOf('=');
      const value = pair.slice(index + 1);
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line))
        cookies.delete(pair.slice(0, index));
      else cookies.set(pair.slice(0, index), value);
    }
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) {
      assert.fail(`no redirect from ${url}: ${res.status} ${await res.text()}`);
    }
    url = new URL(location, url);
    if (url.href.startsWith(REDIRECT)) return url;
  }
  return assert.fail('too many redirects');
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

describe('sandbox interactive login (authorization code + PKCE, auto-approve)', () => {
  let sb: RunningSandbox;
  before(async () => {
    sb = await sandbox({
      interactiveLogin: 'auto-approve',
      clients: [
        {
          clientId: 'idm-compat',
          clientSecret: 'sandbox-secret',
          scopes: ['iserv:idm:api-read', 'iserv:idm:api-write'],
        },
        { ...CLIENT, scopes: [], redirectUris: [REDIRECT] },
      ],
    });
  });
  after(() => sb.close());

  const start = (loginHint: string | undefined, challenge: string) => ({
    client_id: CLIENT.clientId,
    response_type: 'code',
    redirect_uri: REDIRECT,
    scope: 'openid profile email',
    state: 'state-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(loginHint === undefined ? {} : { login_hint: loginHint }),
  });

  /** Exchanges the code of `back` at the token endpoint: the status and the answer's fields. */
  async function exchange(
    back: URL,
    verifier: string,
  ): Promise<{ status: number; tokens: Record<string, unknown> }> {
    const res = await fetch(sb.tokenEndpoint, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code') ?? '',
        redirect_uri: REDIRECT,
        code_verifier: verifier,
        client_id: CLIENT.clientId,
        client_secret: CLIENT.clientSecret,
      }),
    });
    return { status: res.status, tokens: obj(await res.json()) };
  }

  /** The verified claims of the ID token the code of `back` is exchanged for. */
  async function idToken(back: URL, verifier: string): Promise<JWTPayload> {
    const { status, tokens } = await exchange(back, verifier);
    assert.equal(status, 200, JSON.stringify(tokens));
    const jwks = (await (await fetch(String((await discovery(sb)).jwks_uri))).json()) as { keys: [] };
    const { payload } = await jwtVerify(String(tokens.id_token), createLocalJWKSet(jwks), {
      issuer: sb.issuer,
      audience: CLIENT.clientId,
    });
    return payload;
  }

  it('logs in the login_hint user and issues an ID token naming it', async () => {
    const doc = await discovery(sb);
    assert.ok((doc.grant_types_supported as string[]).includes('authorization_code'));
    const { verifier, challenge } = pkce();
    const back = await authorize(sb, start('lena.mueller', challenge));
    assert.equal(back.searchParams.get('state'), 'state-1');
    assert.equal(back.searchParams.get('iss'), sb.issuer);
    assert.ok(back.searchParams.get('code'), back.href);

    const payload = await idToken(back, verifier);
    const lena = sb.data.userByAccount('lena.mueller');
    assert.equal(payload.sub, lena?.id);
    assert.equal(payload.preferred_username, 'lena.mueller');
    assert.equal(payload.given_name, 'Lena');
    assert.equal(payload.family_name, 'Müller');
  });

  it('accepts the user UUID as login_hint', async () => {
    const back = await authorize(sb, start(sb.data.userByAccount('admin')?.id ?? '', pkce().challenge));
    assert.ok(back.searchParams.get('code'));
  });

  it('ends with access_denied for unknown, deleted or locked users and a missing hint', async () => {
    for (const [hint, reason] of [
      ['nobody', /unknown user/],
      ['ben.krause', /deleted/],
      ['leon.weber', /locked/],
      [undefined, /login_hint is required/],
    ] as const) {
      const back = await authorize(sb, start(hint, pkce().challenge));
      assert.equal(back.searchParams.get('error'), 'access_denied', String(hint));
      assert.match(back.searchParams.get('error_description') ?? '', reason);
      assert.equal(back.searchParams.get('code'), null);
    }
  });

  it("answers from the browser's session only for the login_hint user, and only while that user may log in", async () => {
    const cookies = new Map<string, string>();
    const signIn = async (hint: string) => {
      const { verifier, challenge } = pkce();
      const visited: URL[] = [];
      const back = await authorize(sb, start(hint, challenge), cookies, visited);
      const interacted = visited.some((url) => url.pathname.includes('/interaction/'));
      return { back, verifier, interacted };
    };
    const lena = await signIn('lena.mueller');
    assert.equal((await idToken(lena.back, lena.verifier)).preferred_username, 'lena.mueller');
    // Another user in the same browser: logged in afresh, not answered with lena's session.
    const mia = await signIn('mia.fischer');
    assert.ok(mia.interacted, 'a login for mia.fischer');
    assert.equal((await idToken(mia.back, mia.verifier)).preferred_username, 'mia.fischer');
    // The same user again: the session answers, without a login.
    const again = await signIn('mia.fischer');
    assert.equal(again.interacted, false, 'the session of mia.fischer is reused');
    const code = await signIn('mia.fischer');

    const locked = await keyClient(sb).patch(`/users/${userId(sb, 'mia.fischer')}`, { locked: true });
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    try {
      // Locked since: a code issued before buys no token, and her session signs her in no more.
      const late = await exchange(code.back, code.verifier);
      assert.equal(late.status, 400, String(late.tokens.error));
      assert.equal(late.tokens.error, 'invalid_grant');
      const refused = await signIn('mia.fischer');
      assert.equal(refused.back.searchParams.get('error'), 'access_denied');
      assert.match(refused.back.searchParams.get('error_description') ?? '', /locked/);
    } finally {
      await keyClient(sb).patch(`/users/${userId(sb, 'mia.fischer')}`, { locked: false });
    }
  });

  it('requires PKCE', async () => {
    const { code_challenge: _c, code_challenge_method: _m, ...withoutPkce } = start('lena.mueller', 'x');
    const back = await authorize(sb, withoutPkce);
    assert.equal(back.searchParams.get('error'), 'invalid_request');
  });

  it('keeps client credentials working beside it', async () => {
    const { status, body } = await tokenResponse(sb);
    assert.equal(status, 200);
    assert.equal(body.scope, 'iserv:idm:api-read iserv:idm:api-write');
  });
});

describe('sandbox without interactive login', () => {
  it('offers no authorization-code flow to its clients', async () => {
    const sb = await sandbox({
      seed: false,
      clients: [{ ...CLIENT, scopes: ['iserv:idm:api-read'], redirectUris: [REDIRECT] }],
    });
    try {
      const res = await fetch(
        `${sb.issuer}/auth?${new URLSearchParams({ client_id: CLIENT.clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid' })}`,
        { redirect: 'manual' },
      );
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('location'), null);
      assert.equal(
        obj(await res.json()).error,
        'invalid_redirect_uri',
        'its redirect URIs are not registered',
      );
    } finally {
      await sb.close();
    }
  });
});
