import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { clientAddressResolver, compileRanges, formatAddress } from '../auth/addresses.js';
import { parseBasicCredentials, peerAddress } from '../auth/middleware.js';
import { LegacyError } from '../http/legacy-error.js';
import { requestHeader } from '../http/request-headers.js';
import type { AppEnv } from '../services.js';

/** SHA-256 of a credential, so that comparing two of them takes the same time whatever they are. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Guards an operator endpoint (metrics, migration dashboard) outside the legacy API and its API
 * users: the client address (through `server.trustedProxies`) must be in `ranges` (403 outside),
 * and when `username`/`password` are set they must come as Basic credentials (401 with a
 * challenge of `realm`). Ranges and the expected credential are compiled once, here.
 */
export function operatorGuard(options: {
  what: string;
  realm: string;
  ranges: readonly string[];
  trustedProxies: readonly string[];
  username: string | undefined;
  password: string | undefined;
}): MiddlewareHandler<AppEnv> {
  const ranges = compileRanges(options.ranges);
  const resolveClient = clientAddressResolver(options.trustedProxies);
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
      const credentials = parseBasicCredentials(requestHeader(c, 'authorization'));
      const given = credentials ? digest(`${credentials.name}:${credentials.password}`) : undefined;
      if (!given || !timingSafeEqual(given, expected)) {
        throw new LegacyError(
          401,
          `The ${options.what} needs its own Basic credentials`,
          undefined,
          challenge,
        );
      }
    }
    await next();
  };
}
