import { readFileSync, writeFileSync } from 'node:fs';
import { loadConfig } from '../config/load.js';
import { mappingsFolder } from '../config/mappings-folder.js';
import { systemClock } from '../lib/clock.js';
import { silentLogger } from '../lib/logger.js';
import { utf8Text } from '../lib/utf8-text.js';
import {
  IdImportStopped,
  type IdImportSummary,
  idRowsToCsv,
  importIdCsv,
  unknownKind,
} from '../mapping/id-import.js';
import { loadProfile } from '../mapping/load.js';
import { buildServices } from '../services.js';
import {
  type Command,
  CommandError,
  flag,
  refuseInputAsOut,
  stringOption,
  terminalProgressBar,
  withStoreServices,
} from './command.js';
import { nextStopSignal } from './stop-signal.js';

const CONFIG_HELP = `  --config FILE   configuration file naming the store and the mapping profile (default: env
                  IDM_COMPAT_CONFIG, else the sandbox defaults)`;

/** `idm-compat ids import FILE.csv`: fills the ID mapping table (the `table` ID strategy) from a CSV file. */
export const idsImportCommand: Command = {
  path: ['ids', 'import'],
  summary: 'Import legacy ID ↔ successor UUID rows from a CSV file into the ID mapping table.',
  usage: 'FILE.csv [--kind KIND] [--config FILE] [--json]',
  help: `The CSV (UTF-8, a BOM allowed; other encodings are refused) needs a header: kind,legacy_id,uuid
(kind may be left out with --kind). UUIDs may be dashed or base58. A row whose legacy ID exists with another UUID is changed; a UUID listed under a
new legacy ID moves there. Bad rows (unknown kind, empty ID, not a UUID, duplicates within the file)
are rejected and listed with their line numbers; the good rows are imported. Exit code 1 when any
row was rejected, or when the store failed while writing: the rows are written in transactions of
500, those written before the failure stay imported and are counted, and running the same import
again writes the rest. Exit code 2 when the file or --kind cannot be used (nothing imported).

Options:
  --kind KIND     entity kind of every row (user, group, role, privilege, flag, …)
${CONFIG_HELP}
  --json          print the summary as JSON

Example:
  idm-compat ids import groups.csv --kind group`,
  options: { kind: { type: 'string' }, config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
  positionals: true,
  async run(args, io) {
    const [file, ...rest] = args.positionals;
    if (file === undefined) throw new CommandError('missing the CSV FILE');
    if (rest.length > 0) throw new CommandError(`one FILE only; unexpected: ${rest.join(' ')}`);
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch (error) {
      throw new CommandError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const text = csvText(file, bytes);
    const config = loadConfig({ file: stringOption(args, 'config'), env: io.env, secrets: 'store' });
    const profile = loadProfile(mappingsFolder(config));
    const services = await buildServices(config, { logger: silentLogger(), scope: 'store' });
    const { store } = services;
    const bar = await terminalProgressBar(io, flag(args, 'json'), 'importing [{bar}] {value}/{total} rows');
    // Ctrl-C or SIGTERM stops the writes after the chunk under way, and the import says how far it
    // got (a second signal ends the process at once). Ended by Node's default, it said nothing.
    const interrupt = new AbortController();
    const stop = nextStopSignal();
    void stop.received.then((signal) => interrupt.abort(new Error(`interrupted (${signal})`)));
    try {
      let summary: IdImportSummary;
      let stopped: IdImportStopped | undefined;
      try {
        summary = await importIdCsv({
          text,
          profile,
          idMap: store.idMap,
          now: systemClock.now(),
          defaultKind: stringOption(args, 'kind'),
          onStart: (rows) => bar?.start(rows, 0),
          onProgress: (done) => bar?.update(done),
          signal: interrupt.signal,
        });
      } catch (error) {
        // A file or kind that cannot be used: nothing was written (exit 2). A store failure while
        // writing: what was written before stays, and is reported (exit 1).
        if (!(error instanceof IdImportStopped))
          throw new CommandError(error instanceof Error ? error.message : String(error));
        stopped = error;
        summary = error.summary;
      }
      bar?.stop();
      if (flag(args, 'json')) {
        io.out(
          JSON.stringify({
            file,
            ...summary,
            rejected: summary.rejected.length,
            rejections: summary.rejected,
            ...(stopped
              ? { stoppedAfter: stopped.written, toWrite: stopped.toWrite, error: stopped.message }
              : {}),
          }),
        );
      } else {
        const end = stopped ? `; stopped after ${stopped.written} of ${stopped.toWrite} rows to write` : '';
        io.out(
          `${file}: ${summary.added} added, ${summary.changed} changed, ${summary.unchanged} unchanged, ${summary.rejected.length} rejected (${summary.rows} rows${end})`,
        );
        for (const row of summary.rejected.slice(0, 50)) io.err(`  line ${row.line}: ${row.reason}`);
        if (summary.rejected.length > 50)
          io.err(`  … and ${summary.rejected.length - 50} more rejected rows`);
        for (const row of summary.warnings.slice(0, 50)) io.err(`  warning, line ${row.line}: ${row.reason}`);
        if (summary.warnings.length > 50) io.err(`  … and ${summary.warnings.length - 50} more warnings`);
        for (const kind of summary.notTableKinds) {
          io.err(
            `note: kind ${kind} does not use the table ID strategy in profile ${profile.name}; its rows are kept for later`,
          );
        }
      }
      if (stopped) {
        io.err(`error: ${stopped.message}`);
        io.err(
          interrupt.signal.aborted
            ? 'The rows written before are imported, the rest not: the table is part old, part new (a legacy ID whose UUID moved to a row written may have no row until then). Run the same import again to write the rest (rows already there count as unchanged).'
            : 'The rows written before are imported; once the error above is resolved, run the same import again to write the rest (rows already there count as unchanged).',
        );
        return 1;
      }
      return summary.rejected.length > 0 ? 1 : 0;
    } finally {
      stop.cancel();
      bar?.stop();
      await services.close();
    }
  },
};

/**
 * The text of a CSV file, which must be UTF-8 (a BOM is allowed). Any other bytes are refused
 * (exit 2, nothing imported): read as UTF-8 they would become U+FFFD, and a Windows-1252 `ü`
 * (Excel's "CSV (Comma delimited)") would be imported as the legacy ID `m\uFFFDller`, which no
 * legacy call ever names.
 */
function csvText(file: string, bytes: Buffer): string {
  const read = utf8Text(bytes);
  if ('problem' in read)
    throw new CommandError(`${file} ${read.problem} (e.g. Excel's "CSV UTF-8"): nothing imported`);
  return read.text;
}

/** `idm-compat ids export`: writes the ID mapping table as CSV (or JSON). */
export const idsExportCommand: Command = {
  path: ['ids', 'export'],
  summary: 'Write the ID mapping table as CSV (kind,legacy_id,uuid,source,updated_at) or JSON.',
  usage: '[--kind KIND] [--output FILE] [--config FILE] [--json]',
  help: `A --kind without rows that the mapping profile does not have either (a typo, or User for
user) is refused with exit code 2, as ids import refuses it, rather than exported as an empty
table. Rows of a kind the profile no longer has are exported; the profile is read only then.

Options:
  --kind KIND     only rows of this kind (user, group, role, privilege, flag, …)
  --output FILE   write to FILE instead of standard output
${CONFIG_HELP}
  --json          JSON array instead of CSV`,
  options: {
    kind: { type: 'string' },
    output: { type: 'string', short: 'o' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
  },
  async run(args, io) {
    // Not created empty: a mistyped store.path would export an empty table as if it were the real one.
    const existing = { what: 'the store', why: ' (check --config or IDM_COMPAT_CONFIG)' };
    return withStoreServices(
      args,
      io,
      async ({ config, store }) => {
        const output = stringOption(args, 'output');
        // One mistyped or completed path would turn the store into a CSV file.
        if (output !== undefined && config.store.type === 'sqlite') {
          const file = config.store.path;
          refuseInputAsOut('--output', output, [
            ['the store (store.path)', file],
            ["the store's write-ahead log", `${file}-wal`],
            ["the store's shared memory", `${file}-shm`],
          ]);
        }
        const kind = stringOption(args, 'kind');
        const rows = await store.idMap.list(kind);
        // An unknown kind has no rows: its empty table, exit 0, read as "nothing imported yet". So a
        // kind without rows is looked up in the mapping profile; rows of a kind the profile no longer
        // has are exported all the same, and so is everything when the profile cannot be read
        // (exporting needs no mapping tables: it is a backup).
        if (kind !== undefined && rows.length === 0) {
          let profile: ReturnType<typeof loadProfile> | undefined;
          try {
            profile = loadProfile(mappingsFolder(config));
          } catch (error) {
            io.err(
              `note: no rows of kind ${kind}, and the kind could not be checked against the mapping profile: ${oneLine(error instanceof Error ? error.message : String(error))}`,
            );
          }
          const kindProblem = profile ? unknownKind(profile, kind) : undefined;
          if (kindProblem !== undefined) throw new CommandError(kindProblem);
        }
        const text = flag(args, 'json')
          ? `${JSON.stringify(rows.map((row) => ({ ...row, updatedAt: new Date(row.updatedAt).toISOString() })))}\n`
          : idRowsToCsv(rows);
        if (output === undefined) io.out(text);
        else {
          writeFileSync(output, text);
          io.err(`wrote ${rows.length} rows to ${output}`);
        }
        return 0;
      },
      { existing },
    );
  },
};

/** A message of several lines (a heading, then its problems) on one line. */
function oneLine(message: string): string {
  return message
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ');
}
