import type { Hono } from 'hono';
import type { AppEnv, Services } from '../services.js';
import { operatorGuard } from './guard.js';

/**
 * `GET {metrics.path}` (default `/metrics`): the Prometheus text format, outside the legacy base
 * path and its API users, behind its own address ranges (default loopback only) and, when
 * `metrics.username`/`password` are set, its own Basic credentials (403 outside the ranges, 401
 * without the right credentials).
 */
export function registerMetrics(app: Hono<AppEnv>, services: Services): void {
  const settings = services.config.metrics;
  if (!settings.enabled) return;
  const { registry } = services.metrics;
  app.get(
    settings.path,
    operatorGuard({
      what: 'metrics',
      realm: 'metrics',
      ranges: settings.ranges,
      trustedProxies: services.config.server.trustedProxies,
      username: settings.username,
      password: settings.password,
    }),
    async (c) => c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType }),
  );
}
