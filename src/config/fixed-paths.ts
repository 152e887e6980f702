/**
 * The proxy's own paths outside the legacy base path, in one place: the routes are registered
 * under them (src/app.ts, src/ops, src/sso), and the configuration refuses a `metrics.path` that
 * would take one of them.
 */

/** Health probes: the process answers; the store and the successor are usable. */
export const HEALTH_PATHS = { live: '/healthz', ready: '/readyz' } as const;

/** Where SSO lives on the proxy (outside the legacy base path: browsers, not API users, come here). */
export const SSO_PATHS = {
  continue: '/sso/continue',
  callback: '/sso/callback',
  landing: '/sso/landing',
} as const;

/**
 * The interactive docs' folder below the legacy base path (`{basePath}/docs/`, src/legacy/docs):
 * no legacy namespace may be named so, or its operations would be answered as unknown docs pages.
 */
export const DOCS_FOLDER = 'docs';

/** The migration dashboard, a prefix: `/_migration/` and `/_migration/api/status`. */
export const DASHBOARD_PATH = '/_migration';

/**
 * The fixed path that `path` would take (the same path, a trailing `/` aside, or one below the
 * dashboard's prefix), or undefined when it takes none.
 */
export function takenFixedPath(path: string): string | undefined {
  const bare = path.replace(/\/+$/, '');
  const exact = [...Object.values(HEALTH_PATHS), ...Object.values(SSO_PATHS)];
  if (exact.includes(bare as (typeof exact)[number])) return bare;
  if (bare === DASHBOARD_PATH || bare.startsWith(`${DASHBOARD_PATH}/`)) return `${DASHBOARD_PATH}/`;
  return undefined;
}
