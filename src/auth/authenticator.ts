import { hash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import PQueue from 'p-queue';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Observer } from '../observe/observer.js';
import type { ApiUserRecord, ThrottleKey, ThrottleState } from '../store/api-users.js';
import { isStoreUnavailable, type StoreUnavailableError } from '../store/errors.js';
import type { Store } from '../store/types.js';
import {
  type CompiledRanges,
  compileRanges,
  formatAddress,
  type IpAddress,
  throttleSubject,
} from './addresses.js';
import { isValidApiUserName } from './names.js';
import { generatePassword, hashPassword, verifyPassword } from './password.js';
import {
  blockedUntil,
  blockingUntil,
  KNOWN_ADDRESS_SECONDS,
  KNOWN_ADDRESSES_PER_USER,
  type ThrottlePolicy,
  throttleKeys,
  userCounterBlocks,
} from './throttle.js';

/** What an authentication attempt comes to; the middleware turns it into 200/401/403/429. */
export type AuthOutcome =
  | { kind: 'ok'; user: string }
  | { kind: 'unauthorized'; reason: 'unknown user' | 'wrong password' }
  | { kind: 'forbidden'; user: string }
  /** `knownUser`: the name is an API user's (the log names known users only). */
  | { kind: 'throttled'; retryAfterSeconds: number; knownUser: boolean };

/** What the authenticator works with: the store, the clock, and the `auth` configuration. */
export interface AuthenticatorOptions {
  store: Store;
  clock: Clock;
  /** For failures of background writes; outcomes are logged by the caller. */
  logger: Logger;
  /** How long a verified credential is remembered; 0 turns the cache off. */
  credentialCacheTtlSeconds: number;
  credentialCacheMaxEntries: number;
  /**
   * Most KDF runs at once (scrypt takes 32 MiB while it runs); the checks beyond them wait their
   * turn: those from a known address of their user first, then the others, first come, first
   * served among each.
   */
  kdfConcurrency: number;
  throttle: ThrottlePolicy;
  /** Told about every password key derivation and about the checks waiting for one (metrics). */
  observer?: Pick<Observer, 'kdfRun' | 'kdfWaiting' | 'loginBlock'>;
}

interface VerifiedCredential {
  name: string;
  ranges: CompiledRanges;
}

/** Last login is written at most this often per user. */
const LAST_LOGIN_INTERVAL_MS = 60_000;
/** Expired throttle counters are deleted at most this often. */
const PRUNE_INTERVAL_MS = 10 * 60_000;
/** A known address's last success is written at most this often per (user, address). */
const KNOWN_ADDRESS_REFRESH_MS = 60 * 60_000;
/** The KDF turn of a check from a known address of its user: before the others (see `kdf`). */
const KNOWN_ADDRESS_TURN = 1;
/** The most checks one known address's check raises to its KDF turn (see `boost`). */
const BOOST_LIMIT = 100;
/**
 * After the store could not count a failed login of an API user (it takes no writes: a read-only
 * standby or file, a full disk; or it is busy past its timeout, locked, unreachable), that user's
 * checks past the cache are answered with the store's refusal (503) for this long, without a KDF
 * run (see `checkPassword`): otherwise wrong passwords would get 503 and the right one 200, an
 * answer to each guess without a limit while the failures go uncounted.
 */
const UNCOUNTED_FAILURES_HOLD_MS = 5_000;
/**
 * The store's credentials version is read at most this often on the cached path, so a cached
 * credential check costs no store query; a credential change takes effect within this time.
 */
export const CREDENTIALS_VERSION_POLL_MS = 1_000;

/**
 * How long a request whose credential is cached waits for the version read that its poll
 * starts: usually the read answers within a millisecond and the request is judged by it; a store
 * that answers slowly (frozen, a table lock) or not at all is met as an unreachable one is, the
 * cache answering meanwhile, instead of every poll holding a request for the store's timeouts.
 */
export const CACHED_VERSION_WAIT_MS = 100;

/**
 * One check past the cache, as its counters and the KDF queue see it: the checks it waits for at
 * its counters (see `exclusive`), and its KDF turn's priority, raised when a check from a known
 * address waits for it (see `boost`).
 */
interface PendingCheck {
  /** Its KDF task's id in the queue. */
  readonly id: string;
  priority: number;
  /** Whether its KDF task waits in the queue now (its priority can be raised there). */
  queued: boolean;
  /** The checks before it at its counters, while it waits for them. */
  waitsFor: readonly PendingCheck[];
  /** Settles once it releases its counters. */
  done: Promise<void>;
}

/** What the store says about an attempt's name and counters, and whether they refuse it now. */
interface ThrottleVerdict {
  user: ApiUserRecord | undefined;
  keys: ThrottleKey[];
  states: ThrottleState[];
  /** The user's counter blocks, but the address is a known one of the user's: judged without it. */
  exempt: boolean;
  throttled: AuthOutcome | undefined;
}

/**
 * Checks API-user credentials (SPEC 4): throttle state first (a throttled attempt costs no KDF
 * and reveals nothing), then the scrypt hash, then the source address (only after the password
 * checked out, so ranges cannot be probed). While the user's own counter blocks, a known address
 * (one the user logged in from within the last 30 days, inside its current ranges) is judged by
 * its (user, address) counter only, so failures spread over other addresses cannot lock out the
 * integration; such a success does not reset the user's counter. Verified credentials are cached
 * under a SHA-256 of (name, password) keyed by a process-random prefix; the whole cache is dropped
 * when the store's credentials version moves, which a CLI command in another process also causes. The
 * version is read at most once per CREDENTIALS_VERSION_POLL_MS (by the injected clock) while the
 * cache answers, and always before a credential is verified against the store.
 */
export class Authenticator {
  private readonly cache: LRUCache<string, VerifiedCredential> | undefined;
  private readonly cacheKeySecret = randomBytes(32).toString('hex');
  /** The last check to hold each throttle counter (see `exclusive`). */
  private readonly checking = new Map<string, PendingCheck>();
  private checkSequence = 0;
  /** Checks past the cache, by credentials and address (see `verifyShared`). */
  private readonly sharedChecks = new Map<string, Promise<AuthOutcome>>();
  private readonly lastLoginWritten = new Map<string, number>();
  /** When this process last wrote each known (user, address) pair, so busy pairs write once an hour. */
  private readonly knownAddressWritten = new LRUCache<string, number>({ max: 10_000 });
  /** The KDF runs' turns (see `kdf`). */
  private readonly kdfTurns: PQueue;
  private kdfWaitingTold = 0;
  private cacheVersion: number | undefined;
  private versionReadAt = 0;
  /** The version read that cached credentials' checks wait for (see `pollVersion`), one at a time. */
  private polling: Promise<number> | undefined;
  private dummyHash: Promise<string> | undefined;
  /** Per API user: the store's refusal to count a failed login of theirs, and until when it holds (see `checkPassword`). */
  private readonly uncountedFailures = new Map<string, { until: number; error: StoreUnavailableError }>();
  private lastPrune = 0;

  constructor(private readonly options: AuthenticatorOptions) {
    this.kdfTurns = new PQueue({ concurrency: options.kdfConcurrency });
    this.cache =
      options.credentialCacheTtlSeconds > 0
        ? new LRUCache<string, VerifiedCredential>({
            max: options.credentialCacheMaxEntries,
            ttl: options.credentialCacheTtlSeconds * 1000,
            // The injected clock decides expiry, so tests can move time without waiting.
            perf: { now: () => options.clock.now() },
            ttlResolution: 0,
            ttlAutopurge: false,
          })
        : undefined;
  }

  /**
   * Authenticates one request's Basic credentials coming from `address` (undefined: unknown): the
   * outcome at once when the credential cache has them and the credentials version is fresh (no
   * promise to wait for), else a promise (the version, the store, the KDF).
   */
  authenticate(
    name: string,
    password: string,
    address: IpAddress | undefined,
  ): AuthOutcome | Promise<AuthOutcome> {
    const key = this.cacheKey(name, password);
    if (this.cache && this.versionIsFresh()) {
      const cached = this.cache.get(key);
      if (cached) return this.admit(cached, address);
    }
    return this.verifyShared(key, name, password, address);
  }

  /**
   * `authenticate` past the cache. The same credentials from the same address, checked at the same
   * time, share one check: they would get the same answer (a repeated guess tells nothing new), and
   * with the credential cache off (`credentialCacheTtlSeconds: 0`) a busy integration's burst
   * would otherwise queue up for one KDF run after the other.
   */
  private verifyShared(
    key: string,
    name: string,
    password: string,
    address: IpAddress | undefined,
  ): Promise<AuthOutcome> {
    const id = `${key}\0${address ? formatAddress(address) : ''}`;
    const running = this.sharedChecks.get(id);
    if (running) return running;
    const check = this.verify(key, name, password, address).finally(() => this.sharedChecks.delete(id));
    this.sharedChecks.set(id, check);
    return check;
  }

  /**
   * Reads the credentials version first, then the cache again; answers 429 at once when a counter
   * blocks; otherwise waits its turn at its counters (`exclusive`) and judges, verifies and
   * counts with what the store says then.
   */
  private async verify(
    key: string,
    name: string,
    password: string,
    address: IpAddress | undefined,
  ): Promise<AuthOutcome> {
    let version: number;
    const cachedBefore = this.cache?.get(key);
    try {
      if (cachedBefore) {
        const polled = await this.pollVersion();
        // The store is slow to answer: the cache answers this one, as when the store is down.
        if (polled === undefined) return this.admit(cachedBefore, address);
        version = polled;
      } else version = await this.syncVersion();
    } catch (error) {
      // The store is unreachable: the cache goes on answering this one too, as it answers every
      // other request until the next version read (its TTL still bounds how long). Answering 503
      // here gave a cached integration one refusal per poll interval and 200 for the rest.
      if (cachedBefore && isStoreUnavailable(error)) return this.admit(cachedBefore, address);
      throw error;
    }
    const cached = this.cache?.get(key);
    if (cached) return this.admit(cached, address);
    // A blocked counter is answered without queueing: guesses refused with 429 never wait for,
    // nor hold up, the checks that may still pass.
    const early = await this.throttleVerdict(name, address);
    if (early.throttled) return early.throttled;
    // A check from a known address of its user goes first to the KDF (see `kdf`), and so do the
    // checks it waits for at its counters (see `boost`). Looked up on arrival, whether the KDF is
    // busy now or not: a flood may fill its queue while the check waits at its counters, behind a
    // check it must then move up. One store read per check past the cache, beside a KDF run.
    const known =
      early.user !== undefined &&
      (early.exempt || (await this.isKnownAddress(early.user, address, this.options.clock.now())));
    const turn = await this.exclusive(name, address, known ? KNOWN_ADDRESS_TURN : 0);
    try {
      // What may have changed while this check waited: the credentials (a removed user, a new
      // password or ranges) and the cache (a check of the same credential from another address
      // went first). The counters are read again in any case: a check may have finished between
      // the first read and this turn.
      let current = version;
      if (turn.waited) {
        current = await this.syncVersion();
        const verifiedMeanwhile = this.cache?.get(key);
        if (verifiedMeanwhile) return this.admit(verifiedMeanwhile, address);
      }
      const verdict = await this.throttleVerdict(name, address);
      if (verdict.throttled) return verdict.throttled;
      // The user's counter may have come to block while the check waited: judged as known then.
      if (verdict.exempt) turn.check.priority = KNOWN_ADDRESS_TURN;
      return await this.checkPassword(key, password, address, verdict, current, turn.check);
    } finally {
      turn.release();
    }
  }

  /**
   * Waits for the checks of the same counters that came before (`waited`: there were some), and
   * holds the counters until released: one check per counter at a time, each judged by the
   * failures of those before it. Without this, guesses sent at once all read the counters before
   * any failure was recorded, and every one ran the KDF (60 parallel guesses at one user got 60
   * answers past the 5 free failures, 200 at unknown names cost some 20 s of scrypt). First come,
   * first served: each check waits only
   * for the last one before it at each of its counters, so a release wakes its successors alone,
   * and no two checks wait for each other. The user's, the pair's and the address's counter are
   * taken whether the name exists or not, so a user removed or added while a check waited changes
   * nothing here. Per process: replicas each allow as much again. A check from a known address
   * (`priority` KNOWN_ADDRESS_TURN) raises the checks it waits for to its own KDF priority (see
   * `boost`): otherwise one guess at its user, or an unknown name sent from its address, queued
   * behind a flood for the KDF while holding a counter, would hold it up as long as the flood.
   */
  private async exclusive(
    name: string,
    address: IpAddress | undefined,
    priority: number,
  ): Promise<{ waited: boolean; check: PendingCheck; release: () => void }> {
    const subject = throttleSubject(address);
    const ids = [`user\0${name}`, `pair\0${name}\0${subject}`, `address\0${subject}`];
    const before = [...new Set(ids.flatMap((id) => this.checking.get(id) ?? []))];
    let release: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const check: PendingCheck = {
      // Prefixed: p-queue numbers the tasks added without an id (the dummy hash) itself.
      id: `check ${++this.checkSequence}`,
      priority,
      queued: false,
      waitsFor: before,
      done,
    };
    for (const id of ids) this.checking.set(id, check);
    if (priority >= KNOWN_ADDRESS_TURN) for (const earlier of before) this.boost(earlier);
    if (before.length > 0) await Promise.all(before.map((earlier) => earlier.done));
    check.waitsFor = [];
    return {
      waited: before.length > 0,
      check,
      release: () => {
        for (const id of ids) if (this.checking.get(id) === check) this.checking.delete(id);
        release();
      },
    };
  }

  /**
   * Raises a check, and the checks it waits for in turn (any of their counters), to a known
   * address's KDF priority: the check from the known address cannot take its turn before them.
   * So a flood whose checks chain through the counters of the known address's user and address can
   * have part of it moved ahead of the known addresses of other users that come later: each raised
   * check runs one KDF, within the free failures of its counters (the checks after it at a blocked
   * counter get 429 without one), and at most BOOST_LIMIT are raised per known check, so that the
   * queue's re-sorting (each `setPriority` walks the queue) holds the event loop only briefly.
   */
  private boost(first: PendingCheck): void {
    // A loop, not recursion: a burst of guesses at one user waits in one long chain.
    const pending = [first];
    let raised = 0;
    for (let check = pending.pop(); check !== undefined && raised < BOOST_LIMIT; check = pending.pop()) {
      if (check.priority >= KNOWN_ADDRESS_TURN) continue;
      raised += 1;
      check.priority = KNOWN_ADDRESS_TURN;
      if (check.queued) {
        try {
          this.kdfTurns.setPriority(check.id, KNOWN_ADDRESS_TURN);
        } catch {
          // Its turn came meanwhile: it runs already.
        }
      }
      pending.push(...check.waitsFor);
    }
  }

  /** The user (if the name is one), its counters and whether they block this attempt now. */
  private async throttleVerdict(name: string, address: IpAddress | undefined): Promise<ThrottleVerdict> {
    const { store, clock } = this.options;
    const user = isValidApiUserName(name) ? await store.apiUsers.get(name) : undefined;
    const keys = throttleKeys(name, throttleSubject(address), user !== undefined);
    const now = clock.now();
    const states = await store.loginThrottle.get(keys);
    // The known-address exemption matters (and costs a look-up) only while the user's counter blocks.
    const exempt =
      user !== undefined && userCounterBlocks(states, now) && (await this.isKnownAddress(user, address, now));
    const until = blockingUntil(exempt ? states.filter((state) => state.scope !== 'user') : states, now);
    const throttled: AuthOutcome | undefined =
      until === undefined
        ? undefined
        : {
            kind: 'throttled',
            retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)),
            knownUser: user !== undefined,
          };
    return { user, keys, states, exempt, throttled };
  }

  /** The KDF, then the counters: a failure counts on every counter, a success resets them. */
  private async checkPassword(
    key: string,
    password: string,
    address: IpAddress | undefined,
    { user, keys, states, exempt }: ThrottleVerdict,
    version: number,
    check: PendingCheck,
  ): Promise<AuthOutcome> {
    const { store, clock, throttle } = this.options;
    // Fail closed while this user's failures cannot be counted: a store that takes reads but no
    // writes would otherwise judge guesses without a limit, each wrong one answered 503 and the
    // right one 200. Before the KDF, so the answer takes as long whatever the password.
    if (user) this.refuseWhileFailuresUncounted(user.name);
    const valid = user
      ? await this.verifyStored(password, user.passwordHash, check)
      : await this.verifyDummy(password, check);
    if (user && valid) {
      // The KDF's turn may have come long after the user was read (a flood of checks queues for
      // it): a password reset, a removal or new ranges meanwhile decide, not the record the
      // password was checked against, as they would for a cached credential (the version read
      // within the poll interval, as the cache's). Not counted as a failure: the password was
      // right when sent.
      const latest = this.versionIsFresh() ? (this.cacheVersion ?? version) : await this.syncVersion();
      if (latest !== version) {
        const fresh = await store.apiUsers.get(user.name);
        if (fresh?.passwordHash !== user.passwordHash)
          return { kind: 'unauthorized', reason: fresh ? 'wrong password' : 'unknown user' };
        return this.admitVerified(key, fresh, latest, exempt, keys, states, address);
      }
    }
    if (!user || !valid) {
      const failedAt = clock.now();
      const forgetBefore = failedAt - throttle.forgetAfterSeconds * 1000;
      for (const throttleKey of keys) {
        let state: ThrottleState;
        try {
          state = await store.loginThrottle.recordFailure(throttleKey, failedAt, forgetBefore, (failures) =>
            blockedUntil(throttle, throttleKey, failures, failedAt),
          );
        } catch (error) {
          if (user && isStoreUnavailable(error))
            this.uncountedFailures.set(user.name, { until: clock.now() + UNCOUNTED_FAILURES_HOLD_MS, error });
          throw error;
        }
        if (state.blockedUntil > failedAt) this.options.observer?.loginBlock?.(throttleKey.scope);
      }
      await this.pruneNow(failedAt);
      return { kind: 'unauthorized', reason: user ? 'wrong password' : 'unknown user' };
    }

    return this.admitVerified(key, user, version, exempt, keys, states, address);
  }

  /** A verified password of `user` as of credentials `version`: counters reset, cached, admitted by its ranges. */
  private async admitVerified(
    key: string,
    user: ApiUserRecord,
    version: number,
    exempt: boolean,
    keys: readonly ThrottleKey[],
    states: readonly ThrottleState[],
    address: IpAddress | undefined,
  ): Promise<AuthOutcome> {
    // A success resets its counters, but not a user counter it got past only as a known address:
    // those failures came from elsewhere, and wiping them would hand the attacker fresh free ones.
    if (states.length > 0)
      await this.resetCounters(
        user.name,
        exempt ? keys.filter((throttleKey) => throttleKey.scope !== 'user') : keys,
      );
    const verified: VerifiedCredential = { name: user.name, ranges: compileRanges(user.ranges) };
    // A credential change since `version` must not leave the old answer in the cache.
    if (this.cache && version === this.cacheVersion) this.cache.set(key, verified);
    if (!this.lastLoginWritten.has(user.name)) this.lastLoginWritten.set(user.name, user.lastLoginAt ?? 0);
    return this.admit(verified, address);
  }

  /**
   * Resets the counters of a successful login. A store that cannot (busy past its timeout, read-only,
   * unreachable) does not turn the right password away: the counters stay until they expire
   * (`auth.throttle.forgetAfterSeconds`), and that is logged.
   */
  private async resetCounters(name: string, keys: readonly ThrottleKey[]): Promise<void> {
    try {
      await this.options.store.loginThrottle.reset(keys);
    } catch (error) {
      if (!isStoreUnavailable(error)) throw error;
      this.options.logger.warn(
        { err: error, apiUser: name },
        'could not reset the failed-login counters after a successful login',
      );
    }
  }

  private admit(verified: VerifiedCredential, address: IpAddress | undefined): AuthOutcome {
    if (!verified.ranges.contains(address)) {
      return { kind: 'forbidden', user: verified.name };
    }
    this.recordLogin(verified.name);
    if (address) this.rememberAddress(verified.name, throttleSubject(address));
    return { kind: 'ok', user: verified.name };
  }

  /** Whether `address` is a known address of `user`: successful within 30 days, inside its ranges. */
  private async isKnownAddress(
    user: ApiUserRecord,
    address: IpAddress | undefined,
    now: number,
  ): Promise<boolean> {
    if (!address || !compileRanges(user.ranges).contains(address)) return false;
    const at = await this.options.store.loginThrottle.lastSuccess(user.name, throttleSubject(address));
    return at !== undefined && at > now - KNOWN_ADDRESS_SECONDS * 1000;
  }

  /** Write-behind: records a known address, at most once an hour per (user, address) and process. */
  private rememberAddress(name: string, subject: string): void {
    const now = this.options.clock.now();
    const key = `${name}\0${subject}`;
    const written = this.knownAddressWritten.get(key);
    if (written !== undefined && now - written < KNOWN_ADDRESS_REFRESH_MS) return;
    this.knownAddressWritten.set(key, now);
    this.options.store.loginThrottle
      .recordSuccess(name, subject, now, now - KNOWN_ADDRESS_SECONDS * 1000, KNOWN_ADDRESSES_PER_USER)
      .catch((error: unknown) => {
        this.knownAddressWritten.delete(key);
        this.options.logger.warn({ err: error, apiUser: name }, 'could not record a known address');
      });
  }

  /** Write-behind: at most one last-login write per user and minute, not awaited by the request. */
  private recordLogin(name: string): void {
    const now = this.options.clock.now();
    if (now - (this.lastLoginWritten.get(name) ?? 0) < LAST_LOGIN_INTERVAL_MS) return;
    this.lastLoginWritten.set(name, now);
    this.options.store.apiUsers.recordLogin(name, now).catch((error: unknown) => {
      this.options.logger.warn({ err: error, apiUser: name }, 'could not record last login');
    });
  }

  /**
   * Throws the store's refusal to count a failed login of `name` while it holds
   * (UNCOUNTED_FAILURES_HOLD_MS after it): every check of that user past the cache is answered
   * with it then, the right password like the wrong ones, so a store that takes no writes judges
   * at most one guess at a user per hold and process instead of every one. Other users, and
   * credentials the cache answers, are not affected.
   */
  private refuseWhileFailuresUncounted(name: string): void {
    const uncounted = this.uncountedFailures.get(name);
    if (uncounted === undefined) return;
    if (this.options.clock.now() < uncounted.until) throw uncounted.error;
    this.uncountedFailures.delete(name);
  }

  /** Whether the credentials version was read recently enough to trust the cache without a query. */
  private versionIsFresh(): boolean {
    const age = this.options.clock.now() - this.versionReadAt;
    return this.cacheVersion !== undefined && age >= 0 && age < CREDENTIALS_VERSION_POLL_MS;
  }

  /**
   * The credentials version for a check whose credential is cached: one read at a time, waited
   * for at most CACHED_VERSION_WAIT_MS (undefined then; the read goes on, and applies when it
   * answers). A read under way answers the checks that come meanwhile too: a change made after it
   * started is seen at the next poll, as one made between two polls is.
   */
  private async pollVersion(): Promise<number | undefined> {
    if (this.polling === undefined) {
      const read = this.syncVersion().finally(() => {
        if (this.polling === read) this.polling = undefined;
      });
      // Failures are the waiting checks' to handle; one that came too late is nobody's.
      read.catch(() => {});
      this.polling = read;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), CACHED_VERSION_WAIT_MS);
    });
    try {
      const version = await Promise.race([this.polling, late]);
      // Asked again in a poll interval, not by every request meanwhile, each waiting its 100 ms.
      if (version === undefined) this.versionReadAt = this.options.clock.now();
      return version;
    } finally {
      clearTimeout(timer);
    }
  }

  private async syncVersion(): Promise<number> {
    this.versionReadAt = this.options.clock.now();
    const version = await this.options.store.apiUsers.credentialsVersion();
    if (version !== this.cacheVersion) {
      this.cache?.clear();
      this.lastLoginWritten.clear();
      this.knownAddressWritten.clear();
      this.cacheVersion = version;
    }
    return version;
  }

  /** Checks a password against its stored hash (one KDF run, in `check`'s turn). */
  private verifyStored(password: string, hash: string, check: PendingCheck): Promise<boolean> {
    return this.kdf(() => verifyPassword(password, hash), check);
  }

  /** Runs the KDF for unknown names too, so the answer time does not tell which names exist. */
  private async verifyDummy(password: string, check: PendingCheck): Promise<false> {
    this.dummyHash ??= this.kdf(() => hashPassword(generatePassword()), undefined);
    const dummy = await this.dummyHash;
    await this.kdf(() => verifyPassword(password, dummy), check);
    return false;
  }

  /**
   * One KDF run in its turn: at most `kdfConcurrency` at once, so a burst of checks past the
   * cache (a restart, many integrations, a flood of guesses from many addresses) takes a bounded
   * amount of memory and leaves the rest of libuv's thread pool (file system, DNS) to the others.
   * A check of a user from one of its known addresses (`priority` KNOWN_ADDRESS_TURN) goes before
   * every other waiting check, first come, first served among each kind: a flood of guesses from
   * addresses it did. `check`: the credential check the run is for, whose priority may still be
   * raised while it waits (see `boost`); none for the dummy hash made once, which is not counted.
   */
  private kdf<T>(run: () => Promise<T>, check: PendingCheck | undefined): Promise<T> {
    if (check) check.queued = true;
    const turn = this.kdfTurns.add(
      () => {
        if (check) check.queued = false;
        this.tellKdfWaiting();
        if (check) this.options.observer?.kdfRun?.();
        return run();
      },
      check ? { priority: check.priority, id: check.id } : { priority: 0 },
    );
    this.tellKdfWaiting();
    return turn;
  }

  /** Tells the observer how many checks wait for a KDF turn, when that changed. */
  private tellKdfWaiting(): void {
    const waiting = this.kdfTurns.size;
    if (waiting === this.kdfWaitingTold) return;
    this.kdfWaitingTold = waiting;
    this.options.observer?.kdfWaiting?.(waiting);
  }

  private cacheKey(name: string, password: string): string {
    // A keyed one-shot SHA-256 (the process-random key first): no password is kept, nor a digest
    // that could be looked up in a table; five times cheaper than an HMAC object per request.
    return hash('sha256', `${this.cacheKeySecret}\0${name}\0${password}`, 'base64url');
  }

  private async pruneNow(now: number): Promise<void> {
    if (now - this.lastPrune < PRUNE_INTERVAL_MS) return;
    this.lastPrune = now;
    await this.options.store.loginThrottle.prune(now - this.options.throttle.forgetAfterSeconds * 1000, now);
  }
}
