import { ConfigError, loadConfig } from '../config/load.js';
import { mappingsFolder } from '../config/mappings-folder.js';
import { checkOperationReferences } from '../config/references.js';
import { loadTlsFiles } from '../config/tls.js';
import { configWarnings } from '../config/warnings.js';
import { LEGACY_OPERATIONS, REQUIRED_OPERATIONS } from '../legacy/operations.js';
import { loadServingProfile } from '../mapping/engine.js';
import { MappingError } from '../mapping/errors.js';

import { shadowCompareRules } from '../migration/compare-rules.js';
import { checkRecordingPath } from '../migration/recording.js';
import { type Command, type CommandArgs, type CommandIo, flag, stringOption } from './command.js';

/** `idm-compat config check`: validates a configuration file without starting anything. */
export const configCheckCommand: Command = {
  path: ['config', 'check'],
  summary: 'Validate a configuration file (and resolve its secrets) without starting the proxy.',
  usage: '[--config FILE] [--json]',
  options: { config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
  async run(args, io) {
    try {
      return await check(args, io);
    } catch (error) {
      // --json: a script gets its verdict on stdout for an invalid file too (the error as ever on
      // stderr); not for a failure of the check itself.
      if (flag(args, 'json') && (error instanceof ConfigError || error instanceof MappingError)) {
        const file = stringOption(args, 'config') ?? (io.env.IDM_COMPAT_CONFIG || null);
        io.out(JSON.stringify({ file, valid: false, problems: problemsOf(error) }));
      }
      throw error;
    }
  },
};

/** An invalid configuration's problems as the JSON answer lists them: `{path, message}`, with `file` for a mapping table's. */
function problemsOf(error: ConfigError | MappingError): { file?: string; path: string; message: string }[] {
  if (error instanceof ConfigError) return error.problems.map(({ path, message }) => ({ path, message }));
  return error.problems.map(({ file, path, message }) => ({ file, path, message }));
}

/** Loads and checks everything `serve` would at start; the summary on stdout. */
async function check(args: CommandArgs, io: CommandIo): Promise<number> {
  const config = loadConfig({ file: stringOption(args, 'config'), env: io.env });
  const operationIds = LEGACY_OPERATIONS.map((operation) => operation.id);
  checkOperationReferences(config, operationIds);
  // The files `serve` reads at start besides this one (buildServices): exit 2 naming the key.
  shadowCompareRules(config, operationIds);
  checkRecordingPath(config);
  loadTlsFiles(config);
  // Sandbox mode's fixture, read as serve reads it (loaded only then: production never loads the sandbox).
  if (config.mode === 'sandbox' && config.sandbox.fixture !== undefined)
    (await import('../embedded-sandbox.js')).sandboxFixture(config);
  // And the mapping profile, as serve loads it: every table valid, every served operation mapped
  // (a MappingError, exit 2 with file, JSON path and reason; `mappings check --live` goes further).
  loadServingProfile(mappingsFolder(config), REQUIRED_OPERATIONS);
  const warnings = configWarnings(config);
  const summary = { file: config.source ?? null, mode: config.mode, valid: true, warnings };
  if (flag(args, 'json')) io.out(JSON.stringify(summary));
  else {
    io.out(`${summary.file ?? '(embedded defaults)'}: valid (${config.mode} mode)`);
    for (const warning of warnings) io.err(`warning: ${warning.path}: ${warning.message}`);
  }
  return 0;
}
