import { reportTable } from '../migration/report-text.js';
import { shadowReport } from '../migration/shadow-report.js';
import { type Command, flag, stringOption, withStoreServices } from './command.js';
import { parseSince } from './usage.js';

/** `idm-compat shadow report`: what the shadow comparisons found, per operation. */
export const shadowReportCommand: Command = {
  path: ['shadow', 'report'],
  summary:
    'Show the shadow comparisons: match rates, differing paths, errors and skipped calls per operation.',
  usage: '[--since WHEN] [--config FILE] [--json]',
  help: `In shadow mode the proxy answers from the old server and compares, in the background, what
the translation would have answered (docs/migration.md). This prints per operation the comparisons
made (pairs), matches, mismatches, the match rate, errors (the translation failed or timed out)
and skipped calls (not sampled, writes, over migration.shadow.maxConcurrent, or an answer of the
old server larger than 32 MiB), with the most frequent differing JSON paths. The running proxy writes its outcomes every few seconds and at
shutdown. A SQLite store file that does not exist is refused (exit code 2), not created empty.

Options:
  --since WHEN    only outcomes since WHEN (hour precision): 2026-09-01 (UTC), 2026-09-01T08:00:00Z
                  (a date-time needs its offset), 30d, 12h
  --config FILE   configuration file naming the store (default: env IDM_COMPAT_CONFIG, else the
                  sandbox defaults)
  --json          {"operations":[{operation,pairs,matched,mismatched,rate,errors,skipped,
                  paths:[{path,count}],samples}],"totals":{…}} — the shape of compare --json`,
  options: { since: { type: 'string' }, config: { type: 'string', short: 'c' }, json: { type: 'boolean' } },
  async run(args, io) {
    const sinceText = stringOption(args, 'since');
    const report = await withStoreServices(
      args,
      io,
      ({ store, clock }) =>
        shadowReport(
          store.shadow,
          sinceText === undefined ? {} : { since: parseSince(sinceText, clock.now()) },
        ),
      // Not created empty: "No shadow outcomes recorded" would read as "shadow found nothing".
      {
        existing: {
          what: 'the store',
          why: ': no proxy has recorded shadow outcomes in it (check --config or IDM_COMPAT_CONFIG)',
        },
      },
    );
    if (flag(args, 'json')) {
      const { errorSamples: _errors, ...shape } = report;
      io.out(JSON.stringify(shape));
      return 0;
    }
    if (report.operations.length === 0) {
      io.out('No shadow outcomes recorded (in this window).');
      return 0;
    }
    io.out(reportTable(report));
    for (const error of report.errorSamples.slice(0, 5))
      io.out(
        `error ${error.operation} ${error.at} ${error.requestId}: ${(error.detail as { error?: string }).error ?? ''}`,
      );
    return 0;
  },
};
