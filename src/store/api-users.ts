/**
 * Storage-neutral repositories of the API-user authentication layer (SPEC 4). Times are
 * milliseconds since the epoch. Implementations: SQLite (`sqlite/api-users.ts`), PostgreSQL
 * (`postgres/api-users.ts`).
 */

/** One API user as stored. */
export interface ApiUserRecord {
  name: string;
  /** Self-describing KDF hash (`scrypt$N$r$p$salt$hash`), see src/auth/password.ts. */
  passwordHash: string;
  /** Normalised CIDR ranges the user may call from. */
  ranges: string[];
  createdAt: number;
  lastLoginAt: number | null;
}

/** API users. Every change of a password, range or user bumps the credentials version. */
export interface ApiUserRepository {
  get(name: string): Promise<ApiUserRecord | undefined>;
  /** Every API user, ordered by name. */
  list(): Promise<ApiUserRecord[]>;
  /**
   * Inserts a new user; false (and nothing written) when the name is taken. A user created clears
   * the record of an earlier removal under its name.
   */
  create(user: Omit<ApiUserRecord, 'lastLoginAt'>): Promise<boolean>;
  /**
   * Deletes a user, its throttle state and its known addresses, and records that it was removed
   * (`at`), so that `store copy` does not write it back from an older store; false (and nothing
   * recorded) when there was no such user.
   */
  remove(name: string, at: number): Promise<boolean>;
  /** When each API user removed from this store (and not created again since) was removed, by name. */
  removals(): Promise<Map<string, number>>;
  /**
   * Records removals made in another store (`store copy`), for names this store has no user of;
   * a name recorded already keeps the later time. Not a credential change.
   */
  recordRemovals(removals: ReadonlyMap<string, number>): Promise<void>;
  /** Replaces the password hash; false when there is no such user. */
  setPasswordHash(name: string, passwordHash: string): Promise<boolean>;
  /** Replaces the ranges; false when there is no such user. */
  setRanges(name: string, ranges: string[]): Promise<boolean>;
  /** Records a login time (never moves it backwards). Not a credential change. */
  recordLogin(name: string, at: number): Promise<void>;
  /**
   * A number that changes whenever any API user's credentials or ranges change, by this process
   * or another one sharing the store. Called on every authenticated request, so it must be cheap.
   */
  credentialsVersion(): Promise<number>;
}

/** What a throttle counter is about: one user name, one (user name, address) pair, or one address. */
export type ThrottleScope = 'user' | 'pair' | 'address';

/** Identifies one counter; unused parts are `''` (e.g. `address` for scope `user`). */
export interface ThrottleKey {
  scope: ThrottleScope;
  userName: string;
  address: string;
}

/** One counter of failed logins. */
export interface ThrottleState extends ThrottleKey {
  /** Consecutive failures since the counter was last reset or forgotten. */
  failures: number;
  lastFailureAt: number;
  /** Attempts are refused (429) until this time; 0 when not blocked. */
  blockedUntil: number;
}

/** An address an API user logged in from successfully (see `recordSuccess`). */
export interface KnownAddress {
  address: string;
  lastSuccessAt: number;
}

/** Failed-login counters, kept in the store so throttling survives restarts. */
export interface LoginThrottleRepository {
  /** The counters that exist among `keys`. */
  get(keys: readonly ThrottleKey[]): Promise<ThrottleState[]>;
  /**
   * Atomically counts one failure: a counter whose last failure is older than `forgetBefore`
   * starts again at 1. `blockedUntil(failures)` gives the new block end (0 for none).
   */
  recordFailure(
    key: ThrottleKey,
    at: number,
    forgetBefore: number,
    blockedUntil: (failures: number) => number,
  ): Promise<ThrottleState>;
  /** Removes the given counters (a successful login). */
  reset(keys: readonly ThrottleKey[]): Promise<void>;
  /** Removes every counter naming this user (scopes `user` and `pair`). */
  resetUser(userName: string): Promise<void>;
  /** Every counter naming this user (scopes `user` and `pair`). */
  forUser(userName: string): Promise<ThrottleState[]>;
  /** Deletes counters whose last failure is older than `before` and that block nothing any more. */
  prune(before: number, now: number): Promise<number>;
  /**
   * Remembers a successful login of `userName` from `address` (a throttle subject) at `at`, and
   * forgets this user's addresses last successful before `forgetBefore` or beyond the newest `keep`.
   * Nothing is remembered for a name that is no API user (any more): a success answered from the
   * credential cache just after `apiuser remove` would otherwise leave an address that a new user
   * of the same name inherits.
   */
  recordSuccess(
    userName: string,
    address: string,
    at: number,
    forgetBefore: number,
    keep: number,
  ): Promise<void>;
  /** When `userName` last logged in successfully from `address` (a throttle subject); undefined: never. */
  lastSuccess(userName: string, address: string): Promise<number | undefined>;
  /** Every address (throttle subject) `userName` logged in from, with its last success, newest first. */
  knownAddresses(userName: string): Promise<KnownAddress[]>;
}
