import { Hono } from 'hono';
import { apiUserAuthFor } from './auth/middleware.js';
import { legacyBodyLimit } from './http/body-limit.js';
import { renderLegacyError, toLegacyError } from './http/errors.js';
import { LegacyError } from './http/legacy-error.js';
import { requestLog } from './http/request-log.js';
import { createLegacyDocs } from './legacy/docs/index.js';
import { LEGACY_OPERATIONS } from './legacy/operations.js';
import { createLegacyRouter } from './legacy/router.js';
import { registerHealth } from './ops/health.js';
import type { AppEnv, Services } from './services.js';
import { registerSso } from './sso/routes.js';

/** Builds the Hono app from injected services. It never listens: server.ts and tests do that. */
export function createApp(services: Services): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use('*', requestLog(services));
  registerHealth(app, services);
  // SSO's browser pages live outside the base path: visitors follow return_to without API-user credentials.
  registerSso(app, services);
  const { basePath, namespaces } = services.config.legacy;
  // Authentication first (docs and SSO included), then the body limit, so the body of an
  // unauthenticated request is never read.
  app.use(`${basePath}/*`, apiUserAuthFor(services), legacyBodyLimit(services.config.server.bodyLimitBytes));
  // The docs before the legacy router, whose catch-all answers 404/405 for everything else.
  app.route(basePath, createLegacyDocs(LEGACY_OPERATIONS, { basePath, namespaces }));
  app.route(basePath, createLegacyRouter(LEGACY_OPERATIONS, { basePath, namespaces }));

  app.notFound((c) => renderLegacyError(c, new LegacyError(404, `No such path: ${c.req.path}`)));
  app.onError((error, c) => {
    const legacy = toLegacyError(error);
    if (legacy.status >= 500) c.get('log')?.error({ err: error }, 'request failed');
    return renderLegacyError(c, legacy);
  });
  return app;
}
