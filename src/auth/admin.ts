import type { Clock } from '../lib/clock.js';
import type { ThrottleState } from '../store/api-users.js';
import type { Store } from '../store/types.js';
import { normalizeRange } from './addresses.js';
import { API_USER_NAME, isValidApiUserName } from './names.js';
import { generatePassword, hashPassword } from './password.js';
import { KNOWN_ADDRESS_SECONDS, type ThrottlePolicy } from './throttle.js';

/** A request to manage API users that cannot be carried out; nothing was changed. */
export class ApiUserAdminError extends Error {
  override readonly name = 'ApiUserAdminError';
  constructor(
    readonly code: 'invalid_name' | 'invalid_range' | 'no_ranges' | 'duplicate' | 'unknown',
    message: string,
  ) {
    super(message);
  }
}

/** A user with a freshly generated password: the only moment the password is known. */
export interface ApiUserCredentials {
  name: string;
  password: string;
  ranges: string[];
}

/** An API user as `apiuser list` shows it. */
export interface ApiUserSummary {
  name: string;
  ranges: string[];
  created: string;
  lastLogin: string | null;
  /** Whether logins as this user are refused right now (from some address or everywhere). */
  throttled: boolean;
  /** When the longest current block ends. */
  throttledUntil: string | null;
  /** Failed logins counted against the user (all addresses) since its last success. */
  recentFailures: number;
  /**
   * The counters blocking logins now: `user` blocks every address but the known ones, `address`
   * blocks this user from that one address (an IPv6 /64 is written as its network).
   */
  blocks: { scope: 'user' | 'address'; address: string | null; until: string; failures: number }[];
  /**
   * Addresses the user logged in from within the last 30 days, newest first: inside its current
   * ranges they get past a `user` block.
   */
  knownAddresses: { address: string; lastSuccess: string }[];
}

/** Validates and canonicalises ranges; throws ApiUserAdminError naming every bad one. */
export function normalizeRanges(ranges: readonly string[]): string[] {
  if (ranges.length === 0) {
    throw new ApiUserAdminError(
      'no_ranges',
      'at least one --range CIDR is required (e.g. --range 10.0.0.0/8)',
    );
  }
  const problems: string[] = [];
  const normalized: string[] = [];
  for (const range of ranges) {
    try {
      const value = normalizeRange(range);
      if (!normalized.includes(value)) normalized.push(value);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  if (problems.length > 0) throw new ApiUserAdminError('invalid_range', problems.join('; '));
  return normalized;
}

function checkName(name: string): void {
  if (!isValidApiUserName(name)) {
    throw new ApiUserAdminError(
      'invalid_name',
      `invalid API user name ${JSON.stringify(name)}: use 1-64 letters, digits, '.', '_' or '-' (${API_USER_NAME.source})`,
    );
  }
}

/** Creates an API user with a generated password. */
export async function addApiUser(
  store: Store,
  clock: Clock,
  name: string,
  ranges: readonly string[],
): Promise<ApiUserCredentials> {
  checkName(name);
  const normalized = normalizeRanges(ranges);
  if (await store.apiUsers.get(name))
    throw new ApiUserAdminError('duplicate', `API user ${name} already exists`);
  const password = generatePassword();
  const created = await store.apiUsers.create({
    name,
    passwordHash: await hashPassword(password),
    ranges: normalized,
    createdAt: clock.now(),
  });
  if (!created) throw new ApiUserAdminError('duplicate', `API user ${name} already exists`);
  return { name, password, ranges: normalized };
}

/**
 * Removes an API user; its cached credentials stop working at once, in every process. The store
 * records the removal, so that `store copy` from an older store does not bring it back.
 */
export async function removeApiUser(store: Store, clock: Clock, name: string): Promise<void> {
  checkName(name);
  if (!(await store.apiUsers.remove(name, clock.now()))) throw unknownUser(name);
}

/** Gives an API user a new generated password and clears its failed-login counters. */
export async function resetApiUserPassword(store: Store, name: string): Promise<ApiUserCredentials> {
  checkName(name);
  const user = await store.apiUsers.get(name);
  if (!user) throw unknownUser(name);
  const password = generatePassword();
  if (!(await store.apiUsers.setPasswordHash(name, await hashPassword(password)))) throw unknownUser(name);
  await store.loginThrottle.resetUser(name);
  return { name, password, ranges: user.ranges };
}

/**
 * Clears an API user's failed-login counters (per user and per user and address), lifting its
 * blocks at once, in every process sharing the store; known addresses stay. Returns how many
 * counters there were.
 */
export async function unblockApiUser(store: Store, name: string): Promise<number> {
  checkName(name);
  if (!(await store.apiUsers.get(name))) throw unknownUser(name);
  const counters = (await store.loginThrottle.forUser(name)).length;
  await store.loginThrottle.resetUser(name);
  return counters;
}

/** Replaces an API user's ranges. */
export async function setApiUserRanges(
  store: Store,
  name: string,
  ranges: readonly string[],
): Promise<string[]> {
  checkName(name);
  const normalized = normalizeRanges(ranges);
  if (!(await store.apiUsers.setRanges(name, normalized))) throw unknownUser(name);
  return normalized;
}

/**
 * Every API user with its login and throttle state at `clock.now()`. A counter whose last failure
 * is older than `forgetAfterSeconds` counts no failures, unless it still blocks: the server starts
 * it from zero at the next one (the row itself is pruned only now and then).
 */
export async function listApiUsers(
  store: Store,
  clock: Clock,
  { forgetAfterSeconds }: Pick<ThrottlePolicy, 'forgetAfterSeconds'>,
): Promise<ApiUserSummary[]> {
  const now = clock.now();
  const forgetBefore = now - forgetAfterSeconds * 1000;
  const users = await store.apiUsers.list();
  const summaries: ApiUserSummary[] = [];
  for (const user of users) {
    const states = await store.loginThrottle.forUser(user.name);
    const until = Math.max(0, ...states.map((state: ThrottleState) => state.blockedUntil));
    const knownSince = now - KNOWN_ADDRESS_SECONDS * 1000;
    const known = (await store.loginThrottle.knownAddresses(user.name)).filter(
      (entry) => entry.lastSuccessAt > knownSince,
    );
    summaries.push({
      name: user.name,
      ranges: user.ranges,
      created: new Date(user.createdAt).toISOString(),
      lastLogin: user.lastLoginAt === null ? null : new Date(user.lastLoginAt).toISOString(),
      throttled: until > now,
      throttledUntil: until > now ? new Date(until).toISOString() : null,
      recentFailures: recentFailures(
        states.find((state) => state.scope === 'user'),
        forgetBefore,
        now,
      ),
      blocks: states
        .filter((state) => state.blockedUntil > now)
        .map((state) => ({
          scope: state.scope === 'user' ? 'user' : 'address',
          address: state.scope === 'user' ? null : state.address,
          until: new Date(state.blockedUntil).toISOString(),
          failures: state.failures,
        })),
      knownAddresses: known.map((entry) => ({
        address: entry.address,
        lastSuccess: new Date(entry.lastSuccessAt).toISOString(),
      })),
    });
  }
  return summaries;
}

/**
 * The failures a counter holds now: none once its last one is older than `forgetBefore`, unless
 * it still blocks (a block longer than the forget time outlasts it, and its failures with it).
 */
function recentFailures(state: ThrottleState | undefined, forgetBefore: number, now: number): number {
  if (state === undefined) return 0;
  return state.lastFailureAt >= forgetBefore || state.blockedUntil > now ? state.failures : 0;
}

/** The sandbox-mode demo user (SPEC 2). */
export const DEMO_USER = { name: 'demo', ranges: ['127.0.0.0/8', '::1/128'] } as const;

/**
 * Creates the API user `demo` (loopback only) when it does not exist; returns its password when
 * it was created now. Only sandbox mode calls this; production never does.
 */
export async function ensureDemoUser(store: Store, clock: Clock): Promise<ApiUserCredentials | undefined> {
  if (await store.apiUsers.get(DEMO_USER.name)) return undefined;
  try {
    return await addApiUser(store, clock, DEMO_USER.name, DEMO_USER.ranges);
  } catch (error) {
    // Another process created it in the meantime: fine, it exists.
    if (error instanceof ApiUserAdminError && error.code === 'duplicate') return undefined;
    throw error;
  }
}

function unknownUser(name: string): ApiUserAdminError {
  return new ApiUserAdminError(
    'unknown',
    `no API user named ${JSON.stringify(name)} (see 'idm-compat apiuser list')`,
  );
}
