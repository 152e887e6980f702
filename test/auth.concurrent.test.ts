// Checks past the credential cache that run at the same time, on the real SQLite store: a burst of
// the right password with the cache off shares one KDF run, and a check that waited behind another
// is judged by the credentials as they are once its turn comes (a user removed meanwhile is
// refused); and a burst of new credentials runs the KDF at most auth.kdfConcurrency times at once.
// The bursts of wrong guesses are in auth.throttle.test.ts, over HTTP.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep, setImmediate as turn } from 'node:timers/promises';
import { parseAddress } from '../src/auth/addresses.js';
import { removeApiUser, resetApiUserPassword, setApiUserRanges } from '../src/auth/admin.js';
import { Authenticator, type AuthOutcome, CREDENTIALS_VERSION_POLL_MS } from '../src/auth/authenticator.js';
import { silentLogger } from '../src/lib/logger.js';
import { type AuthHarness, closeSharedSandbox, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

/** This process's resident memory now and its peak since the last reset (Linux's /proc), in MiB. */
function residentMiB(): number {
  return statusKiB('VmRSS') / 1024;
}
function peakResidentMiB(): number {
  return statusKiB('VmHWM') / 1024;
}
function resetPeakResident(): void {
  writeFileSync('/proc/self/clear_refs', '5');
}
function statusKiB(field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  if (!match) throw new Error(`no ${field} in /proc/self/status`);
  return Number(match[1]);
}

describe('checks past the credential cache at the same time', () => {
  let h: AuthHarness;
  const address = parseAddress('127.0.0.1');

  before(async () => {
    h = await startHarness();
  });
  after(() => h?.close());

  /**
   * An authenticator on the harness's store, counting its KDF runs, telling when one starts and
   * keeping each number of checks waiting for a KDF turn it was told.
   */
  function authenticator(
    credentialCacheTtlSeconds: number,
    onKdf: () => void = () => {},
    kdfConcurrency = 2,
    clock = { now: () => Date.now() },
  ) {
    const counted = { runs: 0, waiting: [] as number[] };
    const auth = new Authenticator({
      store: h.services.store,
      clock,
      logger: silentLogger(),
      credentialCacheTtlSeconds,
      credentialCacheMaxEntries: 100,
      kdfConcurrency,
      throttle: h.config.auth.throttle,
      observer: {
        kdfRun: () => {
          counted.runs += 1;
          onKdf();
        },
        kdfWaiting: (count) => counted.waiting.push(count),
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

  it('run at most auth.kdfConcurrency KDFs at once, so a burst of new credentials takes a bounded amount of memory', async () => {
    // scrypt (N = 2^15, r = 8) holds 32 MiB while it runs. Four users checked at once from four
    // addresses (one address's checks take turns at its throttle counter anyway): with one turn
    // at a time the process's peak rises by one run's memory, with four by four runs'.
    const users = ['burst-a', 'burst-b', 'burst-c', 'burst-d'];
    const passwords: string[] = [];
    for (const name of users) passwords.push(await h.addUser(name, ['127.0.0.0/8']));
    const burst = async (kdfConcurrency: number) => {
      const { auth, counted } = authenticator(60, () => {}, kdfConcurrency);
      const before = residentMiB();
      resetPeakResident();
      const outcomes = await Promise.all(
        users.map((name, i) => auth.authenticate(name, passwords[i] ?? '', parseAddress(`127.0.0.${i + 1}`))),
      );
      return { rise: peakResidentMiB() - before, outcomes, counted };
    };
    const one = await burst(1);
    const four = await burst(4);
    for (const { outcomes, counted } of [one, four]) {
      assert.deepEqual(new Set(outcomes.map((outcome) => outcome.kind)), new Set(['ok']));
      assert.equal(counted.runs, 4);
    }
    assert.equal(Math.max(...one.counted.waiting), 3, 'three checks waited for the one turn');
    assert.deepEqual(four.counted.waiting, [], 'no check waited with four turns');
    assert.ok(one.rise < 56, `one turn: the peak rose by ${one.rise.toFixed(1)} MiB, more than one run's 32`);
    assert.ok(
      four.rise > 72,
      `four turns: the peak rose by ${four.rise.toFixed(1)} MiB (the test sees them)`,
    );
  });

  /** A new API user that has logged in from `home` before (a known address, in the store), and its password. */
  async function knownAt(user: string, home: string): Promise<string> {
    const password = await h.addUser(user, ['127.0.0.0/8']);
    const first = authenticator(60);
    assert.equal((await first.auth.authenticate(user, password, parseAddress(home))).kind, 'ok');
    for (
      let i = 0;
      i < 50 && (await h.services.store.loginThrottle.lastSuccess(user, home)) === undefined;
      i++
    )
      await turn();
    return password;
  }

  /**
   * After a restart (an empty cache), `kdfConcurrency` KDF turns, the dummy hash that unknown names
   * are checked against made already; `check` starts a check and notes under `what` when it settled.
   */
  async function race(kdfConcurrency: number) {
    const { auth } = authenticator(60, () => {}, kdfConcurrency);
    assert.equal(
      (await auth.authenticate('nobody', 'guess', parseAddress('127.0.2.1'))).kind,
      'unauthorized',
    );
    const settled: string[] = [];
    const check = (what: string, name: string, password: string, from: string) =>
      Promise.resolve(auth.authenticate(name, password, parseAddress(from))).then((outcome) => {
        settled.push(what);
        return outcome;
      });
    const flood = (prefix: string, subnet: number) =>
      Array.from({ length: 12 }, (_, i) =>
        check('guess', `${prefix}-${i}`, 'guess', `127.0.${subnet}.${i + 1}`),
      );
    /**
     * The integration's check succeeded after at most `most` of the flood's 12: those that had a
     * KDF turn before it, and those that ran in the other turns during its own.
     */
    const wentFirst = async (
      integration: Promise<AuthOutcome>,
      guesses: Promise<AuthOutcome>[],
      most = 3,
    ) => {
      assert.equal((await integration).kind, 'ok');
      const waitedFor = settled.slice(0, settled.indexOf('integration'));
      assert.ok(
        waitedFor.filter((what) => what === 'guess').length <= most,
        `the integration waited for ${waitedFor.join(', ')}`,
      );
      for (const outcome of await Promise.all(guesses)) assert.equal(outcome.kind, 'unauthorized');
    };
    return { check, flood, wentFirst };
  }

  it("let a user's known address go before a flood of guesses from other addresses waiting for the KDF", async () => {
    const password = await knownAt('timetable', '127.0.0.9');
    // One KDF at a time: 12 guesses at unknown names from 12 addresses queue up first, then the
    // integration's check arrives.
    const { check, flood, wentFirst } = await race(1);
    const guesses = flood('nobody', 1);
    for (let i = 0; i < 20; i++) await turn();
    await wentFirst(check('integration', 'timetable', password, '127.0.0.9'), guesses);
  });

  for (const [holder, name, from] of [
    ['a wrong guess at its user from another address', 'registry', '127.0.3.5'],
    ['an unknown name sent from its own address', 'registry-typo', '127.0.0.19'],
  ] as const) {
    it(`let a user's known address go before the flood also when ${holder} waits for the KDF before it`, async () => {
      // That check holds a counter the integration's check needs (the user's, or the address's)
      // while it waits behind the flood: it is raised to the integration's turn.
      const user = `registry-${name.length}`;
      const password = await knownAt(user, '127.0.0.19');
      const { check, flood, wentFirst } = await race(1);
      const guesses = flood(`flood-${name.length}`, 10 + name.length);
      for (let i = 0; i < 20; i++) await turn();
      const holding = check('holder', name === 'registry' ? user : name, 'wrong', from);
      for (let i = 0; i < 20; i++) await turn();
      await wentFirst(check('integration', user, password, '127.0.0.19'), guesses);
      assert.equal((await holding).kind, 'unauthorized');
    });
  }

  it("let a user's known address go first when the flood came while it waited at its counters, the KDF free on its arrival", async () => {
    const password = await knownAt('registry-late', '127.0.0.29');
    // Two KDF turns: a guess at the user runs in one, so the integration arriving with it finds a
    // turn free and waits at the user's counter; the flood fills the queue while it waits.
    const { check, flood, wentFirst } = await race(2);
    const holding = check('holder', 'registry-late', 'wrong', '127.0.3.29');
    const integration = check('integration', 'registry-late', password, '127.0.0.29');
    for (let i = 0; i < 5; i++) await turn();
    // Before the fix it waited for 11 of the 12; with two turns up to two may run before it and
    // two more beside its own.
    await wentFirst(integration, flood('late', 40), 5);
    assert.equal((await holding).kind, 'unauthorized');
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
    await removeApiUser(h.services.store, h.services.clock, 'leaving');
    assert.equal((await guess).kind, 'unauthorized');
    assert.deepEqual(await waiting, { kind: 'unauthorized', reason: 'unknown user' });
  });

  it('judge a right password that waited for the KDF behind a flood by the credentials when it ran', async () => {
    // The user was read before the check queued for the KDF and never again: a reset, a removal
    // or new ranges while a flood of guesses held the one KDF turn let the old credentials in.
    const changes: [
      what: string,
      change: (name: string) => Promise<unknown>,
      outcome: AuthOutcome['kind'],
    ][] = [
      ['reset', (name) => resetApiUserPassword(h.services.store, name), 'unauthorized'],
      ['removed', (name) => removeApiUser(h.services.store, h.services.clock, name), 'unauthorized'],
      ['ranges', (name) => setApiUserRanges(h.services.store, name, ['10.0.0.0/8']), 'forbidden'],
    ];
    for (const [index, [what, change, outcome]] of changes.entries()) {
      const name = `queued-${what}`;
      const password = await h.addUser(name, ['127.0.0.0/8']);
      // The authenticator's clock: moved on by the poll interval when the credentials change.
      let skew = 0;
      const { auth, counted } = authenticator(60, () => {}, 1, { now: () => Date.now() + skew });
      // The hash that unknown names are checked against, made once first (as after a start).
      await auth.authenticate('nobody', 'guess', parseAddress(`127.0.${70 + index}.1`));
      // Twelve guesses at unknown names from twelve addresses fill the one turn's queue …
      const guesses = Array.from({ length: 12 }, (_, i) =>
        auth.authenticate(`flood-${what}-${i}`, 'guess', parseAddress(`127.0.${50 + index}.${i + 1}`)),
      );
      // … and the right password, from an address the user never used, waits behind them.
      const waiting = auth.authenticate(name, password, parseAddress(`127.0.${60 + index}.1`));
      for (let i = 0; i < 500 && Math.max(0, ...counted.waiting) < 12; i++) await sleep(10);
      assert.equal(Math.max(...counted.waiting), 12, 'the check waits for its KDF turn');
      await change(name);
      // A change is applied within the poll interval (docs/cli.md: within a second), also to a
      // check still queued then: the interval passes while it waits.
      skew += CREDENTIALS_VERSION_POLL_MS;
      assert.equal((await waiting).kind, outcome, what);
      await Promise.all(guesses);
    }
  });
});
