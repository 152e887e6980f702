import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { LEGACY_OPERATIONS, SECRET_BODIES } from '../legacy/operations.js';
import { compareRecordings } from '../migration/compare.js';
import {
  type CompareRules,
  CompareRulesError,
  DEFAULT_COMPARE_RULES_FILE,
  EXACT_RULES,
  loadCompareRules,
} from '../migration/compare-rules.js';
import { renderHtmlReport } from '../migration/html-report.js';
import { reportTable } from '../migration/report-text.js';
import {
  type Command,
  CommandError,
  flag,
  loadRecording,
  refuseInputAsOut,
  stringOption,
} from './command.js';

/** `idm-compat compare A B`: compares two recordings of the same requests, per operation. */
export const compareCommand: Command = {
  path: ['compare'],
  summary: 'Compare two recordings of the same requests: match rates per operation and differing paths.',
  usage: 'A.ndjson B.ndjson [--rules FILE | --exact] [--html REPORT.html] [--samples N] [--json]',
  help: `Pairs the exchanges of A and B (by request id within the same operation, method and path,
else in order within operation, method and path), compares status and body under the compare rules, and prints per operation the pairs,
matches, mismatches, match rate and the most frequent differing JSON paths. Without --rules the
shipped rules (mappings/compare-rules.default.json) ignore known harmless differences.
Unusable lines of A or B are listed on stderr and left out. A pair with the same status whose
answer was recorded without its body on either side (over 8 MiB or nested deeper than 64 levels:
"responseBodyOmitted") is not compared: counted as SKIPPED, in no match rate.
Exit code 0 when every pair matches, 1 when some differ or are skipped, a side has unpaired
requests or unusable lines, 2 for unusable input (also two recordings without any exchange: nothing to compare).

Options:
  --rules FILE        compare rules (JSON, see docs/migration.md) instead of the shipped ones
  --exact             no rules: every difference counts
  --html FILE         also write a self-contained HTML report with sample differences
  --samples N         sample differences kept per operation (default 5)
  --json              print {operations:[{operation,pairs,matched,mismatched,rate,onlyA,onlyB,skipped,paths,samples}],totals}

Example:
  idm-compat compare old.ndjson proxy.ndjson --html report.html`,
  options: {
    rules: { type: 'string' },
    exact: { type: 'boolean' },
    html: { type: 'string' },
    samples: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: true,
  async run(args, io) {
    const [fileA, fileB, ...rest] = args.positionals;
    if (fileA === undefined || fileB === undefined) throw new CommandError('give two recordings: A B');
    if (rest.length > 0) throw new CommandError(`two files only; unexpected: ${rest.join(' ')}`);
    const rulesFile = stringOption(args, 'rules');
    if (rulesFile !== undefined && flag(args, 'exact'))
      throw new CommandError('--rules and --exact exclude each other');
    const samplesText = stringOption(args, 'samples');
    const samples = samplesText === undefined ? 5 : Number(samplesText);
    if (!Number.isInteger(samples) || samples < 0) {
      throw new CommandError(`--samples must be an integer ≥ 0: ${samplesText}`);
    }
    let rules: CompareRules;
    try {
      rules = flag(args, 'exact')
        ? EXACT_RULES
        : loadCompareRules(
            rulesFile,
            LEGACY_OPERATIONS.map((operation) => operation.id),
          );
    } catch (error) {
      if (error instanceof CompareRulesError) throw new CommandError(error.message);
      throw error;
    }
    const a = await loadRecording(fileA, io);
    const b = await loadRecording(fileB, io);
    // Two empty recordings (a recording never switched on, say) match vacuously: not a 100 % pass.
    if (a.exchanges.length + b.exchanges.length === 0) {
      throw new CommandError(
        a.invalid + b.invalid > 0
          ? 'no usable exchanges in either recording'
          : 'no exchanges in either recording: nothing to compare',
      );
    }
    const report = compareRecordings(a.exchanges, b.exchanges, rules, { samples }, SECRET_BODIES);
    const htmlFile = stringOption(args, 'html');
    if (htmlFile !== undefined) {
      refuseInputAsOut('--html', htmlFile, [
        ['recording A', fileA],
        ['recording B', fileB],
        ['the rules file', rulesFile],
      ]);
      const page = await renderHtmlReport(report, {
        a: fileA,
        b: fileB,
        rules: flag(args, 'exact') ? 'exact (none)' : (rulesFile ?? DEFAULT_COMPARE_RULES_FILE),
        generatedAt: new Date(),
      });
      try {
        // Readable by its owner only, as replay's --out: its samples are user data (names).
        writeFileSync(htmlFile, page, { mode: 0o600 });
        // A file that was there keeps its mode on a write; not a device (/dev/stdout) or another's.
        if (statSync(htmlFile).isFile()) chmodSync(htmlFile, 0o600);
      } catch (error) {
        throw new CommandError(
          `cannot write ${htmlFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        );
      }
    }
    io.out(flag(args, 'json') ? JSON.stringify(report) : reportTable(report));
    const t = report.totals;
    // A pair not compared is no pass: its answers may differ; nor is a line left out as unusable.
    const left = a.invalid + b.invalid;
    return t.mismatched > 0 || t.onlyA > 0 || t.onlyB > 0 || (t.skipped ?? 0) > 0 || left > 0 ? 1 : 0;
  },
};
