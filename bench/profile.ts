// Where a process's CPU went, from a V8 CPU profile (`node --cpu-prof`, as the bench writes with
// BENCH_CPU_PROF): self time by function and by module (a package, a Node internal module, a
// folder of ours), as shares of the busy time (idle left out) and, given the process's CPU per
// request, in µs per request.
//
//   npx tsx bench/profile.ts PROFILE.cpuprofile [--top 25] [--per-request 320]
//
// Two targets' profiles summarized with their own `--per-request` (the bench's CPU µs/req) show
// where one spends more than the other per request, module by module.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** The parts of a `.cpuprofile` this reads (Chrome DevTools' Profiler.Profile). */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  samples: number[];
  /** µs since the sample before, one per sample. */
  timeDeltas: number[];
}

export interface ProfileRow {
  name: string;
  selfMs: number;
  /** Of the busy time. */
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Sampled time the process was not idle. */
  busyMs: number;
  byFunction: ProfileRow[];
  byModule: ProfileRow[];
}

/**
 * A URL as the tables show it: a package's file from its package folder on, ours from `src/` (the
 * build's `dist/` stands for `src/`) or `bench/` on, a Node module as it is, anything else by its name.
 */
function shortUrl(url: string): string {
  const dependency = /^.*node_modules\/(.+)$/.exec(url);
  if (dependency?.[1]) return dependency[1];
  if (url.startsWith('node:')) return url;
  // The last such folder in the path: the checkout itself may sit below a `src/` of its own.
  const ours = /^.*\/(dist|src|bench)\/(.+)$/.exec(url);
  if (ours?.[2]) return `${ours[1] === 'bench' ? 'bench' : 'src'}/${ours[2]}`;
  return path.basename(url);
}

/**
 * Where a URL's code belongs: its package (the innermost, for one inside another), its Node
 * module (`node:internal/streams/…` is `node:streams`), its folder of ours (`src/mapping`), `wasm`,
 * or its file; V8's entries and native code have no URL and keep their own names.
 */
export function moduleOf(url: string, functionName: string): string {
  if (url === '')
    return functionName.startsWith('(') ? functionName : `native ${functionName || '(anonymous)'}`;
  // undici's HTTP parser (llhttp) is WebAssembly.
  if (url.startsWith('wasm://')) return 'wasm';
  const short = shortUrl(url);
  if (short.startsWith('node:')) return short.replace(/^node:(internal\/)?([^/]+).*$/, 'node:$2');
  const scoped = /^(@[^/]+\/[^/]+)\//.exec(short);
  if (scoped?.[1]) return scoped[1];
  const ours = /^((?:src|bench)\/[^/]+)\//.exec(short);
  if (ours?.[1]) return ours[1];
  if (short.startsWith('src/') || short.startsWith('bench/')) return short;
  return short.split('/')[0] ?? short;
}

function functionOf(frame: CpuProfile['nodes'][number]['callFrame']): string {
  const name = frame.functionName || '(anonymous)';
  return frame.url === '' ? name : `${name} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

function rows(times: Map<string, number>, busy: number): ProfileRow[] {
  return [...times]
    .map(([name, micros]) => ({ name, selfMs: micros / 1000, share: busy === 0 ? 0 : micros / busy }))
    .sort((a, b) => b.selfMs - a.selfMs);
}

/** Self time of every function and module of a profile, largest first; `(idle)` counts as not busy. */
export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let total = 0;
  let idle = 0;
  profile.samples.forEach((id, index) => {
    // timeDeltas[i] is the time from sample i-1 to sample i: a sample stands for the interval up
    // to the next one, as DevTools counts it (the last one for none).
    const micros = profile.timeDeltas[index + 1] ?? 0;
    const frame = frames.get(id);
    total += micros;
    if (!frame || frame.functionName === '(idle)') {
      idle += micros;
      return;
    }
    const fn = functionOf(frame);
    const mod = moduleOf(frame.url, frame.functionName);
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
    byModule.set(mod, (byModule.get(mod) ?? 0) + micros);
  });
  const busy = total - idle;
  return {
    totalMs: total / 1000,
    busyMs: busy / 1000,
    byFunction: rows(byFunction, busy),
    byModule: rows(byModule, busy),
  };
}

/** The two tables the command prints; `perRequestUs` adds each row's µs per request. */
export function formatSummary(summary: ProfileSummary, top: number, perRequestUs?: number): string {
  const table = (title: string, list: ProfileRow[]) =>
    [
      title,
      ...list
        .slice(0, top)
        .map(
          (row) =>
            `${(row.share * 100).toFixed(1).padStart(6)} %${perRequestUs === undefined ? '' : `${(row.share * perRequestUs).toFixed(1).padStart(8)} µs`}  ${row.name}`,
        ),
    ].join('\n');
  return [
    `busy ${summary.busyMs.toFixed(0)} ms of ${summary.totalMs.toFixed(0)} ms sampled`,
    table('self time by module', summary.byModule),
    table('self time by function', summary.byFunction),
  ].join('\n\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' }, 'per-request': { type: 'string' } },
  });
  const [file] = positionals;
  if (!file || positionals.length > 1) {
    process.stderr.write('usage: tsx bench/profile.ts PROFILE.cpuprofile [--top N] [--per-request µs]\n');
    process.exit(2);
  }
  const perRequest = values['per-request'] === undefined ? undefined : Number(values['per-request']);
  const summary = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  process.stdout.write(`${formatSummary(summary, Number(values.top), perRequest)}\n`);
}
