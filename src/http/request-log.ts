import type { MiddlewareHandler } from 'hono';
import type { AppEnv, Services } from '../services.js';
import { type CallStats, currentCallStats, withCallStats } from '../successor/call-stats.js';
import { requestIdFrom } from './request-id.js';

/**
 * Binds a request id and a child logger to every request and writes one completion line per
 * request: id, method, path (never the query, which may carry an SSO token), status, duration,
 * API user and legacy operation when known, and how many successor calls the request made.
 */
export function requestLog(services: Services): MiddlewareHandler<AppEnv> {
  return async function requestLogMiddleware(c, next) {
    const started = performance.now();
    const requestId = requestIdFrom(c.req.header('x-request-id'));
    const log = services.logger.child({ reqId: requestId });
    c.set('services', services);
    c.set('requestId', requestId);
    c.set('log', log);
    c.header('X-Request-Id', requestId);
    let stats: CallStats | undefined;
    try {
      await withCallStats(async () => {
        stats = currentCallStats();
        await next();
      });
    } finally {
      const status = c.res.status;
      log[status >= 500 ? 'error' : 'info'](
        {
          method: c.req.method,
          path: c.req.path,
          status,
          durationMs: Math.round((performance.now() - started) * 10) / 10,
          apiUser: c.get('apiUser'),
          operation: c.get('operation'),
          successorCalls: stats?.calls,
          successorMs: stats === undefined ? undefined : Math.round(stats.durationMs * 10) / 10,
        },
        'request completed',
      );
    }
  };
}
