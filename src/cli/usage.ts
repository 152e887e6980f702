import { LEGACY_OPERATIONS } from '../legacy/operations.js';
import { closest } from '../lib/closest.js';
import type { UsageCount } from '../store/usage.js';
import { type Command, CommandError, flag, formatTable, stringOption, withStoreServices } from './command.js';

const LEGACY_OPERATION_IDS = LEGACY_OPERATIONS.map((operation) => operation.id);

const RELATIVE = /^(\d{1,6})([dhm])$/;
const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000 } as const;

/**
 * `--since`: an ISO date (midnight UTC), a date-time with its offset (`Z`, `+02:00`), or a span
 * back from now such as `30d`, `12h`, `90m`.
 */
export function parseSince(text: string, now: number): number {
  const relative = RELATIVE.exec(text);
  if (relative?.[1] && relative[2])
    return now - Number(relative[1]) * UNIT_MS[relative[2] as keyof typeof UNIT_MS];
  if (/^\d+[dhm]$/.test(text))
    throw new CommandError(
      `--since: a span of at most 999999 days, hours or minutes (30d, 12h, 90m): ${text}`,
    );
  // A date-time without an offset would be read in this machine's time zone (JavaScript's rule),
  // while a bare date is midnight UTC and every time printed is UTC: 08:00 on a server in Berlin
  // silently meant 06:00Z. It is refused rather than guessed.
  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text)) {
    throw new CommandError(
      `--since: give the date-time's offset, Z for UTC as printed (2026-09-01T08:00:00Z) or the local one (2026-09-01T08:00:00+02:00): ${text}`,
    );
  }
  // Date.parse rolls an impossible day over (2026-02-30 is 2 March): the day must exist.
  const at =
    /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text) && isCalendarDay(text.slice(0, 10))
      ? Date.parse(text)
      : Number.NaN;
  if (Number.isNaN(at)) {
    throw new CommandError(
      `--since: not a date (2026-09-01, 2026-09-01T08:00:00Z) or a span (30d, 12h, 90m): ${text}`,
    );
  }
  return at;
}

/** Whether `YYYY-MM-DD` names a day of the calendar. */
function isCalendarDay(day: string): boolean {
  const [year, month, date] = day.split('-').map(Number);
  if (year === undefined || month === undefined || date === undefined) return false;
  return new Date(Date.UTC(year, month - 1, date)).toISOString().slice(0, 10) === day;
}

/**
 * How the table shows the requests refused before an API user was known (no or wrong credentials,
 * throttled), counted under the empty name; `--user` takes it for them too. No API user can be
 * named so (API_USER_NAME has no parentheses).
 */
const NO_API_USER = '(none)';

/** `idm-compat usage`: the usage inventory — which API users call which legacy operations. */
export const usageCommand: Command = {
  path: ['usage'],
  summary:
    'Show the usage inventory: calls per API user, legacy operation and outcome; --unused: what nobody calls.',
  usage: '[--user NAME] [--operation ID] [--since WHEN] [--unused] [--config FILE] [--json]',
  help: `Every request the proxy answers is counted per (API user, legacy operation, outcome class 2xx/
4xx/5xx) with first and last seen. Requests refused before an API user was known (no or wrong
credentials) count under the empty user (one refused for its address, under its API user), paths
that name no operation under "unknown". The running proxy writes its counts every usage.flushIntervalSeconds (default 5) and at shutdown.

Options:
  --user NAME       only this API user; a name that is no API user and has no rows is refused (exit 2);
                    "(none)" (or "") the requests refused before an API user was known
  --operation ID    only this operation (e.g. user.list, group.link.users.add); a name that is no
                    operation and has no rows is refused (exit 2)
  --since WHEN      only rows last seen since WHEN: 2026-09-01 (midnight UTC), 2026-09-01T08:00:00Z
                    (a date-time needs its offset: Z or +02:00), or 30d/12h/90m ago
  --unused          list the legacy operations no API user called (in the window): what can be retired;
                    stderr says since when the store counts calls (its first counted call)
  --config FILE     configuration file naming the store (default: env IDM_COMPAT_CONFIG, else the
                    sandbox defaults)
  --json            rows as [{"apiUser","operation","outcome","count","firstSeen","lastSeen"}];
                    with --unused [{"operation","method","path"}]

Examples:
  idm-compat usage --since 30d
  idm-compat usage --unused --since 90d --json`,
  options: {
    user: { type: 'string' },
    operation: { type: 'string' },
    since: { type: 'string' },
    unused: { type: 'boolean' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
  },
  async run(args, io) {
    const given = stringOption(args, 'user');
    const user = given === NO_API_USER ? '' : given;
    const operation = stringOption(args, 'operation');
    const sinceText = stringOption(args, 'since');
    if (flag(args, 'unused') && operation !== undefined) {
      throw new CommandError('--unused lists operations; it does not go with --operation');
    }
    const { rows, since, countedSince } = await withStoreServices(
      args,
      io,
      async ({ store, clock }) => {
        const since = sinceText === undefined ? undefined : parseSince(sinceText, clock.now());
        const rows = await store.usage.list({
          ...(user === undefined ? {} : { apiUser: user }),
          ...(operation === undefined ? {} : { operation }),
          ...(since === undefined ? {} : { since }),
        });
        // Since when the store counts at all: its first counted call (any user, any outcome).
        const all =
          flag(args, 'unused') || (user !== undefined && rows.length === 0) ? await store.usage.list() : [];
        // A loop, not Math.min(...rows): an inventory of many rows would overflow the call's arguments.
        let countedSince: number | undefined;
        for (const row of all)
          if (countedSince === undefined || row.firstSeen < countedSince) countedSince = row.firstSeen;
        // A misspelt API user has no rows either: "no recorded usage", and with --unused every
        // operation, read as "this integration calls nothing". One that is no API user and was
        // never counted (in any window) is refused, with the closest names.
        if (user && rows.length === 0 && !all.some((row) => row.apiUser === user)) {
          const apiUsers = (await store.apiUsers.list()).map((record) => record.name);
          if (!apiUsers.includes(user)) {
            // Suggested among the API users and the names counted (of users removed since, too).
            const counted = all.map((row) => row.apiUser).filter((name) => name !== '');
            const near = closest(user, [...new Set([...apiUsers, ...counted])]);
            throw new CommandError(
              `no API user is named "${user}", and no calls were counted under it; ${near.length === 0 ? 'this store knows no API user' : `closest: ${near.join(', ')}`}`,
            );
          }
        }
        return { rows, since, countedSince };
      },
      // Not created empty: --unused would then call every operation unused, i.e. retirable.
      {
        existing: {
          what: 'the store',
          why: ': no proxy has counted usage in it (check --config or IDM_COMPAT_CONFIG)',
        },
      },
    );
    // A misspelt operation has no rows: "no recorded usage" would read as "nobody calls it". A
    // name that is no legacy operation and has no rows is refused (other names the inventory
    // counts under, such as unknown, have rows when they were counted).
    if (operation !== undefined && rows.length === 0 && !LEGACY_OPERATION_IDS.includes(operation)) {
      throw new CommandError(
        `no legacy operation is named "${operation}", and no calls were counted under it; closest: ${closest(operation, LEGACY_OPERATION_IDS).join(', ')}`,
      );
    }
    if (flag(args, 'unused')) {
      io.err(countedNote(countedSince, since));
      return printUnused(rows, flag(args, 'json'), io.out);
    }
    if (flag(args, 'json')) {
      io.out(JSON.stringify(rows.map(toJson)));
      return 0;
    }
    if (rows.length === 0) {
      io.out('No recorded usage (in this window).');
      return 0;
    }
    io.out(
      formatTable([
        ['OPERATION', 'API USER', 'OUTCOME', 'COUNT', 'FIRST SEEN', 'LAST SEEN'],
        ...rows.map((row) => {
          const json = toJson(row);
          return [
            row.operation,
            row.apiUser || NO_API_USER,
            row.outcome,
            String(row.count),
            json.firstSeen,
            json.lastSeen,
          ];
        }),
      ]),
    );
    return 0;
  },
};

function toJson(row: UsageCount) {
  return {
    apiUser: row.apiUser,
    operation: row.operation,
    outcome: row.outcome,
    count: row.count,
    firstSeen: new Date(row.firstSeen).toISOString(),
    lastSeen: new Date(row.lastSeen).toISOString(),
  };
}

/**
 * What an unused operation means, on stderr with --unused: since when this store counts calls at
 * all (its first counted call). A window that starts before that is shorter than asked, and an
 * operation called once a quarter is not unused because the inventory is a week old.
 */
function countedNote(countedSince: number | undefined, since: number | undefined): string {
  if (countedSince === undefined)
    return 'note: this store has counted no call yet: every operation is listed, none is known to be unused';
  const first = new Date(countedSince).toISOString();
  if (since !== undefined && since < countedSince)
    return `note: this store counts calls since ${first} (its first counted call), not since ${new Date(since).toISOString()}: the window is shorter than asked`;
  return `note: this store counts calls since ${first} (its first counted call)`;
}

/** The legacy operations without a call by any API user among `rows`; refused anonymous calls do not count. */
function printUnused(rows: readonly UsageCount[], json: boolean, out: (text: string) => void): number {
  const used = new Set(rows.filter((row) => row.apiUser !== '').map((row) => row.operation));
  const unused = LEGACY_OPERATIONS.filter((operation) => !used.has(operation.id)).map((operation) => ({
    operation: operation.id,
    method: operation.method.toUpperCase(),
    path: operation.path,
  }));
  if (json) out(JSON.stringify(unused));
  else if (unused.length === 0) out('Every legacy operation was called (in this window).');
  else
    out(
      formatTable([['OPERATION', 'METHOD', 'PATH'], ...unused.map((u) => [u.operation, u.method, u.path])]),
    );
  return 0;
}
