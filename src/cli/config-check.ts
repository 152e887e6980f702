import { loadConfig } from '../config/load.js';
import { mappingsFolder } from '../config/mappings-folder.js';
import { checkOperationReferences } from '../config/references.js';
import { loadTlsFiles } from '../config/tls.js';
import { LEGACY_OPERATIONS, REQUIRED_OPERATIONS } from '../legacy/operations.js';
import { loadServingProfile } from '../mapping/engine.js';

import { shadowCompareRules } from '../migration/compare-rules.js';
import { checkRecordingPath } from '../migration/recording.js';
import { type Command, flag, stringOption } from './command.js';

/** `idm-compat config check`: validates a configuration file without starting anything. */
export const configCheckCommand: Command = {
  path: ['config', 'check'],
  summary: 'Validate a configuration file (and resolve its secrets) without starting the proxy.',
  usage: '[--config FILE] [--json]',
  options: { config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
  async run(args, io) {
    const config = loadConfig({ file: stringOption(args, 'config'), env: io.env });
    checkOperationReferences(
      config,
      LEGACY_OPERATIONS.map((operation) => operation.id),
    );
    // The files `serve` reads at start besides this one (buildServices): exit 2 naming the key.
    shadowCompareRules(config);
    checkRecordingPath(config);
    loadTlsFiles(config);
    // And the mapping profile, as serve loads it: every table valid, every served operation mapped
    // (a MappingError, exit 2 with file, JSON path and reason; `mappings check --live` goes further).
    loadServingProfile(mappingsFolder(config), REQUIRED_OPERATIONS);
    const summary = { file: config.source ?? null, mode: config.mode, valid: true };
    io.out(
      flag(args, 'json')
        ? JSON.stringify(summary)
        : `${summary.file ?? '(embedded defaults)'}: valid (${config.mode} mode)`,
    );
    return 0;
  },
};
