// Failed-login throttling over real HTTP with an injected clock: back-off, 429 + Retry-After,
// reset on success, isolation of a second integration at the same address, state across restarts,
// and known addresses: an attacker escalating the per-user block does not lock out the integration.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listApiUsers, removeApiUser, unblockApiUser } from '../src/auth/admin.js';
import { ManualClock } from '../src/lib/clock.js';
import { type AuthHarness, call, closeSharedSandbox, PROTECTED, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

async function attempt(h: AuthHarness, user: string, password: string, xff?: string) {
  return call(`${h.url}${PROTECTED}`, {
    user,
    password,
    ...(xff === undefined ? {} : { headers: { 'x-forwarded-for': xff } }),
  });
}

async function failTimes(h: AuthHarness, times: number, user: string, xff?: string): Promise<void> {
  for (let i = 0; i < times; i++) {
    const response = await attempt(h, user, `wrong-${i}`, xff);
    assert.equal(response.status, 401, `failure ${i + 1} of ${user} should be a 401`);
  }
}

describe('throttling per user and address (defaults: 5 free failures, then 1 s, 2 s, 4 s …)', () => {
  const clock = new ManualClock();
  let h: AuthHarness;
  const pw: Record<string, string> = {};

  before(async () => {
    h = await startHarness({ clock });
    pw.alpha = await h.addUser('alpha', ['127.0.0.0/8']);
    pw.beta = await h.addUser('beta', ['127.0.0.0/8']);
    pw.gamma = await h.addUser('gamma', ['127.0.0.0/8']);
  });
  after(() => h?.close());

  it('refuses with 429 and Retry-After after the free failures, even the right password', async () => {
    await failTimes(h, 6, 'alpha');
    const throttled = await attempt(h, 'alpha', pw.alpha ?? '');
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '1');
    assert.match(throttled.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(throttled.body, {
      code: 429,
      message: 'Too many failed logins; try again in 1 second',
    });
    const [summary] = (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).filter(
      (u) => u.name === 'alpha',
    );
    assert.equal(summary?.throttled, true);
    assert.equal(summary?.recentFailures, 6);
    // The 6th failure blocked the (user, address) pair; the 429 counts as throttled.
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    assert.match(metrics, /^idm_compat_login_blocks_total\{scope="pair"\} 1$/m);
    assert.match(metrics, /^idm_compat_throttled_total 1$/m);
  });

  it('backs off exponentially while failures continue', async () => {
    clock.advance(1_000);
    assert.equal((await attempt(h, 'alpha', 'wrong-again')).status, 401);
    const twice = await attempt(h, 'alpha', pw.alpha ?? '');
    assert.equal(twice.headers.get('retry-after'), '2');
    assert.equal(
      (twice.body as { message: string }).message,
      'Too many failed logins; try again in 2 seconds',
    );
    clock.advance(2_000);
    assert.equal((await attempt(h, 'alpha', 'wrong-again')).status, 401);
    assert.equal((await attempt(h, 'alpha', pw.alpha ?? '')).headers.get('retry-after'), '4');
  });

  it('lets a success after the back-off reset the counters', async () => {
    clock.advance(4_000);
    assert.equal((await attempt(h, 'alpha', pw.alpha ?? '')).status, 200);
    const [summary] = (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).filter(
      (u) => u.name === 'alpha',
    );
    assert.equal(summary?.throttled, false);
    assert.equal(summary?.recentFailures, 0);
    // Five fresh failures are free again.
    await failTimes(h, 5, 'alpha');
    assert.equal((await attempt(h, 'alpha', pw.alpha ?? '')).status, 200);
  });

  it('does not lock out a second integration at the same address', async () => {
    // beta is misconfigured (wrong password) and hammers away from 127.0.0.1 …
    await failTimes(h, 6, 'beta');
    assert.equal((await attempt(h, 'beta', pw.beta ?? '')).status, 429);
    // … and another misconfigured client sprays unknown names from the same address.
    for (let i = 0; i < 11; i++) assert.equal((await attempt(h, `ghost${i}`, 'x')).status, 401);
    const sprayed = await attempt(h, 'ghost-next', 'x');
    assert.equal(sprayed.status, 429, 'unknown names from this address are throttled now');
    // alpha and gamma (who never logged in from here) are unaffected.
    assert.equal((await attempt(h, 'alpha', pw.alpha ?? '')).status, 200);
    assert.equal((await attempt(h, 'gamma', pw.gamma ?? '')).status, 200);
  });

  it('keeps throttle state across a restart (it lives in the store)', async () => {
    // Past the credential cache TTL: a cached (already verified) credential is not throttled.
    clock.advance(61_000);
    await failTimes(h, 6, 'gamma');
    assert.equal((await attempt(h, 'gamma', pw.gamma ?? '')).status, 429);
    const dir = h.dir;
    await h.close();
    h = await startHarness({ clock, dir });
    const afterRestart = await attempt(h, 'gamma', pw.gamma ?? '');
    assert.equal(afterRestart.status, 429);
    assert.equal(afterRestart.headers.get('retry-after'), '1');
    clock.advance(1_000);
    assert.equal((await attempt(h, 'gamma', pw.gamma ?? '')).status, 200);
  });

  it('forgets old failures after an hour without any, and apiuser list counts none of them', async () => {
    const failed = async () =>
      (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).find((u) => u.name === 'gamma')
        ?.recentFailures;
    await failTimes(h, 5, 'gamma');
    assert.equal(await failed(), 5);
    clock.advance(3_600_001);
    // The list showed the 5 forgotten failures as recent until the next failure restarted the counter.
    assert.equal(await failed(), 0);
    await failTimes(h, 5, 'gamma');
    assert.equal(await failed(), 5);
    assert.equal((await attempt(h, 'gamma', pw.gamma ?? '')).status, 200);
    // A block that outlasts the forget time (a long auth.throttle.baseDelaySeconds) keeps its
    // failures in the list while it blocks: it showed FAILED 0 beside a user still refused.
    const at = clock.now();
    await h.services.store.loginThrottle.recordFailure(
      { scope: 'user', userName: 'gamma', address: '' },
      at,
      at - 3_600_000,
      () => at + 3 * 3_600_000,
    );
    clock.advance(2 * 3_600_000);
    assert.equal(await failed(), 1);
    clock.advance(3_600_000);
    assert.equal(await failed(), 0, 'neither recent nor blocking');
  });
});

describe('throttling per user across addresses (default: 20 free failures)', () => {
  const clock = new ManualClock();
  let h: AuthHarness;
  let password = '';

  before(async () => {
    // Loopback is a trusted proxy here, so X-Forwarded-For gives each attempt its own client address.
    h = await startHarness({ clock, config: { server: { trustedProxies: ['127.0.0.0/8'] } } });
    password = await h.addUser('target', ['0.0.0.0/0']);
  });
  after(() => h?.close());

  it('slows a user down everywhere after failures spread over many addresses', async () => {
    for (let host = 1; host <= 4; host++) await failTimes(h, 5, 'target', `192.0.2.${host}`);
    // 20 failures, none of the pairs throttled: the user's own counter is at its free limit.
    assert.equal((await attempt(h, 'target', 'wrong', '192.0.2.5')).status, 401);
    const elsewhere = await attempt(h, 'target', password, '198.51.100.1');
    assert.equal(elsewhere.status, 429);
    assert.equal(elsewhere.headers.get('retry-after'), '1');
    clock.advance(1_000);
    assert.equal((await attempt(h, 'target', password, '198.51.100.1')).status, 200);
  });

  it('throttles unknown names per address without touching other addresses', async () => {
    for (let i = 0; i < 11; i++)
      assert.equal((await attempt(h, `nobody${i}`, 'x', '203.0.113.1')).status, 401);
    assert.equal((await attempt(h, 'nobody-else', 'x', '203.0.113.1')).status, 429);
    assert.equal((await attempt(h, 'nobody-else', 'x', '203.0.113.2')).status, 401);
    assert.equal((await attempt(h, 'target', password, '203.0.113.1')).status, 200);
  });

  it('counts IPv6 clients by /64, so rotating addresses within it does not escape', async () => {
    for (let i = 1; i <= 11; i++) {
      assert.equal((await attempt(h, `nobody${i}`, 'x', `2001:db8:1:2::${i.toString(16)}`)).status, 401);
    }
    assert.equal((await attempt(h, 'nobody-else', 'x', '2001:db8:1:2:ffff::1')).status, 429);
    assert.equal((await attempt(h, 'nobody-else', 'x', '2001:db8:1:3::1')).status, 401);
  });
});

describe('an attacker spreading failures over many addresses does not lock out the integration', () => {
  const clock = new ManualClock();
  let h: AuthHarness;
  let password = '';
  /** The integration calls through the (trusted) loopback proxy from its own address. */
  const INTEGRATION = '10.20.0.5';
  const legit = () => attempt(h, 'sis', password, INTEGRATION);

  before(async () => {
    h = await startHarness({ clock, config: { server: { trustedProxies: ['127.0.0.0/8'] } } });
    password = await h.addUser('sis', ['10.20.0.0/24']);
  });
  after(() => h?.close());

  it('keeps answering the integration from the address it succeeded from while the user is blocked', async () => {
    // The integration works normally: its address becomes a known-good one.
    assert.equal((await legit()).status, 200);

    // 20 wrong passwords spread over 4 addresses: no (user, address) pair is past its 5 free
    // failures, but the user's counter is at its 20 free ones …
    for (let host = 1; host <= 4; host++) await failTimes(h, 5, 'sis', `192.0.2.${host}`);
    // … and one more failure, from ever new addresses, each time the user's block ends (1 s, 2 s,
    // 4 s, …) escalates it past the 60 s the integration's credential stays in the cache.
    let elapsed = 0;
    for (let round = 0; ; round++) {
      assert.equal((await attempt(h, 'sis', `wrong-${round}`, `198.51.100.${round}`)).status, 401);
      const probe = await attempt(h, 'sis', 'guess', '203.0.113.1');
      assert.equal(probe.status, 429, `round ${round}`);
      if (elapsed > 61_000) break;
      const wait = Number(probe.headers.get('retry-after')) * 1000;
      clock.advance(wait);
      elapsed += wait;
    }
    const [summary] = (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).filter(
      (u) => u.name === 'sis',
    );
    assert.equal(summary?.recentFailures, 27);
    assert.equal(summary?.throttled, true);

    // The credential has left the cache; the integration is verified again and let in …
    const integration = await legit();
    assert.equal(integration.status, 200, integration.text);
    // … while the attacker stays throttled, from new and old addresses: the integration's success
    // did not reset the user's counter.
    const fresh = await attempt(h, 'sis', 'guess', '203.0.113.50');
    assert.equal(fresh.status, 429);
    assert.equal(fresh.headers.get('retry-after'), '64');
    assert.equal((await attempt(h, 'sis', 'guess', '192.0.2.1')).status, 429);
    const [after] = (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).filter(
      (u) => u.name === 'sis',
    );
    assert.equal(after?.recentFailures, 27);
  });

  it('does not exempt an address the user never succeeded from', async () => {
    // Past the cache TTL, the user's block (64 s from the last failure) still running: right
    // password, inside the user's ranges, but never seen succeeding there — the user's block applies.
    clock.advance(61_000);
    const newcomer = await attempt(h, 'sis', password, '10.20.0.6');
    assert.equal(newcomer.status, 429);
    assert.equal(newcomer.headers.get('retry-after'), '3');
  });

  it('still applies the known address its own (user, address) counter', async () => {
    await failTimes(h, 6, 'sis', INTEGRATION);
    const throttled = await legit();
    assert.equal(throttled.status, 429);
    assert.equal(throttled.headers.get('retry-after'), '1');
    clock.advance(1_000);
    assert.equal((await legit()).status, 200);
  });

  it('shows the block and the known address, and apiuser unblock lets a newcomer in at once', async () => {
    clock.advance(61_000); // past the credential cache and the earlier blocks
    // Wrong passwords from ever new addresses until the user's counter blocks.
    for (let i = 0; i < 21; i++) await attempt(h, 'sis', `wrong-${i}`, `198.51.100.${100 + i}`);
    const newcomer = () => attempt(h, 'sis', password, '10.20.0.7');
    assert.equal((await newcomer()).status, 429);
    const [blocked] = (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).filter(
      (u) => u.name === 'sis',
    );
    assert.deepEqual(
      blocked?.blocks.map((b) => [b.scope, b.address]),
      [['user', null]],
    );
    assert.deepEqual(
      blocked?.knownAddresses.map((k) => k.address),
      [INTEGRATION],
    );

    assert.ok((await unblockApiUser(h.services.store, 'sis')) > 0);
    assert.equal((await newcomer()).status, 200, 'the running server sees the cleared counters');
    const [unblocked] = (await listApiUsers(h.services.store, clock, h.config.auth.throttle)).filter(
      (u) => u.name === 'sis',
    );
    assert.deepEqual(unblocked?.blocks, []);
    assert.equal(unblocked?.recentFailures, 0);
  });
});

describe('known addresses expire 30 days after their last success', () => {
  const clock = new ManualClock();
  let h: AuthHarness;
  let password = '';
  const DAY = 24 * 60 * 60 * 1000;
  const legit = () => attempt(h, 'sync', password, '10.30.0.5');

  /** 21 failures over 5 addresses: the user's counter is one past its free ones (1 s block). */
  async function blockUser(): Promise<void> {
    for (let host = 1; host <= 4; host++) await failTimes(h, 5, 'sync', `192.0.2.${host}`);
    await failTimes(h, 1, 'sync', '192.0.2.5');
    assert.equal((await attempt(h, 'sync', 'guess', '192.0.2.6')).status, 429);
  }

  before(async () => {
    h = await startHarness({ clock, config: { server: { trustedProxies: ['127.0.0.0/8'] } } });
    password = await h.addUser('sync', ['10.30.0.0/24']);
  });
  after(() => h?.close());

  it('exempts an address whose last success is 29 days old, not one 30 days old', async () => {
    assert.equal((await legit()).status, 200);
    clock.advance(29 * DAY);
    await blockUser();
    assert.equal((await legit()).status, 200, 'a success 29 days ago still counts');
    // That success renewed the address; 30 days (and a second) after it, it is forgotten.
    clock.advance(30 * DAY + 1_000);
    await blockUser();
    const forgotten = await legit();
    assert.equal(forgotten.status, 429);
    assert.equal(forgotten.headers.get('retry-after'), '1');
  });

  it("forgets a user's known addresses when the user is removed", async () => {
    const { loginThrottle } = h.services.store;
    assert.equal(typeof (await loginThrottle.lastSuccess('sync', '10.30.0.5')), 'number');
    await removeApiUser(h.services.store, h.services.clock, 'sync');
    assert.equal(await loginThrottle.lastSuccess('sync', '10.30.0.5'), undefined);
  });
});

describe('guesses sent all at once', () => {
  const clock = new ManualClock();
  let h: AuthHarness;

  before(async () => {
    h = await startHarness({ clock, config: { server: { trustedProxies: ['127.0.0.0/8'] } } });
    await h.addUser('burst', ['0.0.0.0/0']);
  });
  after(() => h?.close());

  /** Password KDF runs so far, as the proxy's own metrics count them. */
  async function kdfRuns(): Promise<number> {
    const text = await (await fetch(`${h.url}/metrics`)).text();
    return Number(/^idm_compat_password_kdf_runs_total (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
  }

  /** How many of `attempts`, all sent at once, got each status. */
  async function statuses(attempts: Promise<{ status: number }>[]): Promise<Record<number, number>> {
    const counts: Record<number, number> = {};
    for (const { status } of await Promise.all(attempts)) counts[status] = (counts[status] ?? 0) + 1;
    return counts;
  }

  it('are judged one after the other: the free failures, then 429 without a KDF run', async () => {
    const before = await kdfRuns();
    const guesses = Array.from({ length: 30 }, (_, i) => attempt(h, 'burst', `guess-${i}`, '198.51.100.7'));
    // As sent one by one: the sixth failure blocks the (user, address) pair.
    assert.deepEqual(await statuses(guesses), { 401: 6, 429: 24 });
    assert.equal((await kdfRuns()) - before, 6);
  });

  it('at unknown names from one address too', async () => {
    const before = await kdfRuns();
    const guesses = Array.from({ length: 40 }, (_, i) => attempt(h, `nobody-${i}`, 'x', '203.0.113.9'));
    assert.deepEqual(await statuses(guesses), { 401: 11, 429: 29 });
    assert.equal((await kdfRuns()) - before, 11);
  });
});
