import { Hono } from 'hono';
import { apiUserAuth } from './auth/middleware.js';
import { DASHBOARD_PATH, DOCS_FOLDER, HEALTH_PATHS, SSO_PATHS } from './config/fixed-paths.js';
import { legacyBodyLimit } from './http/body-limit.js';
import { compileDeprecation } from './http/deprecation.js';
import { operatorDetails, renderLegacyError, toLegacyError } from './http/errors.js';
import { isFailureStatus, noSuchPath } from './http/legacy-error.js';
import { type FixedRoutes, requestPipeline } from './http/pipeline.js';
import { requestLog } from './http/request-log.js';
import { createTranslator } from './http/translator.js';
import { answerWrongMethods } from './http/wrong-method.js';
import { createLegacyDispatch, runOperation } from './legacy/dispatch.js';
import { createLegacyDocs } from './legacy/docs/index.js';
import { OperationTable } from './legacy/operation-table.js';
import { LEGACY_OPERATIONS } from './legacy/operations.js';
import { serializeError } from './lib/logger.js';
import { withoutSecrets } from './lib/redact.js';
import { registerDashboard } from './ops/dashboard.js';
import { registerHealth } from './ops/health.js';
import { registerMetrics } from './ops/metrics.js';
import type { AppEnv, Services } from './services.js';
import { ssoServerErrorPage } from './sso/pages.js';
import { registerSso } from './sso/routes.js';

/** The SSO pages a browser comes to (src/sso/routes.ts). */
const SSO_PAGES: ReadonlySet<string> = new Set(Object.values(SSO_PATHS));

/**
 * Builds the Hono app from injected services. It never listens: server.ts and tests do that.
 * Order of every request: the pipeline (request id, log, operation named before anything else,
 * observers), then for the legacy surface authentication, the body limit, and the dispatch.
 */
export function createApp(services: Services): Hono<AppEnv> {
  const { config } = services;
  const { basePath, namespaces } = config.legacy;
  const table = new OperationTable(LEGACY_OPERATIONS, { basePath, namespaces });
  const fixed: FixedRoutes = {
    exact: new Map([
      [HEALTH_PATHS.live, 'ops.healthz'],
      [HEALTH_PATHS.ready, 'ops.readyz'],
      [config.metrics.path, 'ops.metrics'],
      [SSO_PATHS.continue, 'sso.continue'],
      [SSO_PATHS.callback, 'sso.callback'],
      [SSO_PATHS.landing, 'sso.landing'],
    ]),
    prefixes: [
      [`${basePath}/${DOCS_FOLDER}`, 'docs'],
      [DASHBOARD_PATH, 'ops.dashboard'],
    ],
  };
  const deprecation = compileDeprecation(
    config,
    LEGACY_OPERATIONS.map((operation) => operation.id),
  );

  const app = new Hono<AppEnv>();
  app.use('*', requestPipeline(services, table, fixed, deprecation));
  registerHealth(app, services);
  registerMetrics(app, services);
  registerDashboard(app, services);
  // SSO's browser pages live outside the base path: visitors follow return_to without API-user credentials.
  registerSso(app, services);
  // Here, after the fixed routes and before the legacy surface (which answers its own 405s): a
  // wrong method on a fixed path is a 405 with Allow, not a 404.
  answerWrongMethods(app);
  // Authentication first (docs and SSO included), then the body limit, so the body of an
  // unauthenticated request is never read.
  app.use(
    `${basePath}/*`,
    apiUserAuth({
      authenticator: services.authenticator,
      trustedProxies: config.server.trustedProxies,
      realm: config.auth.realm,
      observer: services.observer,
    }),
    legacyBodyLimit(config.server.bodyLimitBytes),
  );
  // The docs before the dispatch, which answers 404/405 for everything else.
  app.route(basePath, createLegacyDocs(LEGACY_OPERATIONS, { basePath, namespaces }));
  app.all(`${basePath}/*`, createLegacyDispatch(createTranslator(services, runOperation)));

  app.notFound((c) => renderLegacyError(c, noSuchPath(c.req.path)));
  app.onError((error, c) => {
    const legacy = toLegacyError(error, { requestId: c.get('requestId'), method: c.req.method });
    if (isFailureStatus(legacy.status)) {
      // A secret of the request the successor repeated (`could not hash Geheim-1`) stays out of
      // the line too, as it does out of the answer (renderLegacyError).
      const secrets = c.get('requestSecrets') ?? [];
      const log =
        secrets.length === 0
          ? requestLog(c)
          : requestLog(c).child(
              {},
              { serializers: { err: (e: unknown) => withoutSecrets(serializeError(e), secrets) } },
            );
      log.error({ err: error, ...withoutSecrets(operatorDetails(error), secrets) }, 'request failed');
    }
    // A browser following an SSO link gets a page, not the legacy JSON (the store unreachable).
    const page = SSO_PAGES.has(c.req.path) ? ssoServerErrorPage(c, legacy.status, legacy.headers) : undefined;
    return page ?? renderLegacyError(c, legacy);
  });
  return app;
}
