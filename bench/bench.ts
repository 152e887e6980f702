// `npm run bench`: the proxy against the physical limit, in one run. Every process runs as in
// production: the sandbox successor in its own process (`idm-compat sandbox`), the proxy in its
// own (`idm-compat serve`, production mode, configuration file pointing at the sandbox), the bare
// forwarding hop in its own (bench/hop.ts), and the load generator (autocannon) here. Everything
// listens on 127.0.0.1. Three targets per scenario: `direct` (the equivalent successor calls with
// a bearer token), `hop` (the direct calls through bench/hop.ts) and `proxy` (the legacy call).
//
// The targets of a scenario are recorded in turns, in one-second slices (measureScenario), so that
// the machine's drift falls on all of them alike and the ratios compare like with like.
//
// Options (env; whole numbers but for BENCH_ONLY and BENCH_CPU_PROF): BENCH_SECONDS (4, recorded
// load per target, as many one-second slices), BENCH_WARMUP_SECONDS (3, unrecorded load before
// the slices of the hop and each proxy; 8 in all before a fresh process's first),
// BENCH_CONNECTIONS (50), BENCH_LATENCY_SECONDS (1, one connection per target), BENCH_ONLY (a
// regular expression of scenario names), BENCH_CPU_PROF (a directory: the proxies and the hop run under `node --cpu-prof`
// and write their profiles into a folder each, named after the process, e.g. `proxy/`,
// `proxy-postgres/`, `proxy-hop/`; bench/profile.ts summarizes one), BENCH_ASYNC (1: the proxies
// and the hop count the async resources they make, bench/count-async.mjs, and each scenario logs
// them per request; the counting slows them, so such a run leaves the CPU figures empty),
// BENCH_PATH (1: the proxies and the hop time their own part of each request they serve alone,
// bench/path-times.mjs, and each scenario logs the medians of its one-connection slices: before
// the first successor call, after the last answer, and the calls' part between; that too leaves
// the CPU figures empty), BENCH_LARGE_LISTS (1, recorded lists of 100,000 users per target after
// the unrecorded one; the table shows the highest peak, stderr each list's peak and the proxy's
// RSS and heap after it).
// `npm run bench -- --json` prints the figures as JSON instead of the table.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { startPostgres, type TestPostgres } from '../test/postgres-helpers.js';
import {
  ACCEPT,
  API,
  bearerToken,
  type Call,
  callHeaders,
  cannonRequests,
  LEGACY,
  type LoadScenario,
  loadScenarios,
  PAGE_SIZE,
  USER_EXTENDED,
} from './calls.js';
import {
  type AsyncCounts,
  asyncPerRequest,
  cpuProfileFlags,
  cpuTotal,
  type HopProcess,
  hookFlags,
  hookSnapshot,
  type PathTimes,
  type ProxyProcess,
  pathTimesBetween,
  peakRssMiB,
  resetPeakRss,
  rssMiB,
  type SandboxProcess,
  startHop,
  startProxy,
  startSandbox,
} from './processes.js';
import {
  addCalls,
  addedOverDirect,
  type BenchReport,
  type CallCounts,
  callTotal,
  callWrites,
  countsBetween,
  formatTable,
  median,
  perRequestText,
  type ScenarioReport,
  TARGETS,
  type TargetFigures,
  type TargetName,
  toJson,
  turnOrder,
} from './report.js';

/** A whole number of seconds (or connections) from the environment, at least `min`; a clear error otherwise. */
function wholeNumber(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  const value = text === undefined || text === '' ? fallback : Number(text);
  if (!Number.isInteger(value) || value < min)
    throw new Error(`${name} must be a whole number, at least ${min}: ${JSON.stringify(text)}`);
  return value;
}

/**
 * Recorded load per target and scenario: as many one-second slices (autocannon stops on its
 * once-a-second tick). An even number, so that with the order reversed every other round each
 * target runs at each place in a round equally often; four keeps the default run under five
 * minutes on this machine in a slow stretch too (with five: 4 min 33 s to 5 min 2 s).
 */
const seconds = wholeNumber('BENCH_SECONDS', 4, 1);
/**
 * Unrecorded load before the recorded slices of each target with a process of its own, in every
 * scenario: the proxy's first second of a new scenario's calls still carries compilation (in a
 * trial with two seconds, the write scenario's first recorded slice used 3,350 µs a request, its
 * next four 1,437–1,843).
 */
const warmupSeconds = wholeNumber('BENCH_WARMUP_SECONDS', 3, 0);
/**
 * Unrecorded load a process gets before its first recorded slice, in all (the warm-ups of every scenario so far).
 * The CPU per request of a fresh proxy (warm GET, one-second slices) settles only after about six
 * seconds of load (1685, 1278, 906, 544, 510, 458, 469, 413 µs; the hop's after about four: 1520,
 * 665, 369, 283 µs, then 264–298): V8 optimizes the proxy's larger request path later.
 */
const PROCESS_WARMUP_SECONDS = 8;
const connections = wholeNumber('BENCH_CONNECTIONS', 50, 1);
/** Recorded lists of 100,000 users per target (the 10,000-user list: seven, for its median time). */
const largeLists = wholeNumber('BENCH_LARGE_LISTS', 1, 1);
const latencySeconds = wholeNumber('BENCH_LATENCY_SECONDS', 1, 1);
const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const cpuProfileDir = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;
/**
 * The folder a preloaded hook writes into when `option` is `1` (undefined otherwise), also put
 * into `variable` of this process's environment, where its children find it.
 */
function hookDir(option: 'BENCH_ASYNC' | 'BENCH_PATH', variable: string): string | undefined {
  if (process.env[option] !== '1') return undefined;
  const dir = mkdtempSync(path.join(tmpdir(), `idm-compat-${option.toLowerCase().replace('_', '-')}-`));
  process.env[variable] = dir;
  return dir;
}
/** Where the async-resource counters write (BENCH_ASYNC). */
const asyncDir = hookDir('BENCH_ASYNC', 'IDM_COMPAT_BENCH_ASYNC_DIR');
/** Where the path timers write (BENCH_PATH). */
const pathDir = hookDir('BENCH_PATH', 'IDM_COMPAT_BENCH_PATH_DIR');
/** A run whose processes carry a preloaded hook on every request: its CPU figures would mislead. */
const hooked = asyncDir !== undefined || pathDir !== undefined;
const json = process.argv.includes('--json');

interface Target {
  name: TargetName;
  url: string;
  headers: Record<string, string>;
  calls: Call[];
  /** The process whose CPU and memory count (none for direct). */
  pid: number | undefined;
}

const startedAt = performance.now();
function log(text: string): void {
  process.stderr.write(`[${((performance.now() - startedAt) / 1000).toFixed(0).padStart(3)}s] ${text}\n`);
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Successor API calls so far by route (`GET /users/{id}`), from the sandbox's request counters; token calls left out. */
async function successorCalls(sandbox: SandboxProcess): Promise<CallCounts> {
  const response = await fetch(`${sandbox.url}/__sandbox/counters`);
  const { counters } = (await response.json()) as { counters: CallCounts };
  const { 'POST /token': _token, ...calls } = counters;
  return calls;
}

/** One autocannon run of a target's calls, its result raw (merged later with the target's other slices). */
async function autocannonRun(target: Target, duration: number): Promise<RawResult> {
  const result = await autocannon({
    url: target.url,
    connections,
    duration,
    skipAggregateResult: true,
    requests: cannonRequests(target.calls, target.headers),
  });
  return result as unknown as RawResult;
}

/** What autocannon answers with `skipAggregateResult`: counts, and its histograms encoded for merging. */
interface RawResult {
  totalCompletedRequests: number;
  totalRequests: number;
  /** Seconds the run took (autocannon stops on its once-a-second tick). */
  duration: number;
  errors: number;
  non2xx: number;
}

/** autocannon's own merge of raw results (what it does with its workers' results); its types leave it out. */
const mergeResults = (
  autocannon as unknown as {
    aggregateResult(results: RawResult[], options: { url: string; connections: number }): autocannon.Result;
  }
).aggregateResult;

/** A target's recorded figures as its slices add up. */
interface Tally {
  target: Target;
  results: RawResult[];
  /** CPU µs of each load slice, for the log: whether the process had settled. */
  sliceCpu: number[];
  /** Successor calls made during the load slices, by route. */
  calls: CallCounts;
  /** Latencies of the one-connection slices, in ms, and how many of those answers were not 2xx. */
  latencies: number[];
  latencyErrors: number;
}

/**
 * Successor calls so far, once the requests still in flight when a slice stopped have made theirs:
 * when two reads 25 ms apart agree (at most 2 s), so that a slice's calls are its own target's.
 */
async function settledCalls(sandbox: SandboxProcess): Promise<CallCounts> {
  let calls = await successorCalls(sandbox);
  for (let i = 0; i < 80; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const now = await successorCalls(sandbox);
    if (callTotal(now) === callTotal(calls)) break;
    calls = now;
  }
  return calls;
}

/** One recorded slice of load: its raw result and successor calls, its CPU for the log. */
async function loadSlice(tally: Tally, duration: number, sandbox: SandboxProcess): Promise<void> {
  const { target } = tally;
  const callsBefore = await successorCalls(sandbox);
  const cpuBefore = cpuTotal(target.pid);
  tally.results.push(await autocannonRun(target, duration));
  addCalls(tally.calls, countsBetween(callsBefore, await settledCalls(sandbox)));
  tally.sliceCpu.push(cpuTotal(target.pid) - cpuBefore);
}

/** What the hook writing into `dir` last wrote for a target's process (none without `dir` or a process). */
function snapshotOf<T>(dir: string | undefined, target: Target): T | undefined {
  return dir && target.pid !== undefined ? hookSnapshot<T>(dir, target.pid) : undefined;
}

/** One slice of one connection sending the target's calls one after another: each latency, in ms. */
async function latencySlice(tally: Tally, duration: number): Promise<void> {
  const { target } = tally;
  const pool = new Pool(target.url, { connections: 1 });
  const end = performance.now() + duration * 1000;
  try {
    for (let i = 0; performance.now() < end || i < 5; i++) {
      const call = target.calls[i % target.calls.length];
      if (!call) break;
      const started = performance.now();
      const response = await pool.request({
        path: call.path,
        method: call.method,
        headers: callHeaders(call, target.headers),
        body: call.body ?? null,
      });
      await response.body.arrayBuffer();
      tally.latencies.push(performance.now() - started);
      if (response.statusCode >= 300) tally.latencyErrors++;
    }
  } finally {
    await pool.close();
  }
}

/**
 * Runs `slice` for every target, `rounds` times, the targets taking turns (turnOrder), so that the
 * machine's speed, which drifts by ±20 % within seconds here, is the same for every target on
 * average instead of favouring whichever ran while it was fast.
 */
async function inTurns(
  tallies: Tally[],
  rounds: number,
  slice: (tally: Tally) => Promise<void>,
): Promise<void> {
  for (const tally of turnOrder(tallies, rounds)) await slice(tally);
}

/**
 * One scenario's figures for every target. Each target with a process of its own (the hop, the
 * proxies) is first loaded unrecorded, so that JIT compilation, caches and connection set-up do
 * not count: for BENCH_WARMUP_SECONDS, or for what its process still lacks of
 * PROCESS_WARMUP_SECONDS of load in all, whichever is longer (so a fresh process, in the first
 * scenario, gets eight seconds), in turns like the recording. Then the
 * targets take turns: BENCH_SECONDS of load each in one-second slices, then BENCH_LATENCY_SECONDS
 * of one connection each in as many slices (a burst of load from elsewhere, which slows a chain of
 * processes on one connection most, then falls on every target alike).
 */
async function measureScenario(
  targets: readonly Target[],
  sandbox: SandboxProcess,
  warmedSeconds: Map<TargetName, number>,
): Promise<Partial<Record<TargetName, TargetFigures>>> {
  // In turns too, in one-second slices, each target's in the last rounds. With the warm-ups one
  // after the other (eight seconds in a row, then idle while the others warmed up), a process's
  // first recorded slice cost more again (in a trial, the hop's: 509 µs a warm GET, its next four
  // 235–334 µs); in turns, its first slice follows a pause as long as its later ones do.
  // `direct` needs none of its own: the hop sends the sandbox the same calls.
  const needed = targets.map((target) => {
    const missing = PROCESS_WARMUP_SECONDS - (warmedSeconds.get(target.name) ?? 0);
    const warmup = target.pid === undefined ? 0 : Math.max(warmupSeconds, missing);
    warmedSeconds.set(target.name, (warmedSeconds.get(target.name) ?? 0) + warmup);
    return { target, warmup };
  });
  const rounds = Math.max(0, ...needed.map((need) => need.warmup));
  log(`  warm-up: ${needed.map(({ target, warmup }) => `${target.name} ${warmup} s`).join(', ')}, in turns`);
  for (const [index, { target, warmup }] of turnOrder(needed, rounds).entries()) {
    const round = Math.floor(index / needed.length);
    if (round >= rounds - warmup) await autocannonRun(target, 1);
  }
  const tallies: Tally[] = targets.map((target) => ({
    target,
    results: [],
    sliceCpu: [],
    calls: {},
    latencies: [],
    latencyErrors: 0,
  }));
  log(`  recording: ${seconds} one-second slices of load per target, in turns`);
  // A process's CPU is taken over the whole span of the load slices, not summed over its own: what
  // it still does after a slice has stopped (answers in flight, store writes after the successor's
  // answer, deferred GC) falls between its slices, and counts too. Between them it serves nothing.
  const cpuBefore = tallies.map((tally) => cpuTotal(tally.target.pid));
  const asyncBefore = tallies.map((tally) => snapshotOf<AsyncCounts>(asyncDir, tally.target));
  await inTurns(tallies, seconds, (tally) => loadSlice(tally, 1, sandbox));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const cpu = tallies.map((tally, index) => cpuTotal(tally.target.pid) - (cpuBefore[index] ?? 0));
  const asyncAfter = tallies.map((tally) => snapshotOf<AsyncCounts>(asyncDir, tally.target));
  const pathBefore = tallies.map((tally) => snapshotOf<PathTimes>(pathDir, tally.target));
  await inTurns(tallies, seconds, (tally) => latencySlice(tally, latencySeconds / seconds));
  // The timers write every 100 ms.
  if (pathDir) await new Promise((resolve) => setTimeout(resolve, 250));
  const pathAfter = tallies.map((tally) => snapshotOf<PathTimes>(pathDir, tally.target));
  const figures: Partial<Record<TargetName, TargetFigures>> = {};
  const oneConnectionP50Ms: Partial<Record<TargetName, number>> = {};
  for (const [index, tally] of tallies.entries()) {
    const { target, results } = tally;
    const merged = mergeResults(results, { url: target.url, connections });
    const requests = results.reduce((sum, result) => sum + result.totalRequests, 0);
    const duration = results.reduce((sum, result) => sum + result.duration, 0);
    const cpuUs = cpu[index] ?? 0;
    const p50 = median(tally.latencies);
    if (target.pid !== undefined && requests > 0) {
      const bySlice = tally.sliceCpu.map((used, slice) =>
        Math.round(used / Math.max(1, results[slice]?.totalRequests ?? 0)),
      );
      log(
        `  ${target.name}: ${requests} requests, CPU per request ${Math.round(cpuUs / requests)} µs (by slice ${bySlice.join(', ')})`,
      );
    }
    const [before, after] = [asyncBefore[index], asyncAfter[index]];
    if (before && after) log(`  ${target.name}: per request ${asyncPerRequest(before, after)}`);
    log(`  ${target.name}: median at one connection ${p50.toFixed(3)} ms`);
    const [earlier, later] = [pathBefore[index], pathAfter[index]];
    const own = earlier && later ? pathTimesBetween(earlier, later) : undefined;
    if (own)
      log(
        `  ${target.name}: own time on the path at one connection (median of ${own.timed}): ${own.beforeUs} µs before the first successor call, ${own.afterUs} µs after the last answer; the calls ${own.callsUs} µs`,
      );
    if (target.pid !== undefined && requests > 0)
      log(`  ${target.name}: successor calls per request by route: ${perRequestText(tally.calls, requests)}`);
    oneConnectionP50Ms[target.name] = p50;
    figures[target.name] = {
      // Requests sent per second of load. A request sent is served, its CPU counted, even when the
      // slice stops before its answer arrives; each connection sends its next once the one before
      // is answered, so this is the rate of answers, without the start of each slice, when the
      // first answers are still on their way (about one latency of every one-second slice).
      rps: duration > 0 ? Math.round(requests / duration) : 0,
      p50Ms: merged.latency.p50,
      p99Ms: merged.latency.p99,
      // Set below, once every target has its median at one connection.
      addedP50Ms: null,
      // A preloaded hook (BENCH_ASYNC, BENCH_PATH) slows the process: its CPU figure would mislead.
      cpuUsPerRequest:
        target.pid === undefined || requests === 0 || hooked ? null : Math.round(cpuUs / requests),
      successorCallsPerRequest: requests === 0 ? null : round(callTotal(tally.calls) / requests, 2),
      successorWritesPerRequest: requests === 0 ? null : round(callWrites(tally.calls) / requests, 2),
      rssMiB: target.pid === undefined ? null : rssMiB(target.pid),
      errors: merged.errors + merged.non2xx + tally.latencyErrors,
    };
  }
  const added = addedOverDirect(oneConnectionP50Ms);
  for (const [name, figuresOf] of Object.entries(figures))
    figuresOf.addedP50Ms = added[name as TargetName] ?? null;
  return figures;
}

interface Stack {
  sandbox: SandboxProcess;
  proxy: ProxyProcess;
  /** The same proxy on the PostgreSQL store (loaded scenarios only). */
  proxyPostgres: ProxyProcess | undefined;
  hop: HopProcess;
  token: string;
  stop(): Promise<void>;
}

/** Node's flags for one bench process: its CPU profile into a folder of its own under BENCH_CPU_PROF, the hooks of BENCH_ASYNC and BENCH_PATH. */
function nodeFlags(processName: string): string[] {
  return [
    ...cpuProfileFlags(cpuProfileDir && path.join(cpuProfileDir, processName)),
    ...hookFlags('count-async.mjs', asyncDir),
    ...hookFlags('path-times.mjs', pathDir),
  ];
}

async function startStack(
  dir: string,
  name: string,
  options: { fixture?: string; postgres?: boolean } = {},
): Promise<Stack> {
  const sandbox = await startSandbox(options.fixture);
  let database: TestPostgres | undefined;
  try {
    const proxy = await startProxy(dir, name, sandbox, { pageSize: PAGE_SIZE }, nodeFlags(name));
    // The embedded PostgreSQL server of the test suite, on loopback; the proxy on it is otherwise
    // configured exactly like the SQLite one.
    database = options.postgres ? await startPostgres() : undefined;
    const proxyPostgres = database
      ? await startProxy(
          dir,
          `${name}-postgres`,
          sandbox,
          { pageSize: PAGE_SIZE },
          nodeFlags(`${name}-postgres`),
          {
            type: 'postgres',
            url: await database.createDatabase(),
          },
        )
      : undefined;
    const hop = await startHop(sandbox, nodeFlags(`${name}-hop`));
    const token = await bearerToken(sandbox);
    const db = database;
    return {
      sandbox,
      proxy,
      proxyPostgres,
      hop,
      token,
      stop: async () => {
        await Promise.all([proxy.stop(), hop.stop(), proxyPostgres?.stop()]);
        await sandbox.stop();
        await db?.destroy();
      },
    };
  } catch (error) {
    await sandbox.stop();
    await database?.destroy();
    throw error;
  }
}

function targetsOf(stack: Stack, scenario: LoadScenario): Target[] {
  const bearer = { authorization: `Bearer ${stack.token}`, accept: ACCEPT };
  return [
    { name: 'direct', url: stack.sandbox.url, headers: bearer, calls: scenario.direct, pid: undefined },
    { name: 'hop', url: stack.hop.url, headers: bearer, calls: scenario.direct, pid: stack.hop.pid },
    {
      name: 'proxy',
      url: stack.proxy.url,
      headers: { authorization: stack.proxy.authorization },
      calls: scenario.proxy,
      pid: stack.proxy.pid,
    },
    ...(stack.proxyPostgres
      ? [
          {
            name: 'proxyPostgres' as const,
            url: stack.proxyPostgres.url,
            headers: { authorization: stack.proxyPostgres.authorization },
            calls: scenario.proxy,
            pid: stack.proxyPostgres.pid,
          },
        ]
      : []),
  ];
}

async function runLoadScenarios(dir: string): Promise<ScenarioReport[]> {
  const stack = await startStack(dir, 'proxy', { postgres: !process.env.BENCH_NO_POSTGRES });
  try {
    const reports: ScenarioReport[] = [];
    // Seconds of unrecorded load each target's process has had so far.
    const warmedSeconds = new Map<TargetName, number>();
    for (const scenario of await loadScenarios(stack.sandbox, stack.token)) {
      if (only && !only.test(scenario.name)) continue;
      log(`${scenario.name}…`);
      const figures = await measureScenario(targetsOf(stack, scenario), stack.sandbox, warmedSeconds);
      reports.push({ name: scenario.name, kind: 'load', targets: complete(figures) });
    }
    return reports;
  } finally {
    await stack.stop();
  }
}

function complete(figures: Partial<Record<TargetName, TargetFigures>>): ScenarioReport['targets'] {
  const { direct, hop, proxy, proxyPostgres } = figures;
  if (!direct || !hop || !proxy) throw new Error('a target was not measured');
  return { direct, hop, proxy, ...(proxyPostgres ? { proxyPostgres } : {}) };
}

/** A sandbox fixture with `count` more users (in the students' role and group). */
function largeFixture(dir: string, count: number): string {
  const users = Array.from({ length: count }, (_, i) => ({
    user: `bench.user${String(i).padStart(6, '0')}`,
    firstname: 'Bench',
    lastname: `User ${i}`,
    status: 'active',
    roles: ['ROLE_STUDENT'],
    groups: ['schueler'],
  }));
  const file = path.join(dir, `fixture-${count}.json`);
  writeFileSync(file, JSON.stringify({ users }));
  return file;
}

/**
 * Reads every page of the extended user list as a client of the successor would (4 pages at
 * once). Resolves when every page has arrived; `count()` parses them afterwards.
 */
async function allPages(base: string, headers: Record<string, string>): Promise<() => number> {
  const pool = new Pool(base, { connections: 4 });
  const page = async (n: number) => {
    const response = await pool.request({
      method: 'GET',
      path: `${API}/users?deleted=false&_attributes=${encodeURIComponent(USER_EXTENDED)}&itemsPerPage=${PAGE_SIZE}&page=${n}`,
      headers,
    });
    if (response.statusCode !== 200) throw new Error(`page ${n}: ${response.statusCode}`);
    return response.body.text();
  };
  try {
    const first = await page(1);
    const total = (JSON.parse(first) as { 'hydra:totalItems': number })['hydra:totalItems'];
    const pages = [first];
    let next = 2;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next <= Math.ceil(total / PAGE_SIZE)) {
          const n = next++;
          pages[n - 1] = await page(n);
        }
      }),
    );
    return () =>
      pages.reduce(
        (sum, text) => sum + (JSON.parse(text) as { 'hydra:member': unknown[] })['hydra:member'].length,
        0,
      );
  } finally {
    await pool.close();
  }
}

/** The proxy's V8 heap as its metrics show it, for the progress lines. */
async function heapFigures(proxy: ProxyProcess): Promise<string> {
  const text = await (await fetch(`${proxy.url}/metrics`)).text();
  const mib = (name: string) => {
    const value = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1];
    return value === undefined ? '?' : (Number(value) / 2 ** 20).toFixed(0);
  };
  const space = (name: string) => mib(`nodejs_heap_space_size_total_bytes\\{space="${name}"\\}`);
  return `heap used ${mib('nodejs_heap_size_used_bytes')} MiB of ${mib('nodejs_heap_size_total_bytes')} MiB (new space ${space('new')}, old ${space('old')}, large objects ${space('large_object')}, code ${space('code')}), external ${mib('nodejs_external_memory_bytes')} MiB`;
}

/** The legacy list through the proxy; resolves when the whole answer has arrived. */
async function legacyList(proxy: ProxyProcess): Promise<() => number> {
  const response = await fetch(`${proxy.url}${LEGACY}/User?extended=1`, {
    headers: { authorization: proxy.authorization },
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`legacy list: ${response.status} ${text}`);
  return () => (JSON.parse(text) as unknown[]).length;
}

/**
 * The large list through each target `repeat` times, after one unrecorded list each: median time,
 * CPU of the hop or proxy process per list, successor calls per list and the process's peak RSS
 * during a list (VmHWM, reset before each).
 */
async function measureLargeLists(
  stack: Stack,
  repeat: number,
  expected: number,
): Promise<Record<(typeof TARGETS)[number], TargetFigures>> {
  const bearer = { authorization: `Bearer ${stack.token}`, accept: ACCEPT };
  const targets = TARGETS.map((name) => ({
    name,
    pid: name === 'hop' ? stack.hop.pid : name === 'proxy' ? stack.proxy.pid : undefined,
    once: () =>
      name === 'proxy'
        ? legacyList(stack.proxy)
        : allPages(name === 'hop' ? stack.hop.url : stack.sandbox.url, bearer),
    times: [] as number[],
    cpuMicros: 0,
    calls: {} as CallCounts,
    errors: 0,
    peakRssMiB: 0,
  }));
  for (const target of targets) {
    if (target.pid !== undefined) log(`  ${target.name}: RSS ${rssMiB(target.pid)} MiB before the warm-up`);
    if (target.name === 'proxy') log(`  proxy: ${await heapFigures(stack.proxy)}`);
    await target.once(); // warm-up: caches, JIT, connections
    if (target.pid !== undefined) log(`  ${target.name}: RSS ${rssMiB(target.pid)} MiB after the warm-up`);
    if (target.name === 'proxy') log(`  proxy: ${await heapFigures(stack.proxy)}`);
  }
  // The targets take turns, so a burst of load from elsewhere on the machine falls on all of them
  // alike instead of on whichever ran during it.
  for (const target of turnOrder(targets, repeat)) {
    if (target.pid !== undefined) resetPeakRss(target.pid);
    const callsBefore = await successorCalls(stack.sandbox);
    const cpuBefore = cpuTotal(target.pid);
    const started = performance.now();
    const count = await target.once();
    target.times.push((performance.now() - started) / 1000);
    target.cpuMicros += cpuTotal(target.pid) - cpuBefore;
    addCalls(target.calls, countsBetween(callsBefore, await successorCalls(stack.sandbox)));
    if (target.pid !== undefined) {
      const peak = peakRssMiB(target.pid);
      target.peakRssMiB = Math.max(target.peakRssMiB, peak);
      log(
        `  ${target.name}: list ${target.times.length}, peak RSS ${peak} MiB, RSS after ${rssMiB(target.pid)} MiB${target.name === 'proxy' ? `; ${await heapFigures(stack.proxy)}` : ''}`,
      );
    }
    if (count() < expected) target.errors++;
  }
  for (const target of targets)
    log(`  ${target.name}: ${target.times.map((time) => time.toFixed(2)).join(', ')} s`);
  const figures = (target: (typeof targets)[number]): TargetFigures => ({
    rps: null,
    p50Ms: null,
    p99Ms: null,
    addedP50Ms: null,
    cpuUsPerRequest: target.pid === undefined || hooked ? null : Math.round(target.cpuMicros / repeat),
    successorCallsPerRequest: round(callTotal(target.calls) / repeat, 2),
    successorWritesPerRequest: round(callWrites(target.calls) / repeat, 2),
    rssMiB: target.pid === undefined ? null : rssMiB(target.pid),
    errors: target.errors,
    seconds: round(median(target.times), 3),
    peakRssMiB: target.pid === undefined ? null : target.peakRssMiB,
  });
  const [direct, hop, proxy] = targets;
  if (!direct || !hop || !proxy) throw new Error('the large lists need the direct, hop and proxy targets');
  return { direct: figures(direct), hop: figures(hop), proxy: figures(proxy) };
}

async function runLargeList(dir: string, count: number, repeat: number): Promise<ScenarioReport | undefined> {
  const name = `list users extended, ${count.toLocaleString('en')} users`;
  if (only && !only.test(name)) return undefined;
  log(`${name}: generating the fixture and starting…`);
  const stack = await startStack(dir, `proxy-${count}`, { fixture: largeFixture(dir, count) });
  try {
    log(`${name}: direct, hop and proxy in turn…`);
    return { name, kind: 'large-list', targets: complete(await measureLargeLists(stack, repeat, count)) };
  } finally {
    await stack.stop();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'idm-compat-bench-'));
  try {
    const scenarios = await runLoadScenarios(dir);
    for (const [count, repeat] of [
      [10_000, 7],
      [100_000, largeLists],
    ] as const) {
      const report = await runLargeList(dir, count, repeat);
      if (report) scenarios.push(report);
    }
    const report: BenchReport = { node: process.version, seconds, connections, scenarios };
    process.stdout.write(json ? toJson(report) : formatTable(report));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (asyncDir) rmSync(asyncDir, { recursive: true, force: true });
    if (pathDir) rmSync(pathDir, { recursive: true, force: true });
  }
}

await main();
