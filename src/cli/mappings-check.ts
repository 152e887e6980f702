import { loadConfig } from '../config/load.js';
import { mappingsFolder } from '../config/mappings-folder.js';
import { REQUIRED_OPERATIONS } from '../legacy/operations.js';
import { silentLogger } from '../lib/logger.js';
import { apiBasePath, missingOperations } from '../mapping/engine.js';
import { MappingError, type MappingProblem } from '../mapping/errors.js';
import { CONFIGURATION, checkProfileLive } from '../mapping/live-check.js';
import { loadProfile } from '../mapping/load.js';
import { buildServices } from '../services.js';
import { type Command, flag, stringOption } from './command.js';

/** `idm-compat mappings check [--live]`: validates the mapping profile, optionally against the successor. */
export const mappingsCheckCommand: Command = {
  path: ['mappings', 'check'],
  summary:
    'Validate the mapping tables; with --live also against the successor (its OpenAPI document and sample reads).',
  usage: '[--live] [--config FILE] [--json]',
  help: `Checks every file of the configured profile (mappings.dir/mappings.profile) with its JSON
Schema and cross-references, and that every legacy operation the proxy serves has an operation
table entry. With --live it also reads the successor's OpenAPI document and checks that every
mapped path, method, query parameter and attribute exists (the paging parameters on every
collection read page by page, and the readiness path, too), and reads one entity of each kind
with the mapped attributes. In sandbox mode (no config file) --live checks against a freshly started
embedded sandbox. Each problem names the mapping file, the JSON path and what is wrong (or what
the successor offers instead). Exit code 1 when there are problems.

Options:
  --live          also check against the successor
  --config FILE   configuration file (default: env IDM_COMPAT_CONFIG, else the sandbox defaults)
  --json          print {"profile", "folder", "live", "ok", "problems": [{file, path, message}]};
                  "live" is true only when the live check ran (not when the profile failed offline
                  or the successor could not be reached: that problem names the configuration
                  file and $.successor.baseUrl or $.successor.auth); a successor that answers its
                  OpenAPI document and then refuses the sample reads was checked (its one problem
                  says the sample reads were not)`,
  options: { live: { type: 'boolean' }, config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
  async run(args, io) {
    // Offline, the check connects to nothing: the file's secrets need not be in this shell.
    const config = loadConfig({
      file: stringOption(args, 'config'),
      env: io.env,
      secrets: flag(args, 'live') ? 'all' : 'none',
    });
    const folder = mappingsFolder(config);
    let problems: MappingProblem[] = [];
    let name = config.mappings.profile;
    // Whether the live check ran: a profile that fails offline is not checked against the
    // successor, and a report must not pass that off as checked.
    let live = false;
    try {
      const profile = loadProfile(folder, REQUIRED_OPERATIONS);
      name = profile.name;
      problems = missingOperations(profile, REQUIRED_OPERATIONS);
      if (flag(args, 'live') && problems.length === 0) {
        const found = await liveProblems(config, profile);
        // Checked against the successor's document unless it could not be reached (or has no IDM
        // API there); its connection's problems are the configuration file's.
        live = found.checked;
        const configFile = config.source ?? '(embedded defaults)';
        problems = found.problems.map((problem) =>
          problem.file === CONFIGURATION ? { ...problem, file: configFile } : problem,
        );
      }
    } catch (error) {
      if (!(error instanceof MappingError)) throw error;
      problems = error.problems;
    }
    if (flag(args, 'json')) {
      io.out(JSON.stringify({ profile: name, folder, live, ok: problems.length === 0, problems }));
    } else if (problems.length === 0) {
      io.out(`mapping profile ${name} (${folder}) is valid${live ? ' and matches the successor' : ''}`);
    } else {
      io.err(
        `mapping profile ${name} (${folder}): ${problems.length} problem${problems.length === 1 ? '' : 's'}`,
      );
      for (const problem of problems) io.err(`  ${problem.file} ${problem.path}: ${problem.message}`);
      if (flag(args, 'live') && !live) io.err('not checked against the successor: fix these first');
    }
    return problems.length === 0 ? 0 : 1;
  },
};

async function liveProblems(
  config: ReturnType<typeof loadConfig>,
  profile: ReturnType<typeof loadProfile>,
): Promise<{ checked: boolean; problems: MappingProblem[] }> {
  // In sandbox mode this starts a fresh embedded sandbox, as `serve` would. On a store of its own,
  // in memory: the check reads the successor only. Opening the configured one created it when it
  // was not there (an empty store that the commands refusing a missing one then took as the real
  // one), and its sample reads would give table kinds' entities IDs in it.
  const services = await buildServices(
    { ...config, store: { type: 'sqlite', path: ':memory:' } },
    { logger: silentLogger() },
  );
  try {
    return await checkProfileLive(
      profile,
      services.successor,
      apiBasePath(services.config.successor.baseUrl),
    );
  } finally {
    await services.close();
  }
}
