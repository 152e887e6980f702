import type { Hono } from 'hono';
import type { AppEnv, Services } from '../services.js';
import { operatorGuard } from './guard.js';

/**
 * `GET {metrics.path}` (default `/metrics`): the Prometheus text format, outside the legacy base
 * path and its API users, behind its own address ranges (default loopback only) and, when
 * `metrics.username`/`password` are set, its own Basic credentials (403 outside the ranges, 401
 * without the right credentials). The guard covers every method of the path (`app.use`, like the
 * dashboard's): a wrong method gets 403/401 before the 405 of src/http/wrong-method.ts, so a
 * client outside the ranges learns nothing but the 403, whatever the method.
 */
export function registerMetrics(app: Hono<AppEnv>, services: Services): void {
  const settings = services.config.metrics;
  if (!settings.enabled) return;
  const { registry } = services.metrics;
  app.use(
    settings.path,
    operatorGuard({
      what: 'metrics endpoint',
      realm: 'metrics',
      ranges: settings.ranges,
      trustedProxies: services.config.server.trustedProxies,
      username: settings.username,
      password: settings.password,
      throttle: services.config.auth.throttle,
      clock: services.clock,
    }),
  );
  app.get(settings.path, async (c) =>
    c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }),
  );
}
