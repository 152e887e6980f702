import {
  ApiUserAdminError,
  type ApiUserSummary,
  addApiUser,
  listApiUsers,
  removeApiUser,
  resetApiUserPassword,
  setApiUserRanges,
  unblockApiUser,
} from '../auth/admin.js';
import type { AppConfig } from '../config/load.js';
import { systemClock } from '../lib/clock.js';
import type { Store } from '../store/types.js';
import {
  type Command,
  type CommandArgs,
  CommandError,
  type CommandIo,
  flag,
  formatTable,
  stringListOption,
  withStoreServices,
} from './command.js';

const CONFIG_HELP = `  --config FILE   configuration file naming the store (default: env IDM_COMPAT_CONFIG, else the
                  sandbox defaults, i.e. ./data/idm-compat.db)`;
const NO_STORE_HINT =
  ": no API user was ever added there (check --config or IDM_COMPAT_CONFIG; 'idm-compat apiuser add' creates it)";
const NAME_HELP = `NAME: 1-64 letters, digits, '.', '_' or '-'.`;
const RANGE_HELP = `  --range CIDR    allowed source range, IPv4 or IPv6 (repeatable), e.g. 10.0.0.0/8, 2001:db8::/32;
                  a bare address means that single host`;

/**
 * Opens the store the configuration names, runs `work`, and always closes the store again. Only
 * `apiuser add` may create a SQLite store that is not there yet (the first API user); the others
 * would create it empty and then call a mistyped store.path "no API users" or "unknown user".
 */
async function withStore<T>(
  args: CommandArgs,
  io: CommandIo,
  work: (store: Store, config: AppConfig) => Promise<T>,
  { create = false }: { create?: boolean } = {},
): Promise<T> {
  try {
    return await withStoreServices(
      args,
      io,
      ({ store, config }) => work(store, config),
      create ? {} : { existing: { what: 'the store', why: NO_STORE_HINT } },
    );
  } catch (error) {
    if (error instanceof ApiUserAdminError) throw toCommandError(error);
    throw error;
  }
}

function toCommandError(error: ApiUserAdminError): CommandError {
  // Bad input is a usage error (2); a name that exists or does not is a state error (1).
  return new CommandError(error.message, error.code === 'duplicate' || error.code === 'unknown' ? 1 : 2);
}

function nameArgument(args: CommandArgs): string {
  const [name, ...rest] = args.positionals;
  if (name === undefined) throw new CommandError('missing the API user NAME');
  if (rest.length > 0) throw new CommandError(`one NAME only; unexpected: ${rest.join(' ')}`);
  return name;
}

function printCredentials(
  io: CommandIo,
  json: boolean,
  what: string,
  credentials: { name: string; password: string; ranges: string[] },
): void {
  if (json) {
    io.out(
      JSON.stringify({ name: credentials.name, password: credentials.password, ranges: credentials.ranges }),
    );
    return;
  }
  io.out(
    [
      `${what} API user ${credentials.name}, allowed from ${credentials.ranges.join(', ')}.`,
      'Password (shown only this once):',
      `  ${credentials.password}`,
      '',
    ].join('\n'),
  );
}

/** `idm-compat apiuser add NAME --range CIDR…`: creates an API user and prints its password once. */
export const apiUserAddCommand: Command = {
  path: ['apiuser', 'add'],
  summary: 'Create an API user with a generated password (printed once).',
  usage: 'NAME --range CIDR [--range CIDR…] [--config FILE] [--json]',
  help: `${NAME_HELP}

Options:
${RANGE_HELP}
  --json          print {"name","password","ranges"}
${CONFIG_HELP}

Example:
  idm-compat apiuser add untis --range 10.20.0.0/24 --range 2001:db8:20::/64`,
  options: {
    range: { type: 'string', multiple: true, short: 'r' },
    json: { type: 'boolean' },
    config: { type: 'string', short: 'c' },
  },
  positionals: true,
  async run(args, io) {
    const name = nameArgument(args);
    const credentials = await withStore(
      args,
      io,
      (store) => addApiUser(store, systemClock, name, stringListOption(args, 'range')),
      { create: true },
    );
    printCredentials(io, flag(args, 'json'), 'Created', credentials);
    return 0;
  },
};

/** The BLOCKED cell: which counters block now and until when (`no` when none). */
function blockedCell(user: ApiUserSummary): string {
  const parts: string[] = [];
  const userBlock = user.blocks.find((block) => block.scope === 'user');
  if (userBlock) parts.push(`user until ${userBlock.until}`);
  const addressBlocks = user.blocks.filter((block) => block.scope === 'address');
  const [only] = addressBlocks;
  if (only && addressBlocks.length === 1) {
    parts.push(`${only.address} until ${only.until}`);
  } else if (addressBlocks.length > 1) {
    const last = addressBlocks.map((block) => block.until).sort()[addressBlocks.length - 1];
    parts.push(`${addressBlocks.length} addresses until ${last}`);
  }
  return parts.length > 0 ? parts.join('; ') : 'no';
}

/** `idm-compat apiuser list`: every API user with ranges, creation, last login and throttle state. */
export const apiUserListCommand: Command = {
  path: ['apiuser', 'list'],
  summary: 'List the API users: ranges, created, last login, blocks, failures, known addresses.',
  usage: '[--config FILE] [--json]',
  help: `BLOCKED says which failed-login counters refuse logins now and until when: "user" (every
address but the known ones), an address (this user from there), or "N addresses". FAILED counts
the user's failures since its last success (none once the last is older than
auth.throttle.forgetAfterSeconds and the user's block is over); KNOWN the addresses it logged in from within 30 days.
'idm-compat apiuser unblock NAME' lifts the blocks.

Options:
  --json          print a JSON array of {"name","ranges","created","lastLogin","throttled",
                  "throttledUntil","recentFailures","blocks":[{"scope","address","until",
                  "failures"}],"knownAddresses":[{"address","lastSuccess"}]}
${CONFIG_HELP}`,
  options: { json: { type: 'boolean' }, config: { type: 'string', short: 'c' } },
  async run(args, io) {
    const users = await withStore(args, io, (store, config) =>
      listApiUsers(store, systemClock, config.auth.throttle),
    );
    if (flag(args, 'json')) {
      io.out(JSON.stringify(users));
      return 0;
    }
    if (users.length === 0) {
      io.out("No API users. Create one with 'idm-compat apiuser add NAME --range CIDR'.");
      return 0;
    }
    const rows = [
      ['NAME', 'RANGES', 'CREATED', 'LAST LOGIN', 'BLOCKED', 'FAILED', 'KNOWN'],
      ...users.map((user) => [
        user.name,
        user.ranges.join(','),
        user.created,
        user.lastLogin ?? 'never',
        blockedCell(user),
        String(user.recentFailures),
        String(user.knownAddresses.length),
      ]),
    ];
    io.out(formatTable(rows));
    return 0;
  },
};

/** `idm-compat apiuser remove NAME`: deletes an API user; running servers refuse it within a second. */
export const apiUserRemoveCommand: Command = {
  path: ['apiuser', 'remove'],
  summary: 'Delete an API user (running servers refuse its credentials within a second).',
  usage: 'NAME [--config FILE]',
  help: `Options:
${CONFIG_HELP}`,
  options: { config: { type: 'string', short: 'c' } },
  positionals: true,
  async run(args, io) {
    const name = nameArgument(args);
    await withStore(args, io, (store) => removeApiUser(store, systemClock, name));
    io.out(`Removed API user ${name}.`);
    return 0;
  },
};

/** `idm-compat apiuser reset-password NAME`: a new generated password, printed once. */
export const apiUserResetPasswordCommand: Command = {
  path: ['apiuser', 'reset-password'],
  summary:
    'Give an API user a new generated password (printed once); the old one stops working within a second.',
  usage: 'NAME [--config FILE] [--json]',
  help: `Also clears the user's failed-login counters.

Options:
  --json          print {"name","password","ranges"}
${CONFIG_HELP}`,
  options: { json: { type: 'boolean' }, config: { type: 'string', short: 'c' } },
  positionals: true,
  async run(args, io) {
    const name = nameArgument(args);
    const credentials = await withStore(args, io, (store) => resetApiUserPassword(store, name));
    printCredentials(io, flag(args, 'json'), 'New password for', credentials);
    return 0;
  },
};

/** `idm-compat apiuser unblock NAME`: clears the user's failed-login counters. */
export const apiUserUnblockCommand: Command = {
  path: ['apiuser', 'unblock'],
  summary: "Clear an API user's failed-login counters: its blocks end at once, also for running servers.",
  usage: 'NAME [--config FILE] [--json]',
  help: `Clears the counters per user and per user and address (what 'apiuser list' shows as BLOCKED
and FAILED); the known addresses and the password stay. Failures with unknown names from an
address are not the user's and stay counted.

Options:
  --json          print {"name","cleared"} (the number of counters removed)
${CONFIG_HELP}`,
  options: { json: { type: 'boolean' }, config: { type: 'string', short: 'c' } },
  positionals: true,
  async run(args, io) {
    const name = nameArgument(args);
    const cleared = await withStore(args, io, (store) => unblockApiUser(store, name));
    io.out(
      flag(args, 'json')
        ? JSON.stringify({ name, cleared })
        : `Cleared ${cleared} failed-login counter${cleared === 1 ? '' : 's'} of API user ${name}.`,
    );
    return 0;
  },
};

/** `idm-compat apiuser set-ranges NAME --range CIDR…`: replaces the allowed source ranges. */
export const apiUserSetRangesCommand: Command = {
  path: ['apiuser', 'set-ranges'],
  summary: "Replace an API user's allowed source ranges.",
  usage: 'NAME --range CIDR [--range CIDR…] [--config FILE] [--json]',
  help: `Options:
${RANGE_HELP}
  --json          print {"name","ranges"}
${CONFIG_HELP}`,
  options: {
    range: { type: 'string', multiple: true, short: 'r' },
    json: { type: 'boolean' },
    config: { type: 'string', short: 'c' },
  },
  positionals: true,
  async run(args, io) {
    const name = nameArgument(args);
    const ranges = await withStore(args, io, (store) =>
      setApiUserRanges(store, name, stringListOption(args, 'range')),
    );
    io.out(
      flag(args, 'json')
        ? JSON.stringify({ name, ranges })
        : `API user ${name} is now allowed from ${ranges.join(', ')}.`,
    );
    return 0;
  },
};

/** Every `apiuser` command, in the order `idm-compat --help` lists them. */
export const API_USER_COMMANDS: readonly Command[] = [
  apiUserAddCommand,
  apiUserListCommand,
  apiUserRemoveCommand,
  apiUserResetPasswordCommand,
  apiUserSetRangesCommand,
  apiUserUnblockCommand,
];
