// Checks past the credential cache that run at the same time, on the real SQLite store: a burst of
// the right password with the cache off shares one KDF run, and a check that waited behind another
// is judged by the credentials as they are once its turn comes (a user removed meanwhile is
// refused). The bursts of wrong guesses are in auth.throttle.test.ts, over HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { parseAddress } from '../src/auth/addresses.js';
import { removeApiUser } from '../src/auth/admin.js';
import { Authenticator } from '../src/auth/authenticator.js';
import { silentLogger } from '../src/lib/logger.js';
import { type AuthHarness, closeSharedSandbox, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

describe('checks past the credential cache at the same time', () => {
  let h: AuthHarness;
  const address = parseAddress('127.0.0.1');

  before(async () => {
    h = await startHarness();
  });
  after(() => h?.close());

  /** An authenticator on the harness's store, counting its KDF runs and telling when one starts. */
  function authenticator(credentialCacheTtlSeconds: number, onKdf: () => void = () => {}) {
    const counted = { runs: 0 };
    const auth = new Authenticator({
      store: h.services.store,
      clock: { now: () => Date.now() },
      logger: silentLogger(),
      credentialCacheTtlSeconds,
      credentialCacheMaxEntries: 100,
      throttle: h.config.auth.throttle,
      observer: {
        kdfRun: () => {
          counted.runs += 1;
          onKdf();
        },
      },
    });
    return { auth, counted };
  }

  it('share one KDF run for a burst of the same credentials, also with the cache off', async () => {
    const password = await h.addUser('steady', ['127.0.0.0/8']);
    const { auth, counted } = authenticator(0);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => auth.authenticate('steady', password, address)),
    );
    assert.deepEqual(new Set(outcomes.map((outcome) => outcome.kind)), new Set(['ok']));
    assert.equal(counted.runs, 1);
  });

  it('judge a check that waited by the credentials of its turn: a user removed meanwhile is refused', async () => {
    const password = await h.addUser('leaving', ['127.0.0.0/8']);
    let kdfStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      kdfStarted = resolve;
    });
    const { auth } = authenticator(60, () => kdfStarted());
    // A wrong guess holds the user's counters while its KDF runs (tens of milliseconds) …
    const guess = auth.authenticate('leaving', 'wrong', address);
    await started;
    // … the right password waits behind it, having read the user as it was …
    const waiting = auth.authenticate('leaving', password, address);
    for (let i = 0; i < 5; i++) await turn();
    // … and the user goes before its turn comes.
    await removeApiUser(h.services.store, 'leaving');
    assert.equal((await guess).kind, 'unauthorized');
    assert.deepEqual(await waiting, { kind: 'unauthorized', reason: 'unknown user' });
  });
});
