import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { AuthFailureReason, Observer, RequestEvent, SuccessorCallEvent } from './observer.js';

/** The proxy's Prometheus metrics: one registry per set of services, never prom-client's global one. */
export interface Metrics {
  readonly registry: Registry;
  /** Feeds the counters and histograms. */
  readonly observer: Observer;
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Builds the registry with the proxy's metrics and Node's process metrics. Label values come
 * only from bounded sets: operation ids (or `unknown`), status codes, API users that exist in
 * the store (or `""`), successor routes with IDs replaced.
 */
export function createMetrics(options: { processMetrics: boolean }): Metrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'idm_compat_requests_total',
    help: 'Requests answered, by legacy operation, status and API user',
    labelNames: ['operation', 'status', 'api_user'] as const,
    registers: [registry],
  });
  const requestDuration = new Histogram({
    name: 'idm_compat_request_duration_seconds',
    help: 'Time from request until the answer is out (a streamed list or passthrough answer: its last byte), by legacy operation',
    labelNames: ['operation'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const successorRequests = new Counter({
    name: 'idm_compat_successor_requests_total',
    help: 'HTTP calls to the successor (API and token endpoint), by method, route and status (0: no answer)',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const successorDuration = new Histogram({
    name: 'idm_compat_successor_request_duration_seconds',
    help: 'Duration of HTTP calls to the successor, by method and route',
    labelNames: ['method', 'route'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const tokenRenewals = new Counter({
    name: 'idm_compat_token_renewals_total',
    help: 'Access tokens fetched from the successor token endpoint',
    registers: [registry],
  });
  const authFailures = new Counter({
    name: 'idm_compat_auth_failures_total',
    help: 'Refused API-user authentications, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const throttled = new Counter({
    name: 'idm_compat_throttled_total',
    help: 'Requests refused with 429 because of failed-login throttling',
    registers: [registry],
  });
  const loginBlocks = new Counter({
    name: 'idm_compat_login_blocks_total',
    help: 'Failed logins that started or lengthened a throttling block, by counter (user, pair, address)',
    labelNames: ['scope'] as const,
    registers: [registry],
  });
  const kdfRuns = new Counter({
    name: 'idm_compat_password_kdf_runs_total',
    help: 'Password key derivations (credential checks not served from the cache)',
    registers: [registry],
  });
  const idCache = new Counter({
    name: 'idm_compat_id_cache_lookups_total',
    help: 'Legacy ID resolutions, served from the cache (hit) or by the successor (miss)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const modeRequests = new Counter({
    name: 'idm_compat_mode_requests_total',
    help: 'Legacy operations served, by migration mode (translate, passthrough, shadow)',
    labelNames: ['operation', 'mode'] as const,
    registers: [registry],
  });
  const shadowComparisons = new Counter({
    name: 'idm_compat_shadow_comparisons_total',
    help: 'Shadow comparisons, by outcome (match, mismatch, error, skipped)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
  });
  const legacyUpstream = new Counter({
    name: 'idm_compat_legacy_upstream_requests_total',
    help: 'Calls to the old server (migration.legacy), by status (0: no answer)',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  // The per-request series, by their labelled children: prom-client hashes the labels on every
  // call otherwise. The children are as many as the series themselves (bounded label values).
  const requestCount = childrenOf((operation, status, apiUser) =>
    requests.labels(operation, status, apiUser),
  );
  const requestTime = childrenOf((operation) => requestDuration.labels(operation));
  const successorCount = childrenOf((method, route, status) =>
    successorRequests.labels(method, route, status),
  );
  const successorTime = childrenOf((method, route) => successorDuration.labels(method, route));
  const observer: Observer = {
    request(event: RequestEvent) {
      requestCount(event.operation, String(event.status), event.apiUser).inc();
      requestTime(event.operation).observe(event.durationMs / 1000);
    },
    successorCall(event: SuccessorCallEvent) {
      successorCount(event.method, event.route, String(event.status)).inc();
      successorTime(event.method, event.route).observe(event.durationMs / 1000);
    },
    tokenRenewal: () => tokenRenewals.inc(),
    authFailure(reason: AuthFailureReason) {
      authFailures.inc({ reason });
      if (reason === 'throttled') throttled.inc();
    },
    kdfRun: () => kdfRuns.inc(),
    loginBlock: (scope) => loginBlocks.inc({ scope }),
    idCacheLookup: (result) => idCache.inc({ result }),
    modeRequest: (operation, mode) => modeRequests.inc({ operation, mode }),
    legacyUpstreamCall: (status) => legacyUpstream.inc({ status: String(status) }),
    shadowComparison: (operation, outcome) => shadowComparisons.inc({ operation, outcome }),
  };
  return { registry, observer };
}

/** One child per distinct label values, made by `make` the first time they are seen. */
function childrenOf<T>(make: (...values: string[]) => T): (...values: string[]) => T {
  const children = new Map<string, T>();
  return (...values) => {
    const key = values.join('\0');
    let child = children.get(key);
    if (child === undefined) {
      child = make(...values);
      children.set(key, child);
    }
    return child;
  };
}
