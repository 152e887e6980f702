// `npm run soak`: a bounded mixed read/write load with injected successor faults for a while
// (default 10 minutes: `npm run soak -- --seconds 120` or SOAK_SECONDS), against the proxy in
// production mode (a child process, through bench/memory-child.mjs for GC figures) on
// `idm-compat sandbox` in another child. Every 20 s the sandbox cycles through: normal (8 s),
// 20 % errors (5 s), latency past the proxy's timeout (3 s), token endpoint down (2 s), normal.
// Prints the requests, the answers by status, RSS at start, middle and end, and heap after GC.
// Fails (exit 1) on any answer the fault it was sent in cannot explain: a 500, or a
// connection-level error.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ChildLines, gcReport, mib } from './gc.js';
import { basicAuthorization, proxyConfig, root, rssMiB, startSandbox, waitUntilReady } from './processes.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string' }, connections: { type: 'string' } },
});
const seconds = Number(values.seconds ?? process.env.SOAK_SECONDS ?? 600);
const connections = Number(values.connections ?? process.env.SOAK_CONNECTIONS ?? 10);
const TOTAL_MS = 1_000;

const PHASES: { seconds: number; name: string; faults: Record<string, unknown> | undefined }[] = [
  { seconds: 8, name: 'normal', faults: undefined },
  { seconds: 5, name: '20 % errors', faults: { errorRate: 0.2, errorStatus: 503 } },
  { seconds: 3, name: 'latency', faults: { latencyMs: TOTAL_MS * 2 } },
  { seconds: 2, name: 'token endpoint down', faults: { tokenEndpointDown: true } },
  { seconds: 2, name: 'normal', faults: undefined },
];

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'idm-compat-soak-'));
  const sandbox = await startSandbox();
  let proxy: ChildProcess | undefined;
  let cycling = true;
  try {
    const { port, configFile, user, password } = await proxyConfig(dir, 'soak', sandbox, {
      successor: { timeouts: { totalMs: TOTAL_MS }, retries: { max: 1 } },
      logging: { level: 'warn' },
    });
    proxy = spawn(
      process.execPath,
      ['--expose-gc', path.join(root, 'bench', 'memory-child.mjs'), 'serve', '--config', configFile],
      { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir, env: { ...process.env, NODE_ENV: 'production' } },
    );
    const lines = new ChildLines(proxy);
    const url = `http://127.0.0.1:${port}`;
    await waitUntilReady(url, proxy);
    const pid = proxy.pid ?? 0;
    const headers = {
      authorization: basicAuthorization(user, password),
      'content-type': 'application/json',
    };
    const core = '/iserv/api/Service/Core';
    const requests: autocannon.Request[] = [
      { method: 'GET', path: `${core}/Entity/User/lena.mueller` },
      { method: 'GET', path: `${core}/Entity/User?extended=1` },
      { method: 'GET', path: `${core}/Entity/Group/lehrer` },
      { method: 'GET', path: `${core}/Entity/Role` },
      { method: 'PUT', path: `${core}/Entity/User/jonas.schmidt`, body: JSON.stringify({ auxInfo: 'soak' }) },
      {
        method: 'POST',
        path: `${core}/Entity/User/mia.fischer/link/groups`,
        body: JSON.stringify(['ag.robotik']),
      },
      {
        method: 'DELETE',
        path: `${core}/Entity/User/mia.fischer/link/groups`,
        body: JSON.stringify(['ag.robotik']),
      },
      { method: 'GET', path: `${core}/Entity/User/nobody.here` },
    ];

    const start = await gcReport(proxy, lines);
    process.stdout.write(
      `idm-compat soak: ${seconds}s, ${connections} connections, faults cycling every 20 s, Node ${process.version}\n` +
        `start   RSS ${mib(start.before.rss)} MiB; heap after GC ${mib(start.after.heapUsed)} MiB\n`,
    );
    const faultsUrl = `${sandbox.url}/__sandbox/faults`;
    const cycle = (async () => {
      while (cycling) {
        for (const phase of PHASES) {
          if (!cycling) break;
          await fetch(
            faultsUrl,
            phase.faults
              ? {
                  method: 'PUT',
                  body: JSON.stringify(phase.faults),
                  headers: { 'content-type': 'application/json' },
                }
              : { method: 'DELETE' },
          );
          await sleep(phase.seconds * 1000);
        }
      }
      await fetch(faultsUrl, { method: 'DELETE' });
    })();
    let middle = 0;
    const middleTimer = setTimeout(
      () => {
        middle = rssMiB(pid);
      },
      (seconds * 1000) / 2,
    );
    const result = await autocannon({ url, connections, duration: seconds, headers, requests, timeout: 30 });
    clearTimeout(middleTimer);
    cycling = false;
    await cycle;
    const endRss = rssMiB(pid);
    await sleep(2_000);
    const end = await gcReport(proxy, lines);
    const statuses = Object.entries(result.statusCodeStats ?? {})
      .map(([status, stats]) => `${status}: ${(stats as { count: number }).count}`)
      .join(', ');
    process.stdout.write(
      `middle  RSS ${middle} MiB\n` +
        `end     RSS ${endRss} MiB; after 2 s and a GC: RSS ${mib(end.after.rss)} MiB, heap ${mib(end.after.heapUsed)} MiB\n` +
        `requests ${result.requests.total} (${Math.round(result.requests.average)}/s); by status: ${statuses}; ` +
        `connection errors ${result.errors}, timeouts ${result.timeouts}\n`,
    );
    const fiveHundreds =
      (result.statusCodeStats as Record<string, { count: number }> | undefined)?.['500']?.count ?? 0;
    if (fiveHundreds > 0 || result.errors > 0 || proxy.exitCode !== null) {
      process.stdout.write('FAIL: 500 answers or connection errors\n');
      process.exitCode = 1;
    }
  } finally {
    cycling = false;
    if (proxy && proxy.exitCode === null) {
      const exited = new Promise((resolve) => proxy?.once('exit', resolve));
      proxy.kill('SIGTERM');
      await exited;
    }
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
