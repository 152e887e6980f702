import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { silentLogger } from '../src/lib/logger.js';
import { isLoopbackHost } from '../src/lib/loopback.js';
import { discoverIssuer } from '../src/oauth/discovery.js';
import {
  type ClientAuthMethod,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
} from '../src/sandbox/index.js';

describe('issuer discovery', () => {
  let sandbox: RunningSandbox;
  before(async () => {
    sandbox = await startSandbox({ port: 0, logger: silentLogger() });
  });
  after(async () => {
    await sandbox?.close();
  });

  const base = () => ({
    issuer: sandbox.issuer,
    clientId: sandbox.clients.readWrite.clientId,
    clientSecret: sandbox.clients.readWrite.clientSecret,
    timeoutMs: 5000,
    logger: silentLogger(),
    logKey: 'test',
    exposes: 'the client secret',
  });

  it('picks the preferred method among those the issuer advertises, or the fixed one', async () => {
    const post = await discoverIssuer({ ...base(), authMethod: 'auto', prefer: 'client_secret_post' });
    assert.equal(post.authMethod, 'client_secret_post');
    const basic = await discoverIssuer({ ...base(), authMethod: 'auto', prefer: 'client_secret_basic' });
    assert.equal(basic.authMethod, 'client_secret_basic');
    const fixed = await discoverIssuer({
      ...base(),
      authMethod: 'client_secret_basic',
      prefer: 'client_secret_post',
    });
    assert.equal(fixed.authMethod, 'client_secret_basic');
    assert.equal(post.metadata.issuer, sandbox.issuer);
  });

  it('yields a configuration that obtains a token with either method', async () => {
    for (const prefer of ['client_secret_post', 'client_secret_basic'] as const) {
      const { configuration } = await discoverIssuer({ ...base(), authMethod: 'auto', prefer });
      const token = await oidc.clientCredentialsGrant(configuration, { scope: 'iserv:idm:api-read' });
      assert.equal(typeof token.access_token, 'string');
    }
  });

  it('tells loopback hosts from others', () => {
    for (const host of ['localhost', '127.0.0.1', '127.8.9.10', '[::1]', '::1', '::ffff:127.0.0.1']) {
      assert.equal(isLoopbackHost(host), true, host);
    }
    for (const host of ['10.0.0.1', '192.168.1.1', '::ffff:10.0.0.1', '2001:db8::1', 'school.example', '']) {
      assert.equal(isLoopbackHost(host), false, host);
    }
  });
});

describe('issuer discovery against a sandbox advertising one client authentication method', () => {
  const sandboxes: RunningSandbox[] = [];
  after(async () => {
    await Promise.all(sandboxes.map((sb) => sb.close()));
  });
  const only = async (method: 'client_secret_post' | 'client_secret_basic') => {
    const sb = await startSandbox({ port: 0, logger: silentLogger(), clientAuthMethods: [method] });
    sandboxes.push(sb);
    return sb;
  };
  const options = (sb: RunningSandbox) => ({
    issuer: sb.issuer,
    clientId: sb.clients.readWrite.clientId,
    clientSecret: sb.clients.readWrite.clientSecret,
    timeoutMs: 5000,
    logger: silentLogger(),
    logKey: 'test',
    exposes: 'the client secret',
  });
  const tokenRequest = (sb: RunningSandbox, method: 'client_secret_post' | 'client_secret_basic') => {
    const { clientId, clientSecret } = sb.clients.readWrite;
    const body = new URLSearchParams({ grant_type: 'client_credentials', scope: 'iserv:idm:api-read' });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (method === 'client_secret_post') {
      body.set('client_id', clientId);
      body.set('client_secret', clientSecret);
    } else {
      headers.authorization = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    }
    return fetch(sb.tokenEndpoint, { method: 'POST', headers, body });
  };

  for (const [advertised, other] of [
    ['client_secret_basic', 'client_secret_post'],
    ['client_secret_post', 'client_secret_basic'],
  ] as const) {
    it(`only ${advertised}: advertised alone, picked by auto whatever is preferred, the other refused`, async () => {
      const sb = await only(advertised);
      const discovery = (await (await fetch(`${sb.issuer}/.well-known/openid-configuration`)).json()) as {
        token_endpoint_auth_methods_supported?: unknown;
      };
      assert.deepEqual(discovery.token_endpoint_auth_methods_supported, [advertised]);
      for (const prefer of [advertised, other]) {
        const found = await discoverIssuer({ ...options(sb), authMethod: 'auto', prefer });
        assert.equal(found.authMethod, advertised, `prefer ${prefer}`);
        const token = await oidc.clientCredentialsGrant(found.configuration, { scope: 'iserv:idm:api-read' });
        assert.equal(typeof token.access_token, 'string');
      }
      const accepted = await tokenRequest(sb, advertised);
      assert.equal(accepted.status, 200, await accepted.text());
      const refused = await tokenRequest(sb, other);
      assert.equal(refused.status, 401);
      assert.equal(((await refused.json()) as { error?: unknown }).error, 'invalid_client');
    });
  }

  it('refuses an empty or unknown list, and a client registered for a method left out', async () => {
    const refusedAtStart = async (options: SandboxOptions, message: RegExp) => {
      const started = await startSandbox({ port: 0, logger: silentLogger(), ...options }).catch(
        (error: unknown) => error,
      );
      if (!(started instanceof Error)) {
        await (started as RunningSandbox).close();
        assert.fail(`started with ${JSON.stringify(options.clientAuthMethods)}`);
      }
      assert.match(started.message, message);
    };
    await refusedAtStart({ clientAuthMethods: [] }, /clientAuthMethods must not be empty/);
    // As a caller reading the list from JSON might pass it.
    const unknown = JSON.parse('["private_key_jwt"]') as ClientAuthMethod[];
    await refusedAtStart(
      { clientAuthMethods: unknown },
      /clientAuthMethods: unknown method "private_key_jwt"/,
    );
    await refusedAtStart(
      {
        clientAuthMethods: ['client_secret_basic'],
        clients: [
          {
            clientId: 'c',
            clientSecret: 's',
            scopes: ['iserv:idm:api-read'],
            authMethod: 'client_secret_post',
          },
        ],
      },
      /client c registers client_secret_post, which clientAuthMethods \(client_secret_basic\) leaves out/,
    );
  });
});
