import { createHash, timingSafeEqual } from 'node:crypto';
import type { Hono } from 'hono';
import { clientAddressResolver, compileRanges, formatAddress } from '../auth/addresses.js';
import { parseBasicCredentials, peerAddress } from '../auth/middleware.js';
import { LegacyError } from '../http/legacy-error.js';
import type { AppEnv, Services } from '../services.js';

/** SHA-256 of a credential, so that comparing two of them takes the same time whatever they are. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * `GET {metrics.path}` (default `/metrics`): the Prometheus text format, outside the legacy base
 * path and its API users, behind its own address ranges (default loopback only) and, when
 * `metrics.username`/`password` are set, its own Basic credentials (403 outside the ranges, 401
 * without the right credentials). Ranges and the expected credential are compiled once here.
 */
export function registerMetrics(app: Hono<AppEnv>, services: Services): void {
  const settings = services.config.metrics;
  if (!settings.enabled) return;
  const ranges = compileRanges(settings.ranges);
  const resolveClient = clientAddressResolver(services.config.server.trustedProxies);
  const expected =
    settings.username !== undefined && settings.password !== undefined
      ? digest(`${settings.username}:${settings.password}`)
      : undefined;
  const challenge = { 'WWW-Authenticate': 'Basic realm="metrics", charset="UTF-8"' };
  const { registry } = services.metrics;
  app.get(settings.path, async (c) => {
    const address = resolveClient(peerAddress(c), c.req.header('x-forwarded-for'));
    if (!ranges.contains(address)) {
      throw new LegacyError(
        403,
        `Metrics may not be read from ${address ? formatAddress(address) : 'an unknown address'}`,
      );
    }
    if (expected) {
      const credentials = parseBasicCredentials(c.req.header('authorization'));
      const given = credentials ? digest(`${credentials.name}:${credentials.password}`) : undefined;
      if (!given || !timingSafeEqual(given, expected)) {
        throw new LegacyError(
          401,
          'The metrics need their own Basic credentials (metrics.username)',
          undefined,
          challenge,
        );
      }
    }
    return c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType });
  });
}
