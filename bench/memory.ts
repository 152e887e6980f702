// `npm run bench:memory`: memory of the proxy under load with a failing successor. The proxy runs
// in production mode as a child process (`idm-compat serve` through bench/memory-child.mjs, which
// adds a GC-and-report signal and a heap-snapshot signal) against `idm-compat sandbox
// --error-rate R` in another child; autocannon sends a fixed number of mixed requests (reads,
// writes, unknown IDs) per round; the script prints RSS and heap after the warm-up, after each
// round and after a full GC, and with MEMORY_SNAPSHOTS=1 which constructors grew the most
// between a heap snapshot after the warm-up and one at the end.
//
// Options (env): MEMORY_REQUESTS (per round, default 20000), MEMORY_CONNECTIONS (default 50),
// MEMORY_ERROR_RATE (default 0.3), MEMORY_ROUNDS (default 3), MEMORY_SNAPSHOTS=1,
// MEMORY_KEEP=1 keeps the snapshots, MEMORY_NODE_FLAGS (V8 flags of the proxy process).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { freePort } from '../test/postgres-helpers.js';
import { ChildLines, gcReport, mib } from './gc.js';
import { basicAuthorization, proxyConfig, root, waitUntilReady } from './processes.js';

const amount = Number(process.env.MEMORY_REQUESTS ?? 20_000);
const connections = Number(process.env.MEMORY_CONNECTIONS ?? 50);
const errorRate = Number(process.env.MEMORY_ERROR_RATE ?? 0.3);
const rounds = Number(process.env.MEMORY_ROUNDS ?? 3);
const snapshots = process.env.MEMORY_SNAPSHOTS === '1';
/** V8 flags for the proxy only, e.g. `--max-old-space-size=96` (NODE_OPTIONS would also hit the build). */
const nodeFlags = (process.env.MEMORY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const bin = path.join(root, 'bin', 'idm-compat.js');

/** Resolves with the first stdout line of a child that parses as JSON. */
function firstJsonLine(child: ChildProcess): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith('{'));
      if (line !== undefined) resolve(JSON.parse(line) as Record<string, unknown>);
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
  });
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 102.4) / 10;
}

/** The highest RSS of a process while `work` runs (sampled every 100 ms). */
async function peakRss<T>(pid: number, work: Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid));
  }, 100);
  try {
    return { result: await work, peak };
  } finally {
    clearInterval(timer);
  }
}

/** Heap used now, then RSS and heap after a full GC in the child. */
async function figures(child: ChildProcess, lines: ChildLines, label: string): Promise<string> {
  const { before, after } = await gcReport(child, lines);
  return `${label.padEnd(16)} RSS ${mib(before.rss).padStart(6)} MiB, heap used ${mib(before.heapUsed).padStart(6)} of ${mib(before.heapTotal).padStart(6)} MiB; after GC: RSS ${mib(after.rss).padStart(6)}, heap used ${mib(after.heapUsed).padStart(5)} of ${mib(after.heapTotal).padStart(6)} MiB`;
}

async function snapshot(child: ChildProcess, lines: ChildLines): Promise<string> {
  const answer = lines.next('snapshot: ');
  child.kill('SIGWINCH');
  return answer;
}

interface HeapSnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size and count per (type, constructor name) of a heap snapshot. */
function summarize(file: string): Map<string, { count: number; size: number }> {
  const data = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshotFile;
  const fields = data.snapshot.meta.node_fields;
  const types = data.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < data.nodes.length; i += width) {
    const type = types[data.nodes[i + typeAt] ?? 0] ?? '?';
    const rawName = data.strings[data.nodes[i + nameAt] ?? 0] ?? '?';
    const name = type === 'string' || type === 'concatenated string' ? '(strings)' : rawName.slice(0, 60);
    const key = `${type} ${name}`;
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += data.nodes[i + sizeAt] ?? 0;
    out.set(key, entry);
  }
  return out;
}

function growth(first: string, last: string): string[] {
  const a = summarize(first);
  const b = summarize(last);
  const rows = [...b].map(([key, value]) => {
    const was = a.get(key) ?? { count: 0, size: 0 };
    return { key, count: value.count - was.count, size: value.size - was.size };
  });
  rows.sort((x, y) => y.size - x.size);
  return rows
    .slice(0, 15)
    .map((r) => `  ${(r.size / 1024).toFixed(0).padStart(8)} KiB  ${String(r.count).padStart(8)}  ${r.key}`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'idm-compat-memory-'));
  const sandboxPort = await freePort();
  const sandbox = spawn(
    process.execPath,
    [bin, 'sandbox', '--port', String(sandboxPort), '--error-rate', String(errorRate), '--json'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let proxy: ChildProcess | undefined;
  try {
    const summary = (await firstJsonLine(sandbox)) as {
      issuer: string;
      apiBaseUrl: string;
      clients: { readWrite: { clientId: string; clientSecret: string } };
    };
    // The demo client's credentials are the sandbox's fixed ones (docs/sandbox.md).
    const {
      port: proxyPort,
      configFile,
      user,
      password,
    } = await proxyConfig(dir, 'memory', summary, {
      logging: { level: 'warn' },
    });
    proxy = spawn(
      process.execPath,
      [
        ...nodeFlags,
        '--expose-gc',
        path.join(root, 'bench', 'memory-child.mjs'),
        'serve',
        '--config',
        configFile,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir },
    );
    const lines = new ChildLines(proxy);
    const url = `http://127.0.0.1:${proxyPort}`;
    await waitUntilReady(url, proxy);
    const headers = {
      authorization: basicAuthorization(user, password),
      'content-type': 'application/json',
    };
    const core = '/iserv/api/Service/Core';
    const requests: autocannon.Request[] = [
      { method: 'GET', path: `${core}/Entity/User/lena.mueller` },
      { method: 'GET', path: `${core}/Entity/User?extended=1` },
      { method: 'GET', path: `${core}/Entity/Group/lehrer` },
      {
        method: 'PUT',
        path: `${core}/Entity/User/lena.mueller`,
        body: JSON.stringify({ firstname: 'Lena' }),
      },
      {
        method: 'GET',
        setupRequest: (request) => ({ ...request, path: `${core}/Entity/User/nobody.${randomUUID()}` }),
      },
      {
        method: 'POST',
        setupRequest: (request) => ({
          ...request,
          path: `${core}/Entity/User/lena.mueller/link/groups`,
          body: JSON.stringify([`no-group-${randomUUID()}`]),
        }),
      },
    ];
    process.stdout.write(
      `idm-compat memory: ${connections} connections, ${rounds} × ${amount} requests, successor error rate ${errorRate}, Node ${process.version}${nodeFlags.length > 0 ? `, proxy flags ${nodeFlags.join(' ')}` : ''}\n`,
    );
    await autocannon({ url, connections: 5, amount: 2_000, headers, requests });
    process.stdout.write(`${await figures(proxy, lines, 'after warm-up')}\n`);
    const first = snapshots ? await snapshot(proxy, lines) : undefined;
    const statuses = new Map<string, number>();
    let total = 0;
    for (let round = 1; round <= rounds; round++) {
      const { result, peak } = await peakRss(
        proxy.pid ?? 0,
        autocannon({ url, connections, amount, headers, requests }),
      );
      for (const [status, stats] of Object.entries(result.statusCodeStats ?? {}))
        statuses.set(status, (statuses.get(status) ?? 0) + (stats as { count: number }).count);
      total += result.requests.total;
      process.stdout.write(
        `${await figures(proxy, lines, `after round ${round}`)}; peak RSS ${peak} MiB; ${Math.round(result.requests.average)} req/s\n`,
      );
    }
    await sleep(5_000);
    process.stdout.write(`${await figures(proxy, lines, 'after 5 s idle')}\n`);
    process.stdout.write(
      `requests: ${total}; by status: ${[...statuses].map(([s, n]) => `${s}: ${n}`).join(', ')}\n`,
    );
    if (first !== undefined) {
      const last = await snapshot(proxy, lines);
      process.stdout.write('\ngrowth between the snapshots (self size, count, type and constructor):\n');
      process.stdout.write(`${growth(first, last).join('\n')}\n`);
    }
    if (process.env.MEMORY_KEEP === '1') process.stdout.write(`snapshots kept in ${dir}\n`);
  } finally {
    for (const child of [proxy, sandbox]) {
      if (!child || child.exitCode !== null) continue;
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    if (process.env.MEMORY_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  }
}

await main();
