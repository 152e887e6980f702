// The name of a refused API-user login reaches the log only when it is an existing API user's:
// an unknown "name" is often a password typed into the wrong field (`curl -u "$PASSWORD:demo"`),
// so it is logged as a short SHA-256 prefix and its length, and appears nowhere else either
// (log, metrics, usage inventory) — also once its attempts are throttled.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generatePassword } from '../src/auth/password.js';
import { type AuthHarness, call, closeSharedSandbox, PROTECTED, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

const REFUSED = 'API-user authentication refused';

describe('the attempted API-user name in the log', () => {
  let h: AuthHarness;
  let password = '';
  let elsewhere = '';
  before(async () => {
    h = await startHarness({
      config: { auth: { throttle: { addressFreeFailures: 2, pairFreeFailures: 2, baseDelaySeconds: 60 } } },
    });
    password = await h.addUser('portal', ['127.0.0.0/8']);
    elsewhere = await h.addUser('elsewhere', ['10.0.0.0/8']);
  });
  after(() => h?.close());

  /** The refusal lines of the requests with these ids. */
  function refusals(...requestIds: string[]): Record<string, unknown>[] {
    return h.logSink.lines().filter((l) => l.msg === REFUSED && requestIds.includes(String(l.reqId)));
  }

  it('never logs an unknown name, not even when the password went into the name field', async () => {
    // What `curl -u "$PASSWORD:portal"` sends: the real password as the name.
    const ids = ['swapped-1', 'swapped-2', 'swapped-3', 'swapped-4'];
    const statuses: number[] = [];
    for (const id of ids) {
      const answer = await call(`${h.url}${PROTECTED}`, {
        user: password,
        password: 'portal',
        headers: { 'x-request-id': id },
      });
      statuses.push(answer.status);
      assert.ok(!answer.text.includes(password), 'not in the answer');
    }
    // Two free failures for unknown names from this address; the third blocks the address.
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    await h.services.usage.flush();

    const lines = refusals(...ids);
    assert.equal(lines.length, 4);
    const hash = createHash('sha256').update(password).digest('hex').slice(0, 8);
    for (const line of lines) {
      assert.equal(line.apiUser, undefined);
      assert.equal(line.apiUserHash, hash, 'the same name gives the same hash, so attempts correlate');
      assert.equal(line.apiUserLength, password.length);
      assert.equal(line.address, '127.0.0.1');
    }
    assert.deepEqual(
      lines.map((l) => l.reason),
      ['unknown user', 'unknown user', 'unknown user', 'throttled'],
    );
    assert.ok(!h.logSink.text.includes(password), 'the name appears in no log line at all');
    const metrics = await call(`${h.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.ok(!metrics.text.includes(password), 'nor in the metrics');
    const usage = await h.services.store.usage.list();
    assert.ok(!JSON.stringify(usage).includes(password), 'nor in the usage inventory');
  });

  it('tells different unknown names apart by their hash', async () => {
    const other = generatePassword();
    await call(`${h.url}${PROTECTED}`, {
      user: other,
      password: 'x',
      headers: { 'x-request-id': 'other-1' },
    });
    const [line] = refusals('other-1');
    assert.equal(line?.apiUserHash, createHash('sha256').update(other).digest('hex').slice(0, 8));
    assert.notEqual(line?.apiUserHash, createHash('sha256').update(password).digest('hex').slice(0, 8));
    assert.ok(!h.logSink.text.includes(other));
  });

  it('logs the name of an existing API user: wrong password, throttled, outside its ranges', async () => {
    const ids = ['known-1', 'known-2', 'known-3', 'known-4'];
    const statuses: number[] = [];
    for (const id of ids) {
      const answer = await call(`${h.url}${PROTECTED}`, {
        user: 'portal',
        password: 'wrong',
        headers: { 'x-request-id': id },
      });
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    const lines = refusals(...ids);
    assert.deepEqual(
      lines.map((l) => [l.apiUser, l.reason, l.apiUserHash]),
      [
        ['portal', 'wrong password', undefined],
        ['portal', 'wrong password', undefined],
        ['portal', 'wrong password', undefined],
        ['portal', 'throttled', undefined],
      ],
    );

    const outside = await call(`${h.url}${PROTECTED}`, {
      user: 'elsewhere',
      password: elsewhere,
      headers: { 'x-request-id': 'outside-1' },
    });
    assert.equal(outside.status, 403);
    const [line] = refusals('outside-1');
    assert.deepEqual([line?.apiUser, line?.reason], ['elsewhere', 'forbidden']);
  });
});
