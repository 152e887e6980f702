import { unknownPatterns } from '../lib/operation-patterns.js';
import { type AppConfig, ConfigError } from './load.js';

/**
 * Checks the configuration's references to legacy operations (deprecation, migration modes and
 * recording) against the ids the proxy serves; throws a ConfigError with every JSON path that
 * names or matches no operation. Run at start-up and by `idm-compat config check`.
 */
export function checkOperationReferences(config: AppConfig, operationIds: readonly string[]): void {
  const problems = [
    ...unknownPatterns(
      Object.keys(config.deprecation.operations),
      operationIds,
      (p) => `deprecation.operations.${p}`,
    ),
    ...unknownPatterns(Object.keys(config.migration.modes), operationIds, (p) => `migration.modes.${p}`),
    ...unknownPatterns(
      config.migration.recording?.operations ?? [],
      operationIds,
      (p) => `migration.recording.operations.${p}`,
    ),
  ];
  if (problems.length > 0) throw new ConfigError(config.source ?? '(embedded defaults)', problems);
}
