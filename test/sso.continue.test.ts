// GET /sso/continue without OIDC: the token is consumed once and the browser goes on to
// sso.target with login_hint; unknown, used and expired links get small HTML pages. The proxy
// runs with a ManualClock, so expiry is exact.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../src/lib/clock.js';
import { Browser, type SsoProxy, startSsoProxy } from './sso-helpers.js';

function assertPage(hop: { status: number; headers: Headers; text: string }, status: number, token?: string) {
  assert.equal(hop.status, status, hop.text);
  assert.match(hop.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(hop.headers.get('cache-control'), 'no-store');
  assert.equal(hop.headers.get('referrer-policy'), 'no-referrer');
  assert.match(hop.text, /^<!doctype html>/);
  assert.ok(!/<script/i.test(hop.text));
  if (token) assert.ok(!hop.text.includes(token), 'no token in the page');
}

describe('GET /sso/continue (plain redirect)', () => {
  const clock = new ManualClock(Date.now());
  let proxy: SsoProxy;
  before(async () => {
    proxy = await startSsoProxy({ clock, config: { sandbox: { ssoLogin: false } } });
  });
  after(() => proxy?.close());

  it('redirects once to the default target, the landing page, with login_hint', async () => {
    const { token, return_to } = await proxy.token('lena.mueller');
    const browser = new Browser();
    const hop = await browser.get(return_to);
    assert.equal(hop.status, 302);
    assert.equal(hop.location?.href, `${proxy.server.publicUrl}/sso/landing?login_hint=lena.mueller`);
    assert.equal(hop.headers.get('cache-control'), 'no-store');
    assert.equal(hop.headers.get('referrer-policy'), 'no-referrer');
    assert.equal(browser.cookies.size, 0, 'no cookie without OIDC');

    const landing = await browser.get(hop.location ?? '');
    assertPage(landing, 200);
    assert.match(landing.text, /Welcome, lena\.mueller/);

    const second = await browser.get(return_to);
    assertPage(second, 410, token);
    assert.match(second.text, /already used/);
  });

  it('lets exactly one of three concurrent uses through', async () => {
    const { return_to } = await proxy.token('jonas.schmidt');
    const statuses = await Promise.all(
      [1, 2, 3].map(async () => (await fetch(return_to, { redirect: 'manual' })).status),
    );
    assert.deepEqual(statuses.sort(), [302, 410, 410]);
  });

  it('expires after sso.ttlSeconds (60) by the injected clock', async () => {
    const early = await proxy.token('mia.fischer');
    const late = await proxy.token('paul.wagner');
    clock.advance(59_999);
    assert.equal((await fetch(early.return_to, { redirect: 'manual' })).status, 302);
    clock.advance(1);
    const hop = await new Browser().get(late.return_to);
    assertPage(hop, 410, late.token);
    assert.match(hop.text, /expired/);
  });

  it('answers 400 to unknown, malformed and missing tokens', async () => {
    const unknown = Buffer.alloc(32, 7).toString('base64url');
    for (const url of [
      `${proxy.url}/sso/continue?token=${unknown}`,
      `${proxy.url}/sso/continue?token=short`,
      `${proxy.url}/sso/continue?token=${unknown}%3Cscript%3E`,
      `${proxy.url}/sso/continue`,
    ]) {
      const hop = await new Browser().get(url);
      assertPage(hop, 400);
      assert.match(hop.text, /not valid/, url);
    }
  });

  it('needs no API-user credentials and logs the path without the query', async () => {
    const { token, return_to } = await proxy.token('hannah.schulz');
    const hop = await new Browser().get(return_to);
    assert.equal(hop.status, 302);
    const line = proxy.logSink
      .lines()
      .find((l) => l.msg === 'request completed' && l.path === '/sso/continue' && l.status === 302);
    assert.ok(line, 'a request log line');
    assert.ok(!proxy.logSink.text.includes(token));
  });

  it('forgets used and expired tokens a day after they expired (then they are unknown: 400)', async () => {
    const old = await proxy.token('elias.schroeder');
    clock.advance(24 * 3600 * 1000 + 61_000);
    await proxy.token('lea.braun');
    const hop = await new Browser().get(old.return_to);
    assertPage(hop, 400);
  });

  it('purges at most once a minute: a token past its day is forgotten with the next issue after that', async () => {
    const late = await proxy.token('elias.schroeder');
    // A day and 40 s later the next issue purges, but the late token (valid 60 s) is not yet a day
    // past its expiry.
    clock.advance(24 * 3600 * 1000 + 40_000);
    await proxy.token('lea.braun');
    // 30 s later it is; the last purge was 30 s ago, so this issue does not purge: still 410.
    clock.advance(30_000);
    await proxy.token('lea.braun');
    assertPage(await new Browser().get(late.return_to), 410);
    // A minute after the last purge, the next issue purges again.
    clock.advance(31_000);
    await proxy.token('lea.braun');
    assertPage(await new Browser().get(late.return_to), 400);
  });

  it('shows the landing page only for a plausible username', async () => {
    const hop = await new Browser().get(
      `${proxy.url}/sso/landing?login_hint=${encodeURIComponent('<b>x</b>')}`,
    );
    assertPage(hop, 200);
    assert.ok(!hop.text.includes('<b>'));
    assert.match(hop.text, /without a username/);
  });
});

describe('GET /sso/continue with a configured sso.target and ttl', () => {
  const clock = new ManualClock(Date.now());
  let proxy: SsoProxy;
  before(async () => {
    proxy = await startSsoProxy({
      clock,
      config: {
        sandbox: { ssoLogin: false },
        legacy: { publicUrl: 'http://sso-proxy.example:8443/' },
        sso: { ttlSeconds: 5, target: 'https://portal.example/iserv/login?lang=de' },
      },
    });
  });
  after(() => proxy?.close());

  it('builds return_to on legacy.publicUrl and redirects to the target, keeping its query', async () => {
    const { token, return_to } = await proxy.token('claudia.hoffmann');
    assert.equal(return_to, `http://sso-proxy.example:8443/sso/continue?token=${token}`);
    const hop = await new Browser().get(`${proxy.url}/sso/continue?token=${token}`);
    assert.equal(hop.status, 302);
    assert.equal(
      hop.location?.href,
      'https://portal.example/iserv/login?lang=de&login_hint=claudia.hoffmann',
    );
  });

  it('expires after the configured ttlSeconds', async () => {
    const { token } = await proxy.token('andreas.wolf');
    clock.advance(5_000);
    assert.equal(
      (await fetch(`${proxy.url}/sso/continue?token=${token}`, { redirect: 'manual' })).status,
      410,
    );
  });

  it('answers /sso/callback with 400 when no OIDC provider is configured', async () => {
    const hop = await new Browser().get(`${proxy.url}/sso/callback?state=x&code=y`);
    assertPage(hop, 400);
  });
});
