import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { discovery, obj, sandbox, tokenResponse } from './sandbox-helpers.js';

const CLIENT = { clientId: 'portal', clientSecret: 'portal-secret-1' };
const REDIRECT = 'http://127.0.0.1:9/sso/callback';

/** A browser in miniature: follows redirects by hand, keeps cookies, stops at the RP's redirect URI. */
async function authorize(sb: RunningSandbox, params: Record<string, string>): Promise<URL> {
  const cookies = new Map<string, string>();
  let url = new URL(`${sb.issuer}/auth?${new URLSearchParams(params)}`);
  for (let hop = 0; hop < 10; hop++) {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const index = pair.indexOf('=');
      cookies.set(pair.slice(0, index), pair.slice(index + 1));
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

  it('logs in the login_hint user and issues an ID token naming it', async () => {
    const doc = await discovery(sb);
    assert.ok((doc.grant_types_supported as string[]).includes('authorization_code'));
    const { verifier, challenge } = pkce();
    const back = await authorize(sb, start('lena.mueller', challenge));
    assert.equal(back.searchParams.get('state'), 'state-1');
    assert.equal(back.searchParams.get('iss'), sb.issuer);
    const code = back.searchParams.get('code');
    assert.ok(code, back.href);

    const res = await fetch(sb.tokenEndpoint, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
        client_id: CLIENT.clientId,
        client_secret: CLIENT.clientSecret,
      }),
    });
    const tokens = obj(await res.json());
    assert.equal(res.status, 200, JSON.stringify(tokens));
    const jwks = (await (await fetch(String(doc.jwks_uri))).json()) as { keys: [] };
    const { payload } = await jwtVerify(String(tokens.id_token), createLocalJWKSet(jwks), {
      issuer: sb.issuer,
      audience: CLIENT.clientId,
    });
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
