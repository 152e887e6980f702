// The processes of a bench run (sandbox successor, proxy, hop), each started as in production,
// and what /proc tells about them.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from '../test/postgres-helpers.js';
import { countsBetween, perRequestText } from './report.js';

export const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'idm-compat.js');
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** A started child process; `stop()` ends it with SIGTERM and waits. */
export interface Running {
  child: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

function running(child: ChildProcess): Running {
  if (child.pid === undefined) throw new Error('the child process did not start');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resolves with the first stdout line matching `done`, rejects when the process exits first. */
function waitForOutput(child: ChildProcess, done: (text: string) => boolean, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (done(text)) {
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        resolve(text);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`${what} exited (${code}) before it was ready`));
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

export interface SandboxProcess extends Running {
  url: string;
  issuer: string;
  apiBaseUrl: string;
  tokenEndpoint: string;
}

/** `idm-compat sandbox --json` in its own process: the successor, as remote as 127.0.0.1 allows. */
export async function startSandbox(fixture?: string): Promise<SandboxProcess> {
  const port = await freePort();
  const args = [bin, 'sandbox', '--port', String(port), '--json'];
  if (fixture) args.push('--fixture', fixture);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const out = await waitForOutput(
    child,
    (text) => {
      try {
        JSON.parse(text);
        return true;
      } catch {
        return false;
      }
    },
    'the sandbox',
  );
  const summary = JSON.parse(out) as {
    url: string;
    issuer: string;
    apiBaseUrl: string;
    tokenEndpoint: string;
  };
  return { ...running(child), ...summary };
}

export interface ProxyProcess extends Running {
  url: string;
  /** Basic credentials of the bench's API user. */
  authorization: string;
}

/**
 * A production-mode configuration file for a proxy on `sandbox` (its read-write demo client, a
 * SQLite store in `dir` unless `extra.store` says otherwise, a free port) and an API user `name`
 * for the load: what every bench process of the proxy starts from.
 */
export async function proxyConfig(
  dir: string,
  name: string,
  sandbox: Pick<SandboxProcess, 'apiBaseUrl' | 'issuer'>,
  extra: {
    successor?: Record<string, unknown>;
    store?: Record<string, unknown>;
    [key: string]: unknown;
  } = {},
): Promise<{ port: number; configFile: string; user: string; password: string }> {
  const port = await freePort();
  const configFile = path.join(dir, `${name}.json`);
  const { successor, store, ...rest } = extra;
  writeFileSync(
    configFile,
    JSON.stringify({
      server: { host: '127.0.0.1', port },
      successor: {
        baseUrl: sandbox.apiBaseUrl,
        auth: {
          type: 'oauth2',
          issuer: sandbox.issuer,
          clientId: 'idm-compat',
          clientSecret: 'sandbox-secret',
        },
        ...successor,
      },
      store: store ?? { type: 'sqlite', path: path.join(dir, `${name}.db`) },
      mappings: { dir: path.join(root, 'mappings') },
      ...rest,
    }),
  );
  const user = name.replace(/[^A-Za-z0-9._-]/g, '-');
  const added = JSON.parse(
    execFileSync(
      process.execPath,
      [bin, 'apiuser', 'add', user, '--range', '127.0.0.1/32', '--json', '--config', configFile],
      { encoding: 'utf8' },
    ),
  ) as { password: string };
  return { port, configFile, user, password: added.password };
}

/**
 * The proxy in production mode (`idm-compat serve` with a configuration file pointing at the
 * sandbox, NODE_ENV=production, default log level with the log going nowhere), with `nodeFlags`
 * for Node (a CPU profile, the async-resource counter).
 */
export async function startProxy(
  dir: string,
  name: string,
  sandbox: SandboxProcess,
  successor: Record<string, unknown>,
  nodeFlags: readonly string[] = [],
  store: Record<string, unknown> = { type: 'sqlite', path: path.join(dir, `${name}.db`) },
): Promise<ProxyProcess> {
  const { port, configFile, user, password } = await proxyConfig(dir, name, sandbox, {
    successor,
    store,
    sso: { target: `${sandbox.url}/login` },
  });
  const url = `http://127.0.0.1:${port}`;
  const served = await serveProxy(configFile, url, { nodeFlags });
  return { ...served, url, authorization: basicAuthorization(user, password) };
}

/**
 * `idm-compat serve --config configFile` of a build (`build`: a built checkout's folder, default
 * this one) in production mode, its log going nowhere, once it answers ready at `url`.
 */
export async function serveProxy(
  configFile: string,
  url: string,
  options: { build?: string; nodeFlags?: readonly string[] } = {},
): Promise<Running> {
  const binary = options.build ? path.join(options.build, 'bin', 'idm-compat.js') : bin;
  const child = spawn(
    process.execPath,
    [...(options.nodeFlags ?? []), binary, 'serve', '--config', configFile],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, NODE_ENV: 'production' },
    },
  );
  const served = running(child);
  try {
    await waitUntilReady(url, child);
  } catch (error) {
    await served.stop();
    throw error;
  }
  return served;
}

/** Node's flags for a CPU profile written into `dir` when the process exits (none without a directory). */
export function cpuProfileFlags(dir: string | undefined): string[] {
  return dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];
}

/**
 * The bench's preloaded hooks (BENCH_ASYNC, BENCH_PATH). Each writes what it has measured so far
 * as JSON to `<dir>/<pid>.json`, every 100 ms, `dir` given in its environment
 * (IDM_COMPAT_BENCH_ASYNC_DIR, IDM_COMPAT_BENCH_PATH_DIR, which the bench sets in its own for its
 * children); the bench takes the difference of two snapshots.
 */
export type BenchHook = 'count-async.mjs' | 'path-times.mjs';

/** Node's flags that preload `hook` from bench/ (none without `dir`). */
export function hookFlags(hook: BenchHook, dir: string | undefined): string[] {
  return dir ? ['--import', pathToFileURL(path.join(root, 'bench', hook)).href] : [];
}

/** What a preloaded hook last wrote for process `pid` into `dir`. */
export function hookSnapshot<T>(dir: string, pid: number): T {
  return JSON.parse(readFileSync(path.join(dir, `${pid}.json`), 'utf8')) as T;
}

/** What bench/count-async.mjs last wrote for a process: requests served and async resources made, by type. */
export interface AsyncCounts {
  requests: number;
  resources: Record<string, number>;
}

/** The async resources made per request between two counts, most first: `PROMISE 53.00, TickObject 11.00, …`. */
export function asyncPerRequest(before: AsyncCounts, after: AsyncCounts): string {
  const requests = after.requests - before.requests;
  if (requests <= 0) return 'no requests counted';
  return perRequestText(countsBetween(before.resources, after.resources), requests);
}

/** What bench/path-times.mjs last wrote for a process: requests timed, and their times (before, after, calls) by µs bucket. */
export interface PathTimes {
  timed: number;
  before: Record<string, number>;
  after: Record<string, number>;
  calls: Record<string, number>;
}

/**
 * The medians of the requests timed between two snapshots, in µs: own time before the first
 * successor call and after the last answer, and the calls' part between (undefined when none was
 * timed).
 */
export function pathTimesBetween(
  earlier: PathTimes,
  later: PathTimes,
): { timed: number; beforeUs: number; afterUs: number; callsUs: number } | undefined {
  const timed = later.timed - earlier.timed;
  if (timed <= 0) return undefined;
  const medianOf = (from: Record<string, number>, to: Record<string, number>): number => {
    const buckets = Object.entries(to)
      .map(([us, count]) => [Number(us), count - (from[us] ?? 0)] as const)
      .filter(([, count]) => count > 0)
      .sort((a, b) => a[0] - b[0]);
    let seen = 0;
    for (const [us, count] of buckets) {
      seen += count;
      if (seen * 2 >= timed) return us;
    }
    return buckets.at(-1)?.[0] ?? 0;
  };
  return {
    timed,
    beforeUs: medianOf(earlier.before, later.before),
    afterUs: medianOf(earlier.after, later.after),
    callsUs: medianOf(earlier.calls, later.calls),
  };
}

/** The `Authorization` value of an API user's Basic credentials. */
export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** Waits (about 30 s at most) until the proxy at `url` is ready; rejects at once when `child` exits. */
export async function waitUntilReady(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i <= 300; i++) {
    if (child.exitCode !== null) throw new Error(`the proxy exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the proxy did not become ready');
}

export interface HopProcess extends Running {
  url: string;
}

/**
 * bench/hop.ts in its own process, forwarding to the sandbox, with `nodeFlags` for Node (under
 * `--cpu-prof` its main thread's profile is the one whose name has thread number 0; tsx's loader
 * thread writes one too).
 */
export async function startHop(
  sandbox: Pick<SandboxProcess, 'url'>,
  nodeFlags: readonly string[] = [],
): Promise<HopProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [...nodeFlags, '--import', 'tsx', path.join(root, 'bench', 'hop.ts'), sandbox.url, String(port)],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'production' } },
  );
  await waitForOutput(child, (text) => text.includes('ready'), 'the hop');
  return { ...running(child), url: `http://127.0.0.1:${port}` };
}

/** CPU time a process has used so far in user and system mode, in µs. */
export function cpuMicros(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start at field 3; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    user: (Number(fields[11]) / CLOCK_TICKS) * 1e6,
    system: (Number(fields[12]) / CLOCK_TICKS) * 1e6,
  };
}

function statusKiB(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
}

/** CPU µs (user + system) a process has used so far; 0 for none (a target with no process of its own). */
export function cpuTotal(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const { user, system } = cpuMicros(pid);
  return user + system;
}

/** Resident memory now, in MiB. */
export function rssMiB(pid: number): number {
  return Math.round((statusKiB(pid, 'VmRSS') / 1024) * 10) / 10;
}

/** Peak resident memory since the last `resetPeakRss`, in MiB. */
export function peakRssMiB(pid: number): number {
  return Math.round((statusKiB(pid, 'VmHWM') / 1024) * 10) / 10;
}

/** Resets the peak resident memory (VmHWM) of a process of ours to its current RSS (Linux ≥ 4.0). */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}
