import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { RunningSandbox } from '../src/sandbox/index.js';
import {
  accessToken,
  api,
  assertProblem,
  discovery,
  keyClient,
  obj,
  sandbox,
  tokenResponse,
} from './sandbox-helpers.js';

const READ = 'iserv:idm:api-read';
const WRITE = 'iserv:idm:api-write';

describe('sandbox OAuth2 server and token checks', () => {
  let sb: RunningSandbox;
  before(async () => {
    sb = await sandbox();
  });
  after(() => sb.close());

  it('serves discovery under the issuer path with the real token endpoint path and both secret methods', async () => {
    const doc = await discovery(sb);
    assert.equal(sb.issuer, `${sb.url}/iserv/auth`);
    assert.equal(doc.issuer, sb.issuer);
    assert.equal(doc.token_endpoint, `${sb.url}/iserv/auth/public/token`);
    assert.equal(doc.token_endpoint, sb.tokenEndpoint);
    assert.deepEqual([...(doc.token_endpoint_auth_methods_supported as string[])].sort(), [
      'client_secret_basic',
      'client_secret_post',
    ]);
    assert.ok((doc.grant_types_supported as string[]).includes('client_credentials'));
    assert.ok((doc.scopes_supported as string[]).includes(READ));
    assert.ok((doc.scopes_supported as string[]).includes(WRITE));
    const jwks = await (await fetch(String(doc.jwks_uri))).json();
    assert.equal(Array.isArray(obj(jwks).keys), true);
  });

  for (const method of ['client_secret_post', 'client_secret_basic'] as const) {
    it(`issues a JWT access token with ${method} that verifies against the published JWKS`, async () => {
      const { status, body } = await tokenResponse(sb, { method, scope: `${READ} ${WRITE}` });
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.expires_in, 3600);
      assert.equal(body.scope, `${READ} ${WRITE}`);
      const doc = await discovery(sb);
      const jwks = (await (await fetch(String(doc.jwks_uri))).json()) as { keys: [] };
      const { payload, protectedHeader } = await jwtVerify(
        String(body.access_token),
        createLocalJWKSet(jwks),
        {
          issuer: sb.issuer,
          audience: sb.apiBaseUrl,
        },
      );
      assert.equal(protectedHeader.typ, 'at+jwt');
      assert.equal(payload.client_id, 'idm-compat');
      const res = await api(sb, '/users?itemsPerPage=1', { token: String(body.access_token) });
      assert.equal(res.status, 200);
    });
  }

  it('grants the registered scopes when the request names none', async () => {
    const { body } = await tokenResponse(sb);
    assert.equal(body.scope, `${READ} ${WRITE}`);
    const readOnly = await tokenResponse(sb, {
      clientId: sb.clients.readOnly.clientId,
      clientSecret: sb.clients.readOnly.clientSecret,
    });
    assert.equal(readOnly.body.scope, READ);
  });

  it('refuses a scope outside the client registration or unknown (invalid_scope) and a wrong secret (invalid_client)', async () => {
    const refused = await tokenResponse(sb, {
      clientId: 'idm-compat-readonly',
      clientSecret: 'sandbox-readonly-secret',
      scope: `${READ} ${WRITE}`,
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error, 'invalid_scope');
    // A scope no client or API has (a typo) too: it was dropped, and the token lacked it.
    for (const scope of ['iserv:idm:api-raed', `foo ${READ}`]) {
      const unknown = await tokenResponse(sb, { scope });
      assert.equal(unknown.status, 400, scope);
      assert.equal(unknown.body.error, 'invalid_scope', scope);
    }
    const wrong = await tokenResponse(sb, { clientSecret: 'not-the-secret' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'invalid_client');
  });

  it('answers 401 with a Bearer challenge without a token, with a malformed one and with a forged one', async () => {
    const none = await api(sb, '/users');
    assertProblem(none, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');

    const garbage = await api(sb, '/users', { token: 'not-a-jwt' });
    assertProblem(garbage, 401);
    assert.match(garbage.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);

    const token = await accessToken(sb);
    const [header, payload] = token.split('.');
    const forged = `${header}.${payload}.${'A'.repeat(86)}`;
    const bad = await api(sb, '/users', { token: forged });
    const problem = assertProblem(bad, 401);
    assert.match(String(problem.detail), /signature/);
  });

  it('rejects a token of another sandbox (other keys, issuer and audience)', async () => {
    const other = await sandbox({ seed: false });
    try {
      const foreign = await accessToken(other);
      assertProblem(await api(sb, '/users', { token: foreign }), 401);
    } finally {
      await other.close();
    }
  });

  it('answers 403 naming the write scope when a read-only token writes, and allows its reads', async () => {
    const token = await accessToken(sb, {
      clientId: sb.clients.readOnly.clientId,
      clientSecret: sb.clients.readOnly.clientSecret,
    });
    assert.equal((await api(sb, '/groups', { token })).status, 200);
    const res = await api(sb, '/groups', { token, method: 'POST', json: { name: 'Nope' } });
    const problem = assertProblem(res, 403);
    assert.match(String(problem.detail), /iserv:idm:api-write/);
    assert.equal(res.headers.get('www-authenticate'), `Bearer error="insufficient_scope", scope="${WRITE}"`);
    assert.equal(sb.data.groupByAccount('nope'), undefined);
  });

  it('answers 403 naming the read scope when a write-only token reads', async () => {
    const token = await accessToken(sb, { scope: WRITE });
    const res = await api(sb, '/users', { token });
    const problem = assertProblem(res, 403);
    assert.match(String(problem.detail), /iserv:idm:api-read/);
    assert.equal(res.headers.get('www-authenticate'), `Bearer error="insufficient_scope", scope="${READ}"`);
  });

  it('accepts the API key header for reads and writes, refuses a wrong key', async () => {
    const client = keyClient(sb);
    assert.equal((await client.get('/roles')).status, 200);
    const created = await client.post('/roles', { role: 'ROLE_API_KEY', name: 'Made with a key' });
    assert.equal(created.status, 201);
    assertProblem(await api(sb, '/roles', { apiKey: 'wrong-key' }), 401);
  });

  it('serves the OpenAPI document without credentials', async () => {
    assert.equal((await api(sb, '/docs.jsonopenapi')).status, 200);
  });
});

describe('sandbox token lifetime', () => {
  it('honours tokenTtlSeconds and rejects the token once it has expired', async () => {
    // Two seconds, not one: token times have whole-second resolution, so a one-second token can
    // expire within milliseconds of being issued.
    const sb = await sandbox({ tokenTtlSeconds: 2, seed: false });
    try {
      const { body } = await tokenResponse(sb);
      assert.equal(body.expires_in, 2);
      const token = String(body.access_token);
      const claims = decodeJwt(token);
      assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), 2);
      assert.equal((await api(sb, '/users', { token })).status, 200);
      await sleep(3100);
      const res = await api(sb, '/users', { token });
      const problem = assertProblem(res, 401);
      assert.match(String(problem.detail), /expired/);
      assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    } finally {
      await sb.close();
    }
  });

  it('takes custom clients and API keys', async () => {
    const sb = await sandbox({
      seed: false,
      clients: [
        {
          clientId: 'reader',
          clientSecret: 'reader-secret-1',
          scopes: [READ],
          authMethod: 'client_secret_basic',
        },
        { clientId: 'writer', clientSecret: 'writer-secret-1', scopes: [READ, WRITE] },
      ],
      apiKeys: ['key-one', 'key-two'],
    });
    try {
      assert.deepEqual(sb.clients.readOnly, { clientId: 'reader', clientSecret: 'reader-secret-1' });
      assert.deepEqual(sb.clients.readWrite, { clientId: 'writer', clientSecret: 'writer-secret-1' });
      assert.equal(sb.apiKey, 'key-one');
      const token = await accessToken(sb, {
        clientId: 'reader',
        clientSecret: 'reader-secret-1',
        method: 'client_secret_basic',
      });
      assert.equal((await api(sb, '/users', { token })).status, 200);
      assert.equal((await api(sb, '/users', { apiKey: 'key-two' })).status, 200);
      assert.equal(
        (await tokenResponse(sb, { clientId: 'idm-compat', clientSecret: 'sandbox-secret' })).status,
        401,
      );
    } finally {
      await sb.close();
    }
  });
});
