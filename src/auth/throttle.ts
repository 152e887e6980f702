import type { ThrottleKey, ThrottleState } from '../store/api-users.js';

/** Throttle thresholds (config `auth.throttle`): failures allowed free, then exponential back-off. */
export interface ThrottlePolicy {
  /** Failures of one existing user from one address before that pair is slowed down. */
  pairFreeFailures: number;
  /** Failures of one existing user from all addresses before the user is slowed down everywhere. */
  userFreeFailures: number;
  /** Failures with unknown user names from one address before that address is slowed down. */
  addressFreeFailures: number;
  baseDelaySeconds: number;
  maxDelaySeconds: number;
  /** A counter whose last failure is older than this starts again from zero. */
  forgetAfterSeconds: number;
}

/**
 * A (user, address) pair that logged in successfully within this time (30 days) is a known
 * address: while the user's counter blocks, it is judged by its own (user, address) counter only.
 */
export const KNOWN_ADDRESS_SECONDS = 30 * 24 * 60 * 60;

/** Known addresses kept per user (the most recently successful ones). */
export const KNOWN_ADDRESSES_PER_USER = 32;

/**
 * Which counters an attempt is judged by and counted in. An existing user is judged only by its
 * own counters (per user, per user and address), so a misconfigured integration failing with
 * another name at the same address never locks it out; the per-address counter catches name
 * guessing (unknown names) from one address and is consulted only for unknown names.
 */
export function throttleKeys(userName: string, address: string, userExists: boolean): ThrottleKey[] {
  return userExists
    ? [
        { scope: 'user', userName, address: '' },
        { scope: 'pair', userName, address },
      ]
    : [{ scope: 'address', userName: '', address }];
}

/** Free failures of a counter's scope. */
export function freeFailures(policy: ThrottlePolicy, key: ThrottleKey): number {
  switch (key.scope) {
    case 'user':
      return policy.userFreeFailures;
    case 'pair':
      return policy.pairFreeFailures;
    case 'address':
      return policy.addressFreeFailures;
  }
}

/**
 * Block end after the `failures`-th failure at `at`: none while within the free failures, then
 * base × 2^(failures − free − 1), capped at the maximum (1 s, 2 s, 4 s, … 15 min by default).
 */
export function blockedUntil(policy: ThrottlePolicy, key: ThrottleKey, failures: number, at: number): number {
  const over = failures - freeFailures(policy, key);
  if (over <= 0) return 0;
  const delaySeconds = Math.min(
    policy.maxDelaySeconds,
    policy.baseDelaySeconds * 2 ** Math.min(over - 1, 40),
  );
  return at + delaySeconds * 1000;
}

/** Whether the user's own counter (scope `user`) is among `states` and blocks at `now`. */
export function userCounterBlocks(states: readonly ThrottleState[], now: number): boolean {
  return states.some((state) => state.scope === 'user' && state.blockedUntil > now);
}

/** The latest block end among the states still blocking at `now`, or undefined when none blocks. */
export function blockingUntil(states: readonly ThrottleState[], now: number): number | undefined {
  let until: number | undefined;
  for (const state of states) {
    if (state.blockedUntil > now && (until === undefined || state.blockedUntil > until))
      until = state.blockedUntil;
  }
  return until;
}
