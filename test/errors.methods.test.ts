// A wrong method on the proxy's own paths outside the legacy surface (health, metrics, SSO pages,
// migration dashboard) is a 405 with Allow and the legacy JSON body, like on the legacy paths and
// the docs; HEAD still answers like GET; a path that is switched off stays a 404.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AuthHarness, basic, call, closeSharedSandbox, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

type Answer = Awaited<ReturnType<typeof call>>;

function assert405(answer: Answer, method: string) {
  assert.equal(answer.status, 405, answer.text);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(answer.headers.get('allow'), 'GET, HEAD');
  assert.deepEqual(answer.body, {
    code: 405,
    message: `Method ${method} is not allowed here; allowed: GET, HEAD`,
  });
}

describe('wrong methods on the fixed paths', () => {
  let h: AuthHarness;

  before(async () => {
    h = await startHarness();
  });
  after(() => h?.close());

  const cases: [method: string, path: string][] = [
    ['POST', '/healthz'],
    ['PUT', '/readyz'],
    ['DELETE', '/metrics'],
    ['POST', '/sso/continue'],
    ['POST', '/sso/callback'],
    ['PUT', '/sso/landing'],
    ['POST', '/_migration'],
    ['DELETE', '/_migration/'],
    ['POST', '/_migration/api/status'],
    ['OPTIONS', '/healthz'],
  ];
  for (const [method, path] of cases) {
    it(`405 with Allow for ${method} ${path}`, async () => {
      assert405(
        await call(`${h.url}${path}`, { method, body: method === 'POST' ? '{}' : undefined }),
        method,
      );
    });
  }

  it('answers HEAD like GET, as before', async () => {
    for (const path of ['/healthz', '/metrics', '/sso/landing', '/_migration/api/status']) {
      const head = await call(`${h.url}${path}`, { method: 'HEAD' });
      assert.equal(head.status, 200, `HEAD ${path}`);
      assert.equal(head.text, '');
    }
  });

  it("gives a HEAD the Content-Length of the GET's body, on the legacy surface and off it", async () => {
    // hono drops a HEAD's body, and the Content-Length went with it.
    const password = await h.addUser('head-length', ['127.0.0.0/8']);
    const auth = { authorization: basic('head-length', password) };
    for (const [path, status] of [
      ['/iserv/api/Service/Core/Entity/User/admin', 200],
      ['/iserv/api/Service/Core/Entity/Group/admins', 200],
      ['/iserv/api/Service/Core/Entity/User/nobody.here', 404],
      ['/iserv/api/no/such/path', 404],
      ['/healthz', 200],
      ['/sso/landing', 200],
    ] as const) {
      const head = await call(`${h.url}${path}`, { method: 'HEAD', headers: auth });
      const get = await call(`${h.url}${path}`, { headers: auth });
      assert.equal(head.status, status, `HEAD ${path}`);
      assert.equal(get.status, status, `GET ${path}`);
      assert.equal(head.text, '');
      const length = get.headers.get('content-length');
      assert.equal(length, String(Buffer.byteLength(get.text)), `GET ${path}`);
      assert.equal(head.headers.get('content-length'), length, `HEAD ${path}`);
      assert.equal(head.headers.get('content-type'), get.headers.get('content-type'), `HEAD ${path}`);
    }
  });

  it('words the 405 of the legacy surface and of the docs the same way', async () => {
    const password = await h.addUser('methods', ['127.0.0.0/8']);
    const auth = { authorization: basic('methods', password) };
    const legacy = await call(`${h.url}/iserv/api/Service/Core/Entity/User`, {
      method: 'PATCH',
      headers: auth,
    });
    assert.equal(legacy.status, 405, legacy.text);
    const allowed = legacy.headers.get('allow') ?? '';
    assert.deepEqual(new Set(allowed.split(', ')), new Set(['GET', 'HEAD', 'POST']));
    assert.deepEqual(legacy.body, {
      code: 405,
      message: `Method PATCH is not allowed here; allowed: ${allowed}`,
    });
    for (const path of ['/iserv/api/docs', '/iserv/api/docs/openapi.json']) {
      assert405(await call(`${h.url}${path}`, { method: 'DELETE', headers: auth }), 'DELETE');
    }
  });

  it('still answers 404 for an unknown path and for an unknown path below the dashboard', async () => {
    for (const path of ['/healthz/x', '/_migration/nothing']) {
      const answer = await call(`${h.url}${path}`, { method: 'POST' });
      assert.equal(answer.status, 404, path);
      assert.match((answer.body as { message: string }).message, /^No such path/);
    }
  });
});

describe('wrong methods behind an operator guard, and on a path switched off', () => {
  let h: AuthHarness;

  before(async () => {
    h = await startHarness({
      config: {
        metrics: { enabled: false },
        migration: { dashboard: { username: 'ops', password: 'dashboard-secret' } },
      },
    });
  });
  after(() => h?.close());

  it('refuses a wrong method on the dashboard without its credentials first (401), then with them 405', async () => {
    const anonymous = await call(`${h.url}/_migration/api/status`, { method: 'DELETE' });
    assert.equal(anonymous.status, 401, anonymous.text);
    assert.equal(anonymous.headers.get('allow'), null);
    const operator = await call(`${h.url}/_migration/api/status`, {
      method: 'DELETE',
      headers: { authorization: basic('ops', 'dashboard-secret') },
    });
    assert405(operator, 'DELETE');
  });

  it('answers 404, not 405, on the metrics path when metrics are off', async () => {
    const answer = await call(`${h.url}/metrics`, { method: 'POST', body: '{}' });
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.headers.get('allow'), null);
  });
});

describe('wrong methods on the metrics path, behind its ranges and credentials', () => {
  let h: AuthHarness;
  const scraper = { authorization: basic('scraper', 'scrape-secret') };
  // The proxy trusts the loopback peer's X-Forwarded-For, so one test client can come from
  // inside the metrics ranges (10.1.2.3) or from outside them (the loopback peer itself).
  const inside = { 'x-forwarded-for': '10.1.2.3' };

  before(async () => {
    h = await startHarness({
      config: {
        server: { trustedProxies: ['127.0.0.0/8'] },
        metrics: { ranges: ['10.0.0.0/8'], username: 'scraper', password: 'scrape-secret' },
      },
    });
  });
  after(() => h?.close());

  it('refuses POST /metrics from outside the metrics ranges with 403, even with the credentials', async () => {
    const answer = await call(`${h.url}/metrics`, { method: 'POST', body: '{}', headers: scraper });
    assert.equal(answer.status, 403, answer.text);
    assert.equal(answer.headers.get('allow'), null);
    assert.match((answer.body as { message: string }).message, /^The metrics endpoint may not be read from /);
  });

  it('refuses POST /metrics inside the ranges without the credentials with 401', async () => {
    const answer = await call(`${h.url}/metrics`, { method: 'POST', body: '{}', headers: inside });
    assert.equal(answer.status, 401, answer.text);
    assert.equal(answer.headers.get('allow'), null);
    assert.match(answer.headers.get('www-authenticate') ?? '', /^Basic realm="metrics"/);
  });

  it('answers 405 with Allow once the ranges and the credentials let POST /metrics through', async () => {
    const answer = await call(`${h.url}/metrics`, {
      method: 'POST',
      body: '{}',
      headers: { ...inside, ...scraper },
    });
    assert405(answer, 'POST');
    const scrape = await call(`${h.url}/metrics`, { headers: { ...inside, ...scraper } });
    assert.equal(scrape.status, 200, 'GET is served as before');
  });

  it('leaves a path below the metrics path a 404, as before', async () => {
    const answer = await call(`${h.url}/metrics/x`, { method: 'POST', body: '{}' });
    assert.equal(answer.status, 404, answer.text);
  });
});
