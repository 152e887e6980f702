// The links the proxy writes. SSO's return_to names the proxy's own URL, never the request's Host
// header (on IPv4, IPv6 and dual-stack listeners); the Location of a create (translated and
// passed through) is under legacy.publicUrl when set, else under the origin the client called,
// Host included, as the legacy server built it.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { serverOrigin } from '../src/http/public-url.js';
import { type AuthHarness, basic, closeSharedSandbox, startHarness } from './auth-helpers.js';
import { type OldServer, startFront, startOldServer } from './migration-helpers.js';

after(closeSharedSandbox);

const CORE = '/iserv/api/Service/Core';
const FORGED = 'evil.example:666';
/** A name a client may call the proxy by (through a reverse proxy that passes Host on, say). */
const CALLED = 'idm-compat.school.example:8080';

/** A request with a Host header of the caller's choosing (fetch would not send one). */
function withHost(
  url: string,
  init: { method: string; host: string; authorization: string; contentType: string; body: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: init.method,
        headers: {
          host: init.host,
          authorization: init.authorization,
          'content-type': init.contentType,
          'content-length': Buffer.byteLength(init.body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

function createRole(url: string, authorization: string, name: string) {
  return withHost(`${url}${CORE}/Entity/Role`, {
    method: 'POST',
    host: CALLED,
    authorization,
    contentType: 'application/json',
    body: JSON.stringify({ name, module: 'm' }),
  });
}

/** The legacy ID of a created entity (roles get `ROLE_<NAME>` by the default profile). */
function idOf(answer: { text: string }): string {
  return (JSON.parse(answer.text) as { _id: string })._id;
}

function ssoReturnTo(url: string, authorization: string) {
  return withHost(`${url}/iserv/api/Service/Sso/authenticate`, {
    method: 'POST',
    host: FORGED,
    authorization,
    contentType: 'application/x-www-form-urlencoded',
    body: 'username=lena.mueller',
  });
}

describe('links without legacy.publicUrl (listening on port 0)', () => {
  let h: AuthHarness;
  let authorization: string;
  before(async () => {
    h = await startHarness({ hosts: ['127.0.0.1', '::1', '::'] });
    authorization = basic('linker', await h.addUser('linker', ['127.0.0.0/8', '::1/128']));
  });
  after(() => h?.close());

  it('puts the Location of a create under the origin the client called, as the legacy server did', async () => {
    const created = await createRole(h.url, authorization, 'hosttest');
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.location, `http://${CALLED}${CORE}/Entity/Role/${idOf(created)}`);
  });

  it("gives SSO's return_to the address the proxy listens on, never the Host header", async () => {
    for (const url of [h.url, h.urls['::1'] ?? '', h.urls['::'] ?? '']) {
      const answer = await ssoReturnTo(url, authorization);
      assert.equal(answer.status, 200, answer.text);
      const returnTo = new URL((JSON.parse(answer.text) as { return_to: string }).return_to);
      assert.equal(returnTo.origin, url);
      assert.equal(returnTo.pathname, '/sso/continue');
    }
  });
});

describe('links with legacy.publicUrl', () => {
  const publicUrl = 'https://idm-compat.school.example';
  let h: AuthHarness;
  let authorization: string;
  before(async () => {
    h = await startHarness({ config: { legacy: { publicUrl: `${publicUrl}/` } } });
    authorization = basic('linker', await h.addUser('linker', ['127.0.0.0/8']));
  });
  after(() => h?.close());

  it('puts the Location of a create and the return_to under legacy.publicUrl', async () => {
    const created = await createRole(h.url, authorization, 'hostpublic');
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.location, `${publicUrl}${CORE}/Entity/Role/${idOf(created)}`);
    const answer = await ssoReturnTo(h.url, authorization);
    assert.equal(answer.status, 200, answer.text);
    const returnTo = (JSON.parse(answer.text) as { return_to: string }).return_to;
    assert.ok(returnTo.startsWith(`${publicUrl}/sso/continue?token=`), returnTo);
  });
});

describe('the Location of a passed-through create', () => {
  let old: OldServer;
  let front: AuthHarness;
  let authorization: string;
  before(async () => {
    old = await startOldServer();
    front = await startFront(old, { modes: { 'role.*': 'passthrough' } });
    authorization = basic('linker', await front.addUser('linker', ['127.0.0.0/8']));
  });
  after(async () => {
    await front?.close();
    await old?.close();
  });

  it("moves the old server's Location under the origin the client called", async () => {
    const created = await createRole(front.url, authorization, 'hostpassed');
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.location, `http://${CALLED}${CORE}/Entity/Role/${idOf(created)}`);
  });
});

describe('the origin of the proxy server', () => {
  it('brackets an IPv6 address, writes its zone as %25, and leaves out a port it does not know', () => {
    assert.equal(serverOrigin(false, '127.0.0.1', 8080), 'http://127.0.0.1:8080');
    assert.equal(serverOrigin(true, '::1', 8443), 'https://[::1]:8443');
    assert.equal(serverOrigin(false, 'proxy.school.example'), 'http://proxy.school.example');
    assert.equal(serverOrigin(false, 'fe80::1%eth0', 8080), 'http://[fe80::1%25eth0]:8080');
  });
});
