import type { Logger } from '../lib/logger.js';
import type { MappingHolder, ReloadResult } from './engine.js';

/** Reloads the mapping tables and logs the outcome: the new profile, or every problem while the old tables stay live. */
export function reloadAndLog(holder: MappingHolder, logger: Logger): ReloadResult {
  const result = holder.reload();
  if (result.ok) {
    logger.info(
      { profile: result.profile, folder: holder.folder, files: result.files },
      'mapping profile reloaded',
    );
  } else {
    logger.error(
      { folder: holder.folder, problems: result.error.problems },
      `mapping profile not reloaded, the previous tables stay live:\n${result.error.message}`,
    );
  }
  return result;
}
