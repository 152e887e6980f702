import type { Hono } from 'hono';
import { HEALTH_PATHS } from '../config/fixed-paths.js';
import { LegacyUpstreamError } from '../migration/legacy-upstream.js';
import type { AppEnv, Services } from '../services.js';
import { StoreUnavailableError } from '../store/errors.js';
import { UpstreamError } from '../successor/errors.js';

/** Registers `GET /healthz` (the process answers) and `GET /readyz` (store and successor usable). */
export function registerHealth(app: Hono<AppEnv>, services: Services): void {
  app.get(HEALTH_PATHS.live, (c) => c.json({ status: 'ok' }));
  // Probes that arrive while one runs share its checks: /readyz needs no credentials, and each
  // check reads from the successor and the store, so any client that reaches the port could
  // otherwise make one successor call per request it sends at once.
  let running: Promise<Readiness> | undefined;
  app.get(HEALTH_PATHS.ready, async (c) => {
    running ??= readiness(services).finally(() => {
      running = undefined;
    });
    const { ready, checks } = await running;
    return c.json({ status: ready ? 'ready' : 'not ready', checks }, ready ? 200 : 503);
  });
}

interface Readiness {
  ready: boolean;
  checks: { store: CheckResult; successor: CheckResult; legacy?: CheckResult };
}

type CheckResult = { ok: boolean; error?: string };

async function readiness(services: Services): Promise<Readiness> {
  // A probe of its own, far shorter than a successor request may take with its retries: an
  // orchestrator asking /readyz wants an answer before its own probe timeout.
  const timeoutMs = services.config.server.readinessTimeoutMs;
  const log = services.logger;
  // The old server too while any operation is passed through or shadowed (the modes as they are
  // now, after a reload too): its answers are what those operations give.
  const legacy = services.migration.legacy;
  const oldServerServes =
    legacy !== undefined &&
    services.migration.modes
      .current()
      .entries()
      .some(([, mode]) => mode !== 'translate');
  const [store, successor, oldServer] = await Promise.all([
    check('store', () => services.store.ping(), timeoutMs, log),
    check('successor', (signal) => services.successor.check(signal), timeoutMs, log),
    oldServerServes ? check('old server', (signal) => legacy.check(signal), timeoutMs, log) : undefined,
  ]);
  return {
    ready: store.ok && successor.ok && (oldServer?.ok ?? true),
    checks: { store, successor, ...(oldServer ? { legacy: oldServer } : {}) },
  };
}

async function check(
  name: string,
  probe: (signal: AbortSignal) => Promise<void>,
  timeoutMs: number,
  log: Services['logger'],
): Promise<CheckResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  // A probe that cannot be aborted (the store's ping) is given up on all the same.
  const timedOut = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  try {
    await Promise.race([probe(signal), timedOut]);
    return { ok: true };
  } catch (error) {
    if (signal.aborted) {
      return { ok: false, error: `no answer within ${timeoutMs} ms (server.readinessTimeoutMs)` };
    }
    // Only our own error types carry operator-safe messages. Anything else is a failure nobody
    // foresaw: the answer names its type, and the log has it whole.
    if (error instanceof UpstreamError || error instanceof StoreUnavailableError)
      return { ok: false, error: error.message };
    // The old server's failure with what the network said (ECONNREFUSED and its address, a TLS
    // error): a replica out of rotation gets no requests whose log lines would tell.
    if (error instanceof LegacyUpstreamError) {
      const cause =
        error.cause instanceof Error && error.cause.message !== '' ? `: ${error.cause.message}` : '';
      return { ok: false, error: `${error.message}${cause}` };
    }
    log.error({ err: error, check: name }, `readiness check of the ${name} failed`);
    const type = error instanceof Error ? ` (${error.name})` : '';
    return { ok: false, error: `check failed${type}: the log has the details` };
  }
}
