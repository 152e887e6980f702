import {
  Counter,
  type CounterConfiguration,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  Registry,
} from 'prom-client';
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
 *
 * The counters a request moves (requests, successor calls, ID cache look-ups, migration modes)
 * are added up in place, per series, and handed to prom-client when the registry is read (the
 * counter's `collect`): a request then costs an addition each, not prom-client's label check and
 * hashing. A scrape sees every request finished before it, as before. The histograms are
 * observed directly, through their labelled children.
 */
export function createMetrics(options: { processMetrics: boolean }): Metrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const requests = pendingCounter({
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
  const successorRequests = pendingCounter({
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
  const kdfWaiting = new Gauge({
    name: 'idm_compat_password_kdf_waiting',
    help: 'Credential checks waiting for their turn at the password key derivation (auth.kdfConcurrency)',
    registers: [registry],
  });
  const idCache = pendingCounter({
    name: 'idm_compat_id_cache_lookups_total',
    help: 'Legacy ID resolutions, served from the cache (hit) or by the successor (miss)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const modeRequests = pendingCounter({
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
  const droppedConnections = new Counter({
    name: 'idm_compat_connections_dropped_total',
    help: 'New connections closed unanswered because server.maxConnections connections were open',
    registers: [registry],
  });
  const droppedRecordings = new Counter({
    name: 'idm_compat_recording_lines_dropped_total',
    help: 'Exchanges left out of the recording (migration.recording) because its queue was full: a slow or stalled disk',
    registers: [registry],
  });
  const cutOffAnswers = new Counter({
    name: 'idm_compat_answers_cut_off_total',
    help: 'Streamed answers (large lists) begun with 200 and cut off before their end: a later page failed, or the shutdown cut the connection; their requests count with status 200',
    labelNames: ['operation', 'reason'] as const,
    registers: [registry],
  });
  // The histograms by their labelled children, kept in plain maps: prom-client then skips turning
  // the label values into an object per call (it still checks and hashes them in `observe`). The
  // children are as many as the series themselves (bounded label values).
  const requestTimes = new Map<string, ReturnType<typeof requestDuration.labels>>();
  const successorTimes = new Map<string, ReturnType<typeof successorDuration.labels>>();
  const observer: Observer = {
    request({ operation, status, apiUser, durationMs }: RequestEvent) {
      const key = `${operation}\0${status}\0${apiUser}`;
      if (!requests.add(key)) requests.start(key, { operation, status: String(status), api_user: apiUser });
      const time =
        requestTimes.get(operation) ?? remember(requestTimes, operation, requestDuration.labels(operation));
      time.observe(durationMs / 1000);
    },
    successorCall({ method, route, status, durationMs }: SuccessorCallEvent) {
      const series = `${method}\0${route}`;
      const key = `${series}\0${status}`;
      if (!successorRequests.add(key))
        successorRequests.start(key, { method, route, status: String(status) });
      const time =
        successorTimes.get(series) ??
        remember(successorTimes, series, successorDuration.labels(method, route));
      time.observe(durationMs / 1000);
    },
    tokenRenewal: () => tokenRenewals.inc(),
    authFailure(reason: AuthFailureReason) {
      authFailures.inc({ reason });
      if (reason === 'throttled') throttled.inc();
    },
    kdfRun: () => kdfRuns.inc(),
    kdfWaiting: (count) => kdfWaiting.set(count),
    loginBlock: (scope) => loginBlocks.inc({ scope }),
    idCacheLookup(result) {
      if (!idCache.add(result)) idCache.start(result, { result });
    },
    modeRequest(operation, mode) {
      const key = `${operation}\0${mode}`;
      if (!modeRequests.add(key)) modeRequests.start(key, { operation, mode });
    },
    legacyUpstreamCall: (status) => legacyUpstream.inc({ status: String(status) }),
    shadowComparison: (operation, outcome) => shadowComparisons.inc({ operation, outcome }),
    connectionDropped: () => droppedConnections.inc(),
    recordingDropped: () => droppedRecordings.inc(),
    answerCutOff: (operation, reason) => cutOffAnswers.inc({ operation, reason }),
  };
  return { registry, observer };
}

/** One series of a counter: its labels and what was added since prom-client last took it. */
interface PendingSeries<L extends string> {
  readonly labels: Partial<Record<L, string>>;
  pending: number;
}

/**
 * A counter of the registry whose increments wait in a `PendingCounts` until the registry is read:
 * its `collect` hands them over.
 */
function pendingCounter<L extends string>(configuration: CounterConfiguration<L>): PendingCounts<L> {
  const pending = new PendingCounts<L>();
  new Counter({
    ...configuration,
    collect() {
      pending.flushTo(this);
    },
  });
  return pending;
}

/** Increments of a counter's series by a key of their label values, until `flushTo` hands them over. */
class PendingCounts<L extends string> {
  readonly #series = new Map<string, PendingSeries<L>>();

  /** Adds one to the series `key` names; false when there is no such series yet (then `start` it). */
  add(key: string): boolean {
    const series = this.#series.get(key);
    if (series === undefined) return false;
    series.pending += 1;
    return true;
  }

  /** Makes the series `key` with its labels and one increment. */
  start(key: string, labels: Partial<Record<L, string>>): void {
    this.#series.set(key, { labels, pending: 1 });
  }

  /** Adds what is pending to `counter` (called by its `collect`, when the registry is read). */
  flushTo(counter: Counter<L>): void {
    for (const series of this.#series.values()) {
      if (series.pending === 0) continue;
      counter.inc(series.labels, series.pending);
      series.pending = 0;
    }
  }
}

/** Keeps `value` under `key` in `map` and returns it. */
function remember<T>(map: Map<string, T>, key: string, value: T): T {
  map.set(key, value);
  return value;
}
