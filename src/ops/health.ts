import type { Hono } from 'hono';
import type { AppEnv, Services } from '../services.js';
import { StoreUnavailableError } from '../store/errors.js';
import { UpstreamError } from '../successor/errors.js';

/** Registers `GET /healthz` (the process answers) and `GET /readyz` (store and successor usable). */
export function registerHealth(app: Hono<AppEnv>, services: Services): void {
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const [store, successor] = await Promise.all([
      check(() => services.store.ping()),
      check(() => services.successor.check()),
    ]);
    const ready = store.ok && successor.ok;
    return c.json({ status: ready ? 'ready' : 'not ready', checks: { store, successor } }, ready ? 200 : 503);
  });
}

async function check(probe: () => Promise<void>): Promise<{ ok: boolean; error?: string }> {
  try {
    await probe();
    return { ok: true };
  } catch (error) {
    // Only our own error types carry operator-safe messages; anything else is summarised.
    return {
      ok: false,
      error:
        error instanceof UpstreamError || error instanceof StoreUnavailableError
          ? error.message
          : 'check failed',
    };
  }
}
