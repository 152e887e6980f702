import type { ShadowRepository } from '../store/shadow.js';
import type { CompareReport, OperationReport, Sample } from './report.js';

/**
 * The shadow outcomes in the store as a comparison report (the shape of `compare --json`) with
 * `errors` and `skipped`: pairs are the comparisons made (match + mismatch), A the old server, B
 * the translation. Shared by `idm-compat shadow report` and the migration dashboard.
 */
export async function shadowReport(
  repository: ShadowRepository,
  options: { since?: number; paths?: number; samples?: number } = {},
): Promise<
  CompareReport & { errorSamples: { operation: string; at: string; requestId: string; detail: unknown }[] }
> {
  const [counts, paths, samples] = await Promise.all([
    repository.counts(options.since),
    repository.paths(options.since),
    repository.samples({ ...(options.since === undefined ? {} : { since: options.since }), limit: 500 }),
  ]);
  const operations = new Map<string, OperationReport & { errors: number; skipped: number }>();
  const entry = (operation: string) => {
    let found = operations.get(operation);
    if (!found) {
      found = {
        operation,
        pairs: 0,
        matched: 0,
        mismatched: 0,
        rate: null,
        onlyA: 0,
        onlyB: 0,
        errors: 0,
        skipped: 0,
        paths: [],
        samples: [],
      };
      operations.set(operation, found);
    }
    return found;
  };
  for (const { operation, outcome, count } of counts) {
    const report = entry(operation);
    if (outcome === 'match') report.matched += count;
    else if (outcome === 'mismatch') report.mismatched += count;
    else if (outcome === 'error') report.errors += count;
    else report.skipped += count;
  }
  for (const { operation, path, count } of paths) {
    const report = entry(operation);
    if (report.paths.length < (options.paths ?? 10)) report.paths.push({ path, count });
  }
  for (const sample of samples) {
    const report = entry(sample.operation);
    if (sample.outcome === 'mismatch' && report.samples.length < (options.samples ?? 5))
      report.samples.push(sample.detail as Sample);
  }
  const list = [...operations.values()].sort((a, b) =>
    a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0,
  );
  for (const report of list) {
    report.pairs = report.matched + report.mismatched;
    report.rate = report.pairs === 0 ? null : report.matched / report.pairs;
  }
  const sum = (pick: (r: (typeof list)[number]) => number) => list.reduce((total, r) => total + pick(r), 0);
  const pairs = sum((r) => r.pairs);
  const matched = sum((r) => r.matched);
  return {
    operations: list,
    totals: {
      pairs,
      matched,
      mismatched: pairs - matched,
      rate: pairs === 0 ? null : matched / pairs,
      onlyA: 0,
      onlyB: 0,
      errors: sum((r) => r.errors),
      skipped: sum((r) => r.skipped),
    },
    errorSamples: samples
      .filter((sample) => sample.outcome === 'error')
      .slice(0, 20)
      .map((sample) => ({
        operation: sample.operation,
        at: new Date(sample.at).toISOString(),
        requestId: sample.requestId,
        detail: sample.detail,
      })),
  };
}
