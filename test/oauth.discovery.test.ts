import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { silentLogger } from '../src/log/logger.js';
import { discoverIssuer, isLoopbackHost } from '../src/oauth/discovery.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/index.js';

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
