import type { Logger } from './lib/logger.js';
import { reloadAndLog } from './mapping/reload.js';
import { reloadModes } from './migration/reload.js';
import type { Services } from './services.js';

/**
 * Reloads the mapping tables and the migration modes (from the configuration file) whenever the
 * process gets `signal` (SIGHUP): what `serve` installs. A broken file is logged and what was in
 * force stays. Returns a function that stops listening.
 */
export function reloadOnSignal(
  services: Services,
  options: { file: string | undefined; env: NodeJS.ProcessEnv; logger: Logger },
  signal: NodeJS.Signals = 'SIGHUP',
): () => void {
  const operationIds = [...services.migration.modes.current().entries()].map(([id]) => id);
  const onSignal = () => {
    reloadAndLog(services.mappings, options.logger);
    reloadModes(
      services.migration.modes,
      {
        file: options.file,
        env: options.env,
        operationIds,
        hasLegacy: services.migration.legacy !== undefined,
      },
      options.logger,
    );
  };
  process.on(signal, onSignal);
  return () => process.off(signal, onSignal);
}
