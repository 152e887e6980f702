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
