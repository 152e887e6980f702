// What `npm run bench` reports: the figures of one target, the table on the terminal and the
// `--json` document. Pure functions, so their shape is tested without running a benchmark.

/** The three ways a scenario is run in one bench run. */
export const TARGETS = ['direct', 'hop', 'proxy'] as const;
/** The loaded scenarios also run through a proxy on the PostgreSQL store (same scenarios, same run). */
export const LOAD_TARGETS = [...TARGETS, 'proxyPostgres'] as const;
export type TargetName = (typeof LOAD_TARGETS)[number];

/** The figures of one target in one scenario; null where a figure does not apply. */
export interface TargetFigures {
  /** Requests per second at `connections` connections. */
  rps: number | null;
  /** Median and 99th percentile latency at `connections` connections, in ms. */
  p50Ms: number | null;
  p99Ms: number | null;
  /** Median latency at one connection minus the direct target's, in ms (0 for direct). */
  addedP50Ms: number | null;
  /** CPU time (user + system) of the proxy or hop process per request, in µs; null for direct. */
  cpuUsPerRequest: number | null;
  /** Successor API calls (token calls not counted) per request of this target. */
  successorCallsPerRequest: number | null;
  /** Of those, the calls that change something (any method but GET and HEAD) per request. */
  successorWritesPerRequest: number | null;
  /** Resident memory of the proxy or hop process after the target's run; null for direct. */
  rssMiB: number | null;
  /** Requests that failed or answered other than 2xx (should be 0). */
  errors: number;
  /** Large lists only: seconds until the whole answer has arrived (median). */
  seconds?: number;
  /** Large lists only: peak resident memory of the proxy or hop process during the list. */
  peakRssMiB?: number | null;
}

/** Successor calls by route, as the sandbox counts them: `{"GET /users/{id}": 3, …}`. */
export type CallCounts = Record<string, number>;

/** Every call counted. */
export function callTotal(calls: CallCounts): number {
  let total = 0;
  for (const count of Object.values(calls)) total += count;
  return total;
}

/** The calls that change something: every method but GET and HEAD. */
export function callWrites(calls: CallCounts): number {
  let writes = 0;
  for (const [route, count] of Object.entries(calls))
    if (!route.startsWith('GET ') && !route.startsWith('HEAD ')) writes += count;
  return writes;
}

/** What each key counted between two snapshots of counters (`after` minus `before`); keys with nothing between left out. */
export function countsBetween(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const between: Record<string, number> = {};
  for (const [key, count] of Object.entries(after)) {
    const made = count - (before[key] ?? 0);
    if (made !== 0) between[key] = made;
  }
  return between;
}

/** Adds `more` to `calls`, route by route. */
export function addCalls(calls: CallCounts, more: CallCounts): void {
  for (const [route, count] of Object.entries(more)) calls[route] = (calls[route] ?? 0) + count;
}

/**
 * Counts per request, most first (equal ones by key), those under 0.01 left out, for the log:
 * `GET /users/{id} 1.49, POST /users/{id}/groups 0.50`; `none` when nothing is left.
 */
export function perRequestText(counts: Record<string, number>, requests: number): string {
  const rows = Object.entries(counts)
    .map(([key, count]) => [key, count / requests] as const)
    .filter(([, perRequest]) => perRequest >= 0.01)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (requests <= 0 || rows.length === 0) return 'none';
  return rows.map(([key, perRequest]) => `${key} ${perRequest.toFixed(2)}`).join(', ');
}

export interface ScenarioReport {
  name: string;
  /** Large lists are timed one request at a time rather than loaded. */
  kind: 'load' | 'large-list';
  targets: Record<(typeof TARGETS)[number], TargetFigures> & { proxyPostgres?: TargetFigures };
}

export interface BenchReport {
  node: string;
  seconds: number;
  connections: number;
  scenarios: ScenarioReport[];
}

/**
 * What each target adds at one connection: its median latency there minus direct's, in ms rounded
 * to 0.01 (direct itself: 0). Direct's median is read before any target's figure is written, so no
 * target is measured against an already subtracted direct.
 */
export function addedOverDirect(
  oneConnectionP50Ms: Partial<Record<TargetName, number>>,
): Partial<Record<TargetName, number>> {
  const direct = oneConnectionP50Ms.direct;
  if (direct === undefined) throw new Error('direct was not measured at one connection');
  const added: Partial<Record<TargetName, number>> = {};
  for (const name of LOAD_TARGETS) {
    const median = oneConnectionP50Ms[name];
    if (median !== undefined) added[name] = Math.round((median - direct) * 100) / 100;
  }
  return added;
}

/** The `--json` document. */
export function toJson(report: BenchReport): string {
  return `${JSON.stringify(
    {
      node: report.node,
      seconds: report.seconds,
      connections: report.connections,
      scenarios: report.scenarios.map((scenario) => ({ name: scenario.name, targets: scenario.targets })),
    },
    null,
    2,
  )}\n`;
}

function cell(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined) return '—';
  return digits === 0 ? String(Math.round(value)) : value.toFixed(digits);
}

function ratio(value: number | null | undefined, base: number | null | undefined): string {
  if (value === null || value === undefined || !base) return '';
  return ` (${(value / base).toFixed(2)}×)`;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The terminal table: loaded scenarios first, then the large lists. */
export function formatTable(report: BenchReport): string {
  const load = report.scenarios.filter((scenario) => scenario.kind === 'load');
  const large = report.scenarios.filter((scenario) => scenario.kind === 'large-list');
  const parts = [
    `idm-compat bench: Node ${report.node}, ${report.seconds}s per target, ${report.connections} connections`,
  ];
  if (load.length > 0) {
    const rows = load.flatMap((scenario) =>
      LOAD_TARGETS.flatMap((name) => {
        const t = scenario.targets[name];
        if (!t) return [];
        const direct = scenario.targets.direct;
        const hop = scenario.targets.hop;
        return [
          [
            scenario.name,
            name,
            `${cell(t.rps)}${name === 'direct' ? '' : ratio(t.rps, direct.rps)}`,
            cell(t.p50Ms, 1),
            cell(t.p99Ms, 1),
            cell(t.addedP50Ms, 2),
            `${cell(t.cpuUsPerRequest)}${name.startsWith('proxy') ? ratio(t.cpuUsPerRequest, hop.cpuUsPerRequest) : ''}`,
            `${cell(t.successorCallsPerRequest, 2)}${t.successorWritesPerRequest ? ` (${cell(t.successorWritesPerRequest, 2)})` : ''}`,
            cell(t.rssMiB),
            String(t.errors),
          ],
        ];
      }),
    );
    parts.push(
      table(
        [
          'scenario',
          'target',
          'req/s (× direct)',
          'p50 ms',
          'p99 ms',
          '+p50 ms @1',
          'CPU µs/req (× hop)',
          'calls/req (writes)',
          'RSS MiB',
          'errors',
        ],
        rows,
      ),
    );
  }
  if (large.length > 0) {
    const rows = large.flatMap((scenario) =>
      TARGETS.map((name) => {
        const t = scenario.targets[name];
        return [
          scenario.name,
          name,
          `${cell(t.seconds, 2)}${name === 'direct' ? '' : ratio(t.seconds, scenario.targets.direct.seconds)}`,
          cell(t.cpuUsPerRequest === null ? null : t.cpuUsPerRequest / 1000),
          cell(t.successorCallsPerRequest, 0),
          cell(t.peakRssMiB, 1),
          String(t.errors),
        ];
      }),
    );
    parts.push(
      table(
        ['large list', 'target', 'seconds (× direct)', 'CPU ms', 'calls', 'peak RSS MiB', 'errors'],
        rows,
      ),
    );
  }
  return `${parts.join('\n\n')}\n`;
}

/** The middle value (of an even count, the mean of the two middle ones); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/**
 * The order targets take turns in over `rounds` rounds: all of them each round, the order reversed
 * every other round, so that no target always follows the same one or always runs first.
 */
export function turnOrder<T>(targets: readonly T[], rounds: number): T[] {
  const order: T[] = [];
  for (let round = 0; round < rounds; round++)
    order.push(...(round % 2 === 0 ? targets : [...targets].reverse()));
  return order;
}

/** One target of a side-by-side run over its rounds. */
export interface RoundsFigures {
  name: string;
  /** Median CPU µs per request over the rounds. */
  medianUs: number;
  /** Median of the rounds' ratios to the reference (the first target: the hop). */
  overReference: number;
  /** Against the first proxy (the targets after it): median of the rounds' ratios, and the rounds it was lower in. */
  overBase?: { ratio: number; lowerIn: number };
}

/**
 * Side-by-side rounds summed up (each round: CPU µs per request by target, all targets loaded in
 * turn): ratios are taken within a round, where the machine's speed was the same for all, and
 * their median reported. `names[0]` is the reference (the hop), `names[1]` the base the other
 * proxies are compared with.
 */
export function summarizeRounds(
  rounds: readonly Readonly<Record<string, number>>[],
  names: readonly string[],
): RoundsFigures[] {
  const of = (name: string) => rounds.map((round) => round[name] ?? Number.NaN);
  const [reference, base] = names;
  const referenceUs = of(reference ?? '');
  const baseUs = of(base ?? '');
  return names.map((name, index) => {
    const own = of(name);
    const over = (theirs: number[]) =>
      median(own.map((value, round) => value / (theirs[round] ?? Number.NaN)));
    const figures: RoundsFigures = { name, medianUs: median(own), overReference: over(referenceUs) };
    if (index >= 2) {
      figures.overBase = {
        ratio: over(baseUs),
        lowerIn: own.filter((value, round) => value < (baseUs[round] ?? Number.NaN)).length,
      };
    }
    return figures;
  });
}
