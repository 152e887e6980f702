import type { Logger } from './lib/logger.js';
import { reloadAndLog } from './mapping/reload.js';
import { reloadModes } from './migration/reload.js';
import type { Services } from './services.js';

/** What a reload reads: the configuration file, the environment, and the server's certificate. */
export interface ReloadOptions {
  file: string | undefined;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** `RunningServer.tlsAtStart`: the certificate the server serves (undefined: plain HTTP). */
  tlsAtStart: string | undefined;
}

/**
 * Reloads the mapping tables and the migration modes (from the configuration file) whenever the
 * process gets `signal` (SIGHUP): what `serve` installs. A broken file is logged and what was in
 * force stays. Returns a function that stops listening.
 */
export function reloadOnSignal(
  services: Services,
  options: ReloadOptions,
  signal: NodeJS.Signals = 'SIGHUP',
): () => void {
  const onSignal = reloader(services, options);
  process.on(signal, onSignal);
  return () => process.off(signal, onSignal);
}

/**
 * What SIGHUP does: reloads the mapping tables and the migration modes now. Never throws: a
 * failure is logged and what was in force stays.
 */
export function reloader(services: Services, options: ReloadOptions): () => void {
  const operationIds = [...services.migration.modes.current().entries()].map(([id]) => id);
  // A signal handler that throws ends the process: whatever goes wrong is logged, and what was
  // in force stays (each reload swaps its tables only once they are built).
  const guarded = (what: string, reload: () => unknown) => {
    try {
      reload();
    } catch (error) {
      options.logger.error({ err: error }, `${what} not reloaded, the previous ones stay live`);
    }
  };
  const onSignal = () => {
    guarded('mapping profile', () => reloadAndLog(services.mappings, options.logger));
    guarded('migration modes', () =>
      reloadModes(
        services.migration.modes,
        {
          file: options.file,
          env: options.env,
          operationIds,
          hasLegacy: services.migration.legacy !== undefined,
          running: services.loadedConfig,
          tlsAtStart: options.tlsAtStart,
        },
        options.logger,
      ),
    );
  };
  return onSignal;
}
