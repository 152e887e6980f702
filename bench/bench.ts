// `npm run bench`: measures the proxy against direct successor calls in one run and prints
// requests/s, p50/p99 latency, successor calls per legacy call and the proxy's memory.
//
// The proxy (with its embedded sandbox IDM) runs as a child process, exactly as `idm-compat serve`
// runs in production, so the load generator does not share its event loop. Everything listens on
// 127.0.0.1 only. Options (env): BENCH_SECONDS (default 5), BENCH_CONNECTIONS (default 10).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'idm-compat.js');

interface Scenario {
  name: string;
  /** The legacy call through the proxy. */
  proxy: { path: string };
  /** The equivalent call straight to the successor. */
  direct: { path: string };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`the proxy exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not become ready`);
}

async function sandboxCalls(sandboxUrl: string): Promise<number> {
  const response = await fetch(`${sandboxUrl}/__sandbox/counters`);
  const body = (await response.json()) as { total: number; counters: Record<string, number> };
  return body.total - (body.counters['POST /token'] ?? 0);
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

async function load(url: string, headers: Record<string, string>) {
  // An unrecorded warm-up first, so JIT compilation and connection set-up do not count.
  const warmup = await autocannon({ url, connections, duration: 1, headers });
  const result = await autocannon({ url, connections, duration: seconds, headers });
  return {
    requests: result.requests.total,
    warmupRequests: warmup.requests.total,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'idm-compat-bench-'));
  const [proxyPort, sandboxPort] = [await freePort(), await freePort()];
  const configFile = path.join(dir, 'config.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      server: { host: '127.0.0.1', port: proxyPort },
      sandbox: { enabled: true, port: sandboxPort },
      store: { type: 'sqlite', path: path.join(dir, 'bench.db') },
      mappings: { dir: path.join(root, 'mappings') },
      logging: { level: 'warn' },
    }),
  );
  const added = JSON.parse(
    execFileSync(
      process.execPath,
      [bin, 'apiuser', 'add', 'bench', '--range', '127.0.0.1/32', '--json', '--config', configFile],
      {
        encoding: 'utf8',
      },
    ),
  ) as { password: string };
  const child = spawn(process.execPath, [bin, 'serve', '--config', configFile], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    const proxyUrl = `http://127.0.0.1:${proxyPort}`;
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    await waitFor(`${proxyUrl}/readyz`, child);
    const tokenResponse = await fetch(`${sandboxUrl}/iserv/auth/public/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'idm-compat',
        client_secret: 'sandbox-secret',
        scope: 'iserv:idm:api-read',
      }),
    });
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const proxyHeaders = {
      authorization: `Basic ${Buffer.from(`bench:${added.password}`).toString('base64')}`,
    };
    const directHeaders = { authorization: `Bearer ${token}`, accept: 'application/json' };
    const api = '/iserv/idm/api/v1';
    const scenarios: Scenario[] = [
      {
        name: 'get one user',
        proxy: { path: '/iserv/api/Service/Core/Entity/User/admin' },
        direct: { path: `${api}/users?user=admin` },
      },
      {
        name: 'list users',
        proxy: { path: '/iserv/api/Service/Core/Entity/User' },
        direct: { path: `${api}/users?deleted=false&itemsPerPage=100` },
      },
      {
        name: 'list users, extended',
        proxy: { path: '/iserv/api/Service/Core/Entity/User?extended=1' },
        direct: {
          path: `${api}/users?deleted=false&itemsPerPage=100&_attributes=user,firstname,lastname,status,created,createdBy.user,lastLogin,roles.role,groups.group,privileges.privilege`,
        },
      },
    ];

    const rows: string[][] = [];
    for (const scenario of scenarios) {
      const before = await sandboxCalls(sandboxUrl);
      const viaProxy = await load(`${proxyUrl}${scenario.proxy.path}`, proxyHeaders);
      const successorCalls = (await sandboxCalls(sandboxUrl)) - before;
      const proxyRequests = viaProxy.requests + viaProxy.warmupRequests;
      const direct = await load(`${sandboxUrl}${scenario.direct.path}`, directHeaders);
      const perCall = proxyRequests === 0 ? 0 : successorCalls / proxyRequests;
      rows.push([scenario.name, 'proxy', ...figures(viaProxy), perCall.toFixed(2)]);
      rows.push([scenario.name, 'direct', ...figures(direct), '1.00']);
    }
    const header = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'successor calls/req'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
    const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ');
    process.stdout.write(
      `idm-compat bench: ${seconds}s per target, ${connections} connections, Node ${process.version}\n\n`,
    );
    process.stdout.write(`${line(header)}\n${line(widths.map((w) => '-'.repeat(w)))}\n`);
    for (const row of rows) process.stdout.write(`${line(row)}\n`);
    process.stdout.write(
      `\nproxy process RSS after the run: ${child.pid === undefined ? '?' : rssMiB(child.pid)} MiB\n`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

function figures(r: { rps: number; p50: number; p99: number; errors: number }): string[] {
  return [String(r.rps), String(r.p50), String(r.p99), String(r.errors)];
}

await main();
