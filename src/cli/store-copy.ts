import { realpathSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type ResolvedStoreConfig } from '../config/load.js';
import { type CopyResult, CopyStopped, type CopyTableResult, copyStore } from '../store/copy.js';
import { MissingStoreError, StoreUnavailableError } from '../store/errors.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import {
  type Command,
  CommandError,
  flag,
  requireExistingStore,
  stringOption,
  terminalProgressBar,
} from './command.js';
import { nextStopSignal } from './stop-signal.js';

const TABLES: readonly { key: keyof CopyResult; label: string }[] = [
  { key: 'apiUsers', label: 'api users' },
  { key: 'idMap', label: 'id map' },
  { key: 'usage', label: 'usage' },
  { key: 'usageHourly', label: 'usage hours' },
];

/** A description of a store for output: never the PostgreSQL URL (it holds the password). */
function describeStore(config: ResolvedStoreConfig): string {
  if (config.type === 'sqlite') return `sqlite ${config.path}`;
  return config.schema === undefined ? 'postgres' : `postgres (schema ${config.schema})`;
}

function sameStore(a: ResolvedStoreConfig, b: ResolvedStoreConfig): boolean {
  if (a.type === 'sqlite' && b.type === 'sqlite') return realFile(a.path) === realFile(b.path);
  if (a.type === 'postgres' && b.type === 'postgres') return a.url === b.url && a.schema === b.schema;
  return false;
}

/** Where a SQLite path leads, through links too (a path not there yet: as written, made absolute). */
function realFile(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** Opens one side of the copy; a failure names the side and its store ("file is not a database" alone named neither). */
async function openSide(store: ResolvedStoreConfig, side: 'source' | 'target'): Promise<Store> {
  try {
    // The source is only read: one without tables is refused, not created empty.
    return await openStore(store, { retry: false, requireExisting: side === 'source' });
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    if (error instanceof MissingStoreError)
      throw new CommandError(`the ${side} store ${describeStore(store)} ${error.verb}: ${error.message}`);
    throw new CommandError(
      `cannot open the ${side} store ${describeStore(store)}: ${error instanceof Error ? error.message : String(error)}`,
      1,
    );
  }
}

function line(label: string, table: CopyTableResult): string {
  return `  ${`${label}:`.padEnd(12)} ${table.copied} copied, ${table.present} already there, ${table.differ} differ (${table.source} in the source)`;
}

/** `idm-compat store copy --from CONFIG --to CONFIG`: copies the state of one store into another. */
export const storeCopyCommand: Command = {
  path: ['store', 'copy'],
  summary: 'Copy API users, the ID mapping table and the usage inventory from one store to another.',
  usage: '--from FILE --to FILE [--json]',
  help: `Typically from the SQLite store of one box to the PostgreSQL store of several replicas
(docs/scaling.md). Both stores are named by configuration files (their "store" blocks); the target
schema is created when missing; a SQLite source file must exist. API users keep their password
hashes, ranges and last login.

Only what the target lacks is written: running the copy twice copies nothing the second time.
Rows the target already has differently (another password hash or ranges, a legacy ID mapped to
another UUID) are left as they are and listed; the exit code is 1 then. The usage inventory is
copied as it is, with its hourly counts (the dashboard's "last 24 h"); usage rows whose (API
user, operation, outcome) or hour the target already counts are left alone, so copy before the
replicas take traffic. Throttle counters, known addresses and SSO tokens are short-lived and
not copied.

Ctrl-C or SIGTERM (or a store failing part-way) stops the copy after the chunk under way: it
prints the counts so far and exits 1. What was written stays; run the same copy again to copy the
rest.

Options:
  --from FILE     configuration file of the source store
  --to FILE       configuration file of the target store
  --json          print the counts per table as JSON

Example:
  idm-compat store copy --from /etc/idm-compat/sqlite.json --to /etc/idm-compat/config.json`,
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run(args, io) {
    const fromFile = stringOption(args, 'from');
    const toFile = stringOption(args, 'to');
    if (fromFile === undefined || toFile === undefined)
      throw new CommandError('--from and --to are required');
    // Only the stores are opened: only their secrets must resolve.
    const from = loadConfig({ file: fromFile, env: io.env, secrets: 'store' }).store;
    const to = loadConfig({ file: toFile, env: io.env, secrets: 'store' }).store;
    if (sameStore(from, to)) throw new CommandError('--from and --to name the same store');
    requireExistingStore(from, fromFile, { what: 'the source store', why: '' });
    const json = flag(args, 'json');
    const bar = await terminalProgressBar(io, json, 'copying [{bar}] {value}/{total} rows');
    const stores: Store[] = [];
    // Ctrl-C or SIGTERM stops the copy after the chunk under way, and it says how far it got (a
    // second signal ends the process at once). Ended by Node's default, it said nothing, and the
    // target was left part-filled without a word.
    const interrupt = new AbortController();
    const stop = nextStopSignal();
    void stop.received.then((signal) => interrupt.abort(new Error(`interrupted (${signal})`)));
    try {
      stores.push(await openSide(from, 'source'));
      stores.push(await openSide(to, 'target'));
      const [source, target] = stores as [Store, Store];
      let result: CopyResult;
      let stopped: CopyStopped | undefined;
      try {
        result = await copyStore(source, target, {
          onStart: (total) => bar?.start(total, 0),
          onProgress: (done) => bar?.update(done),
          signal: interrupt.signal,
        });
      } catch (error) {
        if (!(error instanceof CopyStopped)) throw error;
        stopped = error;
        result = error.result;
      }
      bar?.stop();
      const differ = TABLES.reduce((sum, table) => sum + result[table.key].differ, 0);
      if (json) {
        io.out(
          JSON.stringify({
            from: describeStore(from),
            to: describeStore(to),
            tables: result,
            ...(stopped ? { stoppedAfter: stopped.done, rows: stopped.total, error: stopped.message } : {}),
          }),
        );
      } else {
        io.out(
          [
            stopped
              ? `stopped copying ${describeStore(from)} → ${describeStore(to)} after ${stopped.done} of ${stopped.total} rows`
              : `copied ${describeStore(from)} → ${describeStore(to)}`,
            ...TABLES.map((table) => line(table.label, result[table.key])),
          ].join('\n'),
        );
        for (const name of result.apiUsers.copiedNames) io.err(`  copied: API user ${name}`);
        for (const table of TABLES) {
          for (const difference of result[table.key].differences) io.err(`  differs: ${difference}`);
        }
      }
      if (stopped) {
        io.err(`error: ${stopped.message}`);
        io.err(
          'The rows counted above are in the target, the rest not. Run the same copy again to copy the rest (rows already there count as already there).',
        );
        return 1;
      }
      return differ > 0 ? 1 : 0;
    } finally {
      stop.cancel();
      bar?.stop();
      await Promise.all(stores.map((store) => store.close()));
    }
  },
};
