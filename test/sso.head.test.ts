// HEAD on the SSO links changes nothing: mail and link scanners send it before the person clicks,
// so a HEAD must neither use up the single-use token (/sso/continue) nor finish the OIDC login
// (/sso/callback). It answers 200 without a body; the following GET works as if it had not come.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Browser, type SsoProxy, startSsoProxy } from './sso-helpers.js';

/** A HEAD as a scanner sends it (no redirects followed), with the browser's cookies when given. */
async function head(url: URL | string, browser?: Browser): Promise<Response> {
  const cookie = browser ? [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  return fetch(url, { method: 'HEAD', redirect: 'manual', headers: cookie === '' ? {} : { cookie } });
}

async function assertHeadAnswer(response: Response): Promise<void> {
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('location'), null);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(await response.text(), '');
}

describe('HEAD /sso/continue (plain redirect)', () => {
  let proxy: SsoProxy;
  before(async () => {
    proxy = await startSsoProxy({ config: { sandbox: { ssoLogin: false } } });
  });
  after(() => proxy?.close());

  it('leaves the token unused: HEAD, HEAD, then GET still redirects to the target', async () => {
    const { return_to } = await proxy.token('lena.mueller');
    await assertHeadAnswer(await head(return_to));
    await assertHeadAnswer(await head(return_to));
    const hop = await new Browser().get(return_to);
    assert.equal(hop.status, 302, hop.text);
    assert.equal(hop.location?.href, `${proxy.server.publicUrl}/sso/landing?login_hint=lena.mueller`);
    const sso = proxy.logSink.lines().filter((line) => line.msg === 'SSO token used');
    assert.equal(sso.length, 1, 'used once, by the GET');
  });

  it('answers every HEAD alike, whatever the token (nothing is looked up)', async () => {
    const { return_to } = await proxy.token('jonas.schmidt');
    assert.equal((await fetch(return_to, { redirect: 'manual' })).status, 302);
    await assertHeadAnswer(await head(return_to));
    await assertHeadAnswer(await head(`${proxy.url}/sso/continue?token=short`));
    await assertHeadAnswer(await head(`${proxy.url}/sso/continue`));
  });
});

describe('HEAD on the SSO links with OIDC (the embedded provider)', () => {
  let proxy: SsoProxy;
  before(async () => {
    proxy = await startSsoProxy();
  });
  after(() => proxy?.close());

  it('starts no login on /sso/continue and finishes none on /sso/callback', async () => {
    const { return_to } = await proxy.token('lena.mueller');
    await assertHeadAnswer(await head(return_to));
    const browser = new Browser();
    const callback = `${proxy.server.publicUrl}/sso/callback`;
    const first = await browser.get(return_to);
    assert.equal(first.status, 302, first.text);
    assert.equal(`${first.location?.origin}${first.location?.pathname}`, `${proxy.sandbox.issuer}/auth`);

    const { next } = await browser.follow(first.location ?? '', (url) => url.href.startsWith(callback));
    assert.ok(next, 'the provider sends the browser back to the callback');
    // A scanner (or a prefetch) with the very cookies of the browser: still nothing is used up.
    await assertHeadAnswer(await head(next, browser));
    const back = await browser.get(next);
    assert.equal(back.status, 302, back.text);
    assert.equal(back.location?.href, `${proxy.server.publicUrl}/sso/landing?login_hint=lena.mueller`);
  });
});
