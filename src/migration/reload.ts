import { changedKeys } from '../config/changes.js';
import { type AppConfig, ConfigError, loadConfig } from '../config/load.js';
import { checkOperationReferences } from '../config/references.js';
import { loadTlsFiles, tlsFingerprint } from '../config/tls.js';
import type { Logger } from '../lib/logger.js';
import { type ModeHolder, ModeTable } from './modes.js';

/** Keys a reload applies (`migration.modes`) or that are no settings (the mode, the file, `$schema`). */
const RELOADED_OR_DERIVED = new Set(['migration.modes', 'mode', 'source', '$schema']);

/**
 * Reads `migration.modes` from the configuration file again and puts them in force as a whole;
 * on any problem (invalid file, unknown operation, a mode that needs the old server when none is
 * configured) the current modes stay and the problems are logged. In-flight requests keep the
 * mode they started with. Without a file (sandbox defaults) there is nothing to reload. Any other
 * key of the file changed since start-up (`running`) takes a restart: a warning names those keys
 * (never their values), so an operator does not take them for applied.
 */
export function reloadModes(
  holder: ModeHolder,
  options: {
    file: string | undefined;
    env: NodeJS.ProcessEnv;
    operationIds: readonly string[];
    hasLegacy: boolean;
    /** The configuration the process started with. */
    running: AppConfig;
    /** `tlsDigest` of the certificate and key the server serves (undefined: plain HTTP). */
    tlsAtStart: string | undefined;
  },
  logger: Logger,
): boolean {
  if (options.file === undefined) return false;
  try {
    const config = loadConfig({ file: options.file, env: options.env });
    checkOperationReferences(config, options.operationIds);
    if (!options.hasLegacy && Object.values(config.migration.modes).some((mode) => mode !== 'translate')) {
      throw new ConfigError(options.file, [
        {
          path: 'migration.legacy',
          message: 'was not configured at start-up; adding the old server needs a restart',
        },
      ]);
    }
    const table = new ModeTable(config.migration.modes, options.operationIds);
    holder.replace(table);
    logger.info({ modes: config.migration.modes }, 'migration modes reloaded');
    const notApplied = changedKeys(options.running, config).filter((key) => !RELOADED_OR_DERIVED.has(key));
    // The same file names with new contents (a renewed certificate): the server keeps its own.
    if (!notApplied.includes('server.tls') && tlsFingerprint(config) !== options.tlsAtStart)
      notApplied.push('server.tls');
    // Files a restart would refuse (a key not of the certificate, a file gone) are said to be so:
    // "restart to apply" would lead into an outage.
    if (notApplied.includes('server.tls') && !tlsUsable(config, logger))
      notApplied.splice(notApplied.indexOf('server.tls'), 1);
    if (notApplied.length > 0)
      logger.warn(
        { notApplied },
        `configuration changed where a reload does not apply it; restart to apply: ${notApplied.join(', ')}`,
      );
    return true;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    logger.error(
      { problems: error.problems },
      `migration modes not reloaded, the previous modes stay in force:\n${error.message}`,
    );
    return false;
  }
}

/**
 * Whether the configuration's certificate files can serve HTTPS, as start-up checks them; when
 * not, an error line says so and that a restart would be refused, the server serving on with the
 * certificate it started with.
 */
function tlsUsable(config: AppConfig, logger: Logger): boolean {
  try {
    loadTlsFiles(config);
    return true;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    logger.error(
      { problems: error.problems },
      `server.tls changed and a restart would refuse it; the server serves on with the certificate it started with:\n${error.message}`,
    );
    return false;
  }
}
