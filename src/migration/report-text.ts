import type { CompareReport } from './report.js';

/**
 * A match rate in per cent with one decimal, rounded down: 9,999 of 10,000 is `99.9`, never
 * `100.0`, which only a rate of 1 (every pair matched) gives. Rounded to nearest, a rate would
 * read as complete while something still differs, and a cut-over would be decided on it.
 */
export function ratePercent(rate: number): string {
  if (rate >= 1) return '100.0';
  return (Math.min(999, Math.floor(rate * 1000)) / 10).toFixed(1);
}

/** A match rate as shown to people: `99.6 %` (rounded down, {@link ratePercent}), `–` without pairs. */
export function formatRate(rate: number | null): string {
  return rate === null ? '–' : `${ratePercent(rate)} %`;
}

/**
 * A report as a plain-text table (one row per operation, then TOTAL) followed by each
 * operation's most frequent differing paths. Shadow reports get an ERRORS column; reports that
 * count requests not compared (compare's and shadow's) a SKIPPED column.
 */
export function reportTable(report: CompareReport): string {
  const errors = report.totals.errors !== undefined;
  const skipped = report.totals.skipped !== undefined;
  const header = ['OPERATION', 'PAIRS', 'MATCHED', 'MISMATCHED', 'RATE', 'ONLY A', 'ONLY B'];
  if (errors) header.push('ERRORS');
  if (skipped) header.push('SKIPPED');
  const cells = (name: string, c: CompareReport['totals']) => {
    const row = [name, c.pairs, c.matched, c.mismatched, formatRate(c.rate), c.onlyA, c.onlyB].map(String);
    if (errors) row.push(String(c.errors ?? 0));
    if (skipped) row.push(String(c.skipped ?? 0));
    return row;
  };
  const rows = [...report.operations.map((o) => cells(o.operation, o)), cells('TOTAL', report.totals)];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  const lines = [line(header), ...rows.map(line)];
  for (const operation of report.operations.filter((o) => o.paths.length > 0)) {
    lines.push('', `${operation.operation}: most frequent differing paths`);
    for (const path of operation.paths) lines.push(`  ${String(path.count).padStart(5)}  ${path.path}`);
  }
  return lines.join('\n');
}
