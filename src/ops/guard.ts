import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { LRUCache } from 'lru-cache';
import { clientAddressResolver, compileRanges, formatAddress, throttleSubject } from '../auth/addresses.js';
import { parseBasicCredentials, peerAddress } from '../auth/middleware.js';
import { blockedUntil, type ThrottlePolicy } from '../auth/throttle.js';
import { LegacyError } from '../http/legacy-error.js';
import { requestHeader } from '../http/request-headers.js';
import type { Clock } from '../lib/clock.js';
import type { AppEnv } from '../services.js';

/** SHA-256 of a credential, so that comparing two of them takes the same time whatever they are. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Addresses whose failed operator logins are counted (the most recent ones). */
const COUNTED_ADDRESSES = 10_000;

/** One address's failed logins at an operator endpoint. */
interface Failures {
  count: number;
  lastAt: number;
  blockedUntil: number;
}

/**
 * Guards an operator endpoint (metrics, migration dashboard) outside the legacy API and its API
 * users: the client address (through `server.trustedProxies`) must be in `ranges` (403 outside),
 * and when `username`/`password` are set they must come as Basic credentials (401 with a
 * challenge of `realm`). Ranges and the expected credential are compiled once, here.
 *
 * Wrong credentials are throttled per address (an IPv6 address by its /64) as the API users'
 * unknown names are (`auth.throttle`: `addressFreeFailures` free, then `baseDelaySeconds`
 * doubling up to `maxDelaySeconds`, forgotten after `forgetAfterSeconds`): a blocked address
 * gets 429 with `Retry-After` and its credentials are not looked at. The right credentials
 * clear the address's count. The counts live in this process (one guard per endpoint), not in
 * the store: each replica counts its own.
 */
export function operatorGuard(options: {
  what: string;
  realm: string;
  ranges: readonly string[];
  trustedProxies: readonly string[];
  username: string | undefined;
  password: string | undefined;
  throttle: ThrottlePolicy;
  clock: Clock;
}): MiddlewareHandler<AppEnv> {
  const ranges = compileRanges(options.ranges);
  const resolveClient = clientAddressResolver(options.trustedProxies);
  const { throttle, clock } = options;
  const failures = new LRUCache<string, Failures>({ max: COUNTED_ADDRESSES });
  const expected =
    options.username !== undefined && options.password !== undefined
      ? digest(`${options.username}:${options.password}`)
      : undefined;
  const challenge = { 'WWW-Authenticate': `Basic realm="${options.realm}", charset="UTF-8"` };
  return async function operatorGuardMiddleware(c, next) {
    const address = resolveClient(peerAddress(c), requestHeader(c, 'x-forwarded-for'));
    if (!ranges.contains(address)) {
      throw new LegacyError(
        403,
        `The ${options.what} may not be read from ${address ? formatAddress(address) : 'an unknown address'}`,
      );
    }
    if (expected) {
      const subject = throttleSubject(address);
      const now = clock.now();
      const counted = failures.get(subject);
      if (counted && counted.blockedUntil > now) {
        const seconds = Math.ceil((counted.blockedUntil - now) / 1000);
        throw new LegacyError(
          429,
          `Too many failed logins to the ${options.what}; try again in ${seconds} second${seconds === 1 ? '' : 's'}`,
          undefined,
          { 'Retry-After': String(seconds) },
        );
      }
      const credentials = parseBasicCredentials(requestHeader(c, 'authorization'));
      const given = credentials ? digest(`${credentials.name}:${credentials.password}`) : undefined;
      if (!given || !timingSafeEqual(given, expected)) {
        // A missing Authorization header is a client's first, challenge-seeking try: not counted.
        if (credentials) {
          const fresh = !counted || now - counted.lastAt > throttle.forgetAfterSeconds * 1000;
          const count = fresh ? 1 : counted.count + 1;
          failures.set(subject, {
            count,
            lastAt: now,
            blockedUntil: blockedUntil(
              throttle,
              { scope: 'address', userName: '', address: subject },
              count,
              now,
            ),
          });
        }
        throw new LegacyError(
          401,
          `The ${options.what} needs its own Basic credentials`,
          undefined,
          challenge,
        );
      }
      if (counted) failures.delete(subject);
    }
    await next();
  };
}
