import { Authenticator } from './auth/authenticator.js';
import type { AppConfig, ResolvedSuccessorConfig } from './config/load.js';
import { mappingsFolder } from './config/mappings-folder.js';
import { checkOperationReferences } from './config/references.js';
import { InFlightRequests } from './http/in-flight.js';
import { configuredPublicUrl, expectedPublicUrl } from './http/public-url.js';
import type { OperationMatch } from './legacy/operation-table.js';
import { REQUIRED_OPERATIONS, SECRET_BODIES } from './legacy/operations.js';
import { type Clock, systemClock } from './lib/clock.js';
import type { Logger } from './lib/logger.js';
import {
  apiBasePath,
  createMappingHolder,
  loadServingProfile,
  type MappingHolder,
} from './mapping/engine.js';
import { shadowCompareRules } from './migration/compare-rules.js';
import { LegacyUpstream } from './migration/legacy-upstream.js';
import { createModeHolder, type ModeHolder, ModeTable } from './migration/modes.js';
import { checkRecordingPath, RecordingWriter } from './migration/recording.js';
import { ShadowRunner } from './migration/shadow.js';
import { createMetrics, type Metrics } from './observe/metrics.js';
import { type AnswerCutOff, type CallStats, combineObservers, type Observer } from './observe/observer.js';
import { UsageRecorder } from './observe/usage.js';
import type { RunningSandbox } from './sandbox/index.js';
import { SsoRelyingParty } from './sso/oidc.js';
import { SsoTokenIssuer } from './sso/tokens.js';
import { openStore } from './store/open.js';
import type { Store } from './store/types.js';
import { createSuccessorClient, type SuccessorClient } from './successor/client.js';

/** What CLI commands that only manage stored state need: the store and its surroundings. */
export interface StoreServices {
  readonly config: AppConfig;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly store: Store;
  /** Closes what was opened, in reverse order. */
  close(): Promise<void>;
}

/** Everything the app needs, built once by `buildServices` and injected into createApp; never changed afterwards. */
export interface Services extends StoreServices {
  /** The configuration requests run with (in sandbox mode: pointed at the embedded sandbox). */
  readonly config: AppConfig & { successor: ResolvedSuccessorConfig };
  /** The configuration as it was loaded, before the sandbox filled in the successor: what a reload compares the file with. */
  readonly loadedConfig: AppConfig;
  readonly successor: SuccessorClient;
  /** The live mapping tables (swapped as a whole on reload). */
  readonly mappings: MappingHolder;
  readonly authenticator: Authenticator;
  /** The OIDC relying party of SSO, when `sso.oidc` is configured (or sandbox mode provides one). */
  readonly sso: SsoRelyingParty | undefined;
  /** Issues SSO tokens (and purges old ones now and then). */
  readonly ssoTokens: SsoTokenIssuer;
  readonly metrics: Metrics;
  /** The usage inventory's write-behind. */
  readonly usage: UsageRecorder;
  /** Every observer at once: metrics, usage inventory and the injected extra one. */
  readonly observer: Required<Observer>;
  /** The embedded sandbox IDM, in sandbox mode. */
  readonly sandbox: RunningSandbox | undefined;
  /** The migration tools: per-operation modes (reloadable) and the old server, when configured. */
  readonly migration: {
    readonly modes: ModeHolder;
    readonly legacy: LegacyUpstream | undefined;
    /** Shadow mode's background comparisons (with the old server configured). */
    readonly shadow: ShadowRunner | undefined;
    /** The traffic recording (`migration.recording`). */
    readonly recording: RecordingWriter | undefined;
  };
  /**
   * The URL clients reach the proxy at, for links such as SSO's `return_to`: `legacy.publicUrl`,
   * else the configured listen address when its port is fixed; undefined: the local address of
   * each request's connection (never its Host header). Read it through `publicUrlOf`.
   */
  readonly publicUrl: string | undefined;
  /** The requests whose handlers still run: a shutdown waits for them before it closes the successor client. */
  readonly inFlight: InFlightRequests;
}

/** What buildServices takes besides the configuration. */
export interface ServiceDeps {
  logger: Logger;
  clock?: Clock;
  /** An already opened store (tests wrap one to inject faults); closed with the services. */
  store?: Store;
  /** One more observer, e.g. a test's counters. */
  observer?: Observer;
  /** Replaces the successor client's pooled fetch (tests that must shape a fault precisely). */
  successorFetch?: typeof fetch;
  /** Ends the store's start-up retries (a stop signal): buildServices then rejects with its reason. */
  signal?: AbortSignal | undefined;
  /** The `store` scope of a command that only reads: a PostgreSQL store without tables is refused, not created. */
  requireExistingStore?: boolean;
}

/** Which services to build: `store` for commands that only manage stored state. */
export type ServiceScope = 'all' | 'store';

/**
 * Builds the services the configuration describes, once, in dependency order: the mapping
 * profile first (a broken table stops start-up before anything is started), the store, in sandbox
 * mode the embedded sandbox, the successor client, the mapping engine, authentication, SSO,
 * metrics and the usage inventory. On failure everything already opened is closed again.
 */
export async function buildServices(
  config: AppConfig,
  deps: ServiceDeps & { scope: 'store' },
): Promise<StoreServices>;
export async function buildServices(
  config: AppConfig,
  deps: ServiceDeps & { scope?: 'all' },
): Promise<Services>;
export async function buildServices(
  config: AppConfig,
  deps: ServiceDeps & { scope?: ServiceScope },
): Promise<StoreServices | Services> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const cleanups: (() => Promise<void>)[] = [];
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const fn of cleanups.reverse())
        await fn().catch((error) => logger.error({ err: error }, 'shutdown step failed'));
    })();
    return closing;
  };
  try {
    if (deps.scope === 'store') {
      // CLI commands fail at once when the database is unreachable; the server retries (below).
      const store =
        deps.store ??
        (await openStore(config.store, {
          retry: false,
          requireExisting: deps.requireExistingStore === true,
        }));
      cleanups.push(() => store.close());
      return { config, logger, clock, store, close };
    }
    const requiredIds = REQUIRED_OPERATIONS.map((operation) => operation.id);
    checkOperationReferences(config, requiredIds);
    // The migration's own files too, before anything is opened: like a bad key of the file, a
    // compare rules file or recording folder that cannot be used is a configuration error (exit 2).
    const compareRules = shadowCompareRules(config, requiredIds);
    checkRecordingPath(config);
    const profileFolder = mappingsFolder(config);
    // The mapping profile next: a broken table stops start-up before anything is opened or started.
    const initialProfile = loadServingProfile(profileFolder, REQUIRED_OPERATIONS);
    const metrics = createMetrics({
      processMetrics: config.metrics.enabled && config.metrics.processMetrics,
    });
    // The usage recorder is an observer too; it is created once the store is open.
    let usage: UsageRecorder | undefined;
    const observer = combineObservers(
      metrics.observer,
      { request: (event) => usage?.request(event) },
      ...(deps.observer ? [deps.observer] : []),
    );
    const mappingDeps = { logger: logger.child({ component: 'mapping' }), clock, observer };

    const store = deps.store ?? (await openStore(config.store, { logger, signal: deps.signal }));
    cleanups.push(() => store.close());
    usage = new UsageRecorder({
      repository: store.usage,
      flushIntervalMs: config.usage.flushIntervalSeconds * 1000,
      logger: logger.child({ component: 'usage' }),
    });
    const recorder = usage;
    cleanups.push(() => recorder.close());

    let sandbox: RunningSandbox | undefined;
    let runConfig: Services['config'];
    if (config.mode === 'sandbox') {
      // Imported lazily: production deployments never load the sandbox or its OAuth2 server.
      const { startEmbeddedSandbox } = await import('./embedded-sandbox.js');
      const embedded = await startEmbeddedSandbox(config, logger.child({ component: 'sandbox' }));
      sandbox = embedded.sandbox;
      cleanups.push(() => embedded.sandbox.close());
      runConfig = embedded.config;
    } else {
      runConfig = { ...config, successor: productionSuccessor(config) };
    }

    // The profile's paging and readiness read are successor conventions; both are asked at every
    // check, so a reloaded profile applies.
    let mappings: MappingHolder | undefined;
    const successor = createSuccessorClient({
      ...runConfig.successor,
      checkPath: () => mappings?.current().profile.readinessPath ?? '',
      checkPaging: () => mappings?.current().profile.paging,
      clock,
      logger: logger.child({ component: 'successor' }),
      observer,
      ...(deps.successorFetch ? { fetch: deps.successorFetch } : {}),
    });
    cleanups.push(() => successor.close());
    mappings = createMappingHolder(
      profileFolder,
      {
        ...mappingDeps,
        successor,
        idMap: store.idMap,
        apiBase: apiBasePath(runConfig.successor.baseUrl),
      },
      REQUIRED_OPERATIONS,
      initialProfile,
    );
    const profile = mappings.current().profile;
    logger.info(
      { profile: profile.name, folder: profileFolder, files: profile.files.length },
      'mapping profile loaded',
    );

    const authenticator = new Authenticator({
      store,
      clock,
      logger: logger.child({ component: 'auth' }),
      credentialCacheTtlSeconds: config.auth.credentialCacheTtlSeconds,
      credentialCacheMaxEntries: config.auth.credentialCacheMaxEntries,
      kdfConcurrency: config.auth.kdfConcurrency,
      throttle: config.auth.throttle,
      observer,
    });
    const oidc = runConfig.sso.oidc;
    const ssoLog = logger.child({ component: 'sso' });
    const sso = oidc
      ? new SsoRelyingParty(oidc, { timeoutMs: runConfig.successor.timeouts.totalMs, logger: ssoLog })
      : undefined;
    const ssoTokens = new SsoTokenIssuer({
      tokens: store.ssoTokens,
      clock,
      ttlSeconds: runConfig.sso.ttlSeconds,
      logger: ssoLog,
    });
    const operationIds = REQUIRED_OPERATIONS.map((operation) => operation.id);
    const modes = createModeHolder(new ModeTable(config.migration.modes, operationIds));
    const legacySettings = config.migration.legacy;
    const legacy = legacySettings ? new LegacyUpstream(legacySettings) : undefined;
    if (legacy) cleanups.push(() => legacy.close());
    // Closed before the successor client and the store (cleanups run last first): the comparisons
    // still under way need both.
    const shadow =
      legacy && compareRules
        ? new ShadowRunner({
            settings: config.migration.shadow,
            rules: compareRules,
            repository: store.shadow,
            observer,
            clock,
            logger: logger.child({ component: 'shadow' }),
            flushIntervalMs: config.usage.flushIntervalSeconds * 1000,
            secretAnswers: SECRET_BODIES.answers,
          })
        : undefined;
    if (shadow) cleanups.push(() => shadow.close());
    const recordingSettings = config.migration.recording;
    const recordingLog = logger.child({ component: 'recording' });
    const recording = recordingSettings
      ? new RecordingWriter({
          path: recordingSettings.path,
          secrets: SECRET_BODIES,
          maxBytes: recordingSettings.maxBytes,
          maxPendingLines: recordingSettings.maxPendingLines,
          operations: recordingSettings.operations,
          onError: (error) => recordingLog.warn({ err: error }, 'recording not written'),
          // Counted in the metrics; told in the log at the 1st, 10th, 100th … line, so a stalled
          // disk is in the log at once without a line per request.
          onDropped: (dropped) => {
            observer.recordingDropped?.();
            if (/^10*$/.test(String(dropped)))
              recordingLog.warn(
                { dropped },
                `recording queue full (a slow or stalled disk): ${dropped} exchange${dropped === 1 ? '' : 's'} left out of the recording so far`,
              );
          },
        })
      : undefined;
    // Bounded as the rest of the shutdown: a disk that takes no writes does not hold it up.
    if (recording) cleanups.push(() => recording.close(config.server.shutdownTimeoutMs));
    const { port } = config.server;
    const publicUrl = configuredPublicUrl(config) ?? (port === 0 ? undefined : expectedPublicUrl(config));
    return {
      config: runConfig,
      loadedConfig: config,
      logger,
      clock,
      store,
      successor,
      mappings,
      authenticator,
      sso,
      ssoTokens,
      metrics,
      usage: recorder,
      observer,
      sandbox,
      migration: { modes, legacy, shadow, recording },
      publicUrl,
      inFlight: new InFlightRequests(),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Production mode's successor: the schema refuses a file without its baseUrl and auth. */
function productionSuccessor(config: AppConfig): ResolvedSuccessorConfig {
  const successor = config.successor;
  if (successor?.baseUrl === undefined || successor.auth === undefined)
    throw new Error('no successor configured');
  return { ...successor, baseUrl: successor.baseUrl, auth: successor.auth };
}

/** Hono environment of the app: per-request values set by middleware. */
export interface AppEnv {
  Variables: {
    services: Services;
    /** Child logger bound to the request id, made on first use: read it through `requestLog(c)`. */
    log?: Logger;
    requestId: string;
    /** The authenticated API user, once auth has run and let the request through. */
    apiUser?: string;
    /**
     * The API user whose right password was refused for its source address (403): the request's
     * log line, metrics and usage count it as that user's, but it was never let through (not
     * recorded, not replayed).
     */
    refusedApiUser?: string;
    /**
     * Whether the request's log lines may be written, for an answer of `status`: decided once per
     * request by the flood limit (`logging.unauthenticatedPerSecond`), so that a request writes
     * all of its lines (a refused login's, its completion line) or is counted in a summary.
     */
    logLines?: (status: number) => boolean;
    /** The operation id (e.g. `user.list`, `docs`, or `unknown`), set before authentication. */
    operation: string;
    /** What the operation table says about the request path (the legacy dispatch acts on it). */
    match: OperationMatch;
    /**
     * The request's successor API calls, for its log line: the mapping engine adds to it. Unset
     * in shadow mode's background translation, which the caller does not wait for.
     */
    calls?: CallStats;
    /**
     * Set by a handler whose answer is streamed (a large list, a passthrough answer): settles
     * once the answer is out, its stream ended, failed or cancelled, when the pipeline writes the
     * request's log line.
     */
    streaming?: Promise<void>;
    /** Set by a streamed answer the proxy cut off before its end (see `Observer.answerCutOff`). */
    answerCutOff?: AnswerCutOff;
    /**
     * The secrets the request's body carried (`secretStrings`: a password, any value under a
     * secret's key), set once the body is read when it had any: an error answer leaves them out,
     * should the successor have repeated one in its refusal.
     */
    requestSecrets?: readonly string[];
  };
}
