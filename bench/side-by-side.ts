// Side by side: one scenario of `npm run bench` (by default the warm GET, `GET …/User/admin`)
// through the hop and through one or more proxies (builds or configurations), loaded in turn,
// round after round (the order reversed every other round), so that the machine's speed, which
// drifts by ±20 % between runs of a few seconds here, is the same for all within a round. Prints
// each round's CPU µs per request and the medians of the rounds' ratios: to the hop, and of every
// further proxy to the first one.
//
//   npx tsx bench/side-by-side.ts [--scenario REGEX] [--rounds 8] [--seconds 3] [--connections 50] [--rate N] [--flags NAME=FLAGS …] [NAME=BUILD[@CONFIG] …]
//
// `--scenario` picks the first of the bench's load scenarios whose name matches (e.g. `link` for
// the write path); the hop forwards its direct calls, the proxies get its legacy calls.
// BUILD is a built checkout of idm-compat (a folder with bin/ and dist/; `.` for this one, built
// first with `npm run build`); CONFIG is JSON merged into the proxy's configuration file, e.g.
// `quiet=.@{"logging":{"level":"warn"}}`. Without targets: `proxy=.`. `--rate` sends that many
// requests a second in all (autocannon's overallRate) instead of as many as the connections can.
// `--flags NAME=FLAGS` (repeatable) starts that proxy's process with Node's or V8's flags, separated
// by spaces, e.g. `--flags small='--max-semi-space-size=16' default=. small=.` (NODE_OPTIONS would
// set them for every process, the hop and the sandbox too).
// Everything runs on 127.0.0.1, the sandbox in its own process, as in `npm run bench`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { ACCEPT, bearerToken, type Call, cannonRequests, loadScenarios } from './calls.js';
import {
  basicAuthorization,
  cpuTotal,
  proxyConfig,
  type Running,
  serveProxy,
  startHop,
  startSandbox,
} from './processes.js';
import { summarizeRounds, turnOrder } from './report.js';

interface Target {
  name: string;
  url: string;
  calls: Call[];
  headers: Record<string, string>;
  process: Running;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    rate: { type: 'string' },
    scenario: { type: 'string', default: '^get one user' },
    flags: { type: 'string', multiple: true, default: [] },
  },
});
/** Each proxy's Node flags, by its name. */
const flagsOf = new Map(
  values.flags.map((entry) => {
    const at = entry.indexOf('=');
    if (at <= 0) throw new Error(`not a proxy's flags: ${entry} (NAME=FLAGS)`);
    if (values.flags.filter((other) => other.startsWith(entry.slice(0, at + 1))).length > 1)
      throw new Error(`--flags for ${entry.slice(0, at)} given twice`);
    return [
      entry.slice(0, at),
      entry
        .slice(at + 1)
        .split(' ')
        .filter(Boolean),
    ] as const;
  }),
);
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const rate = values.rate === undefined ? undefined : Number(values.rate);
const specs = (positionals.length > 0 ? positionals : ['proxy=.']).map((spec) => {
  const match = /^([A-Za-z0-9_-]+)=([^@]+)(?:@(.*))?$/.exec(spec);
  if (!match?.[1] || !match[2] || match[1] === 'hop')
    throw new Error(`not a target: ${spec} (NAME=BUILD[@CONFIG], NAME not "hop")`);
  return {
    name: match[1],
    build: path.resolve(match[2]),
    config: match[3] ? (JSON.parse(match[3]) as Record<string, unknown>) : {},
    nodeFlags: flagsOf.get(match[1]) ?? [],
  };
});
for (const name of flagsOf.keys())
  if (!specs.some((spec) => spec.name === name))
    throw new Error(`--flags for ${name}, which is not a target`);

function load(target: Target, duration: number) {
  return autocannon({
    url: target.url,
    connections,
    duration,
    ...(rate === undefined ? {} : { overallRate: rate }),
    requests: cannonRequests(target.calls, target.headers),
  });
}

const dir = mkdtempSync(path.join(tmpdir(), 'idm-compat-side-by-side-'));
const sandbox = await startSandbox();
const targets: Target[] = [];
try {
  const token = await bearerToken(sandbox);
  const pattern = new RegExp(values.scenario);
  const scenario = (await loadScenarios(sandbox, token)).find((s) => pattern.test(s.name));
  if (!scenario) throw new Error(`no scenario matches ${values.scenario}`);
  process.stdout.write(`scenario: ${scenario.name}\n`);
  const hop = await startHop(sandbox);
  targets.push({
    name: 'hop',
    url: hop.url,
    calls: scenario.direct,
    headers: { authorization: `Bearer ${token}`, accept: ACCEPT },
    process: hop,
  });
  for (const spec of specs) {
    const { port, configFile, user, password } = await proxyConfig(dir, spec.name, sandbox, {
      successor: { pageSize: 500 },
      ...spec.config,
    });
    const url = `http://127.0.0.1:${port}`;
    targets.push({
      name: spec.name,
      url,
      calls: scenario.proxy,
      headers: { authorization: basicAuthorization(user, password) },
      process: await serveProxy(configFile, url, { build: spec.build, nodeFlags: spec.nodeFlags }),
    });
  }
  // Unrecorded, so that JIT compilation and connection set-up do not count.
  for (const target of targets) await load(target, 3);
  const measured: Record<string, number>[] = [];
  const order = turnOrder(targets, rounds);
  for (let round = 0; round < rounds; round++) {
    const figures: Record<string, number> = {};
    for (const target of order.slice(round * targets.length, (round + 1) * targets.length)) {
      const before = cpuTotal(target.process.pid);
      const result = await load(target, seconds);
      // What was still in flight when the run stopped is answered, and counted, too.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const used = cpuTotal(target.process.pid) - before;
      if (result.errors > 0 || result.non2xx > 0)
        process.stderr.write(`${target.name}: ${result.errors} errors, ${result.non2xx} answers not 2xx\n`);
      figures[target.name] = used / Math.max(1, result.requests.sent);
    }
    measured.push(figures);
    process.stdout.write(
      `round ${round + 1}: ${targets.map((t) => `${t.name} ${figures[t.name]?.toFixed(0)} µs`).join(', ')}\n`,
    );
  }
  const names = targets.map((t) => t.name);
  for (const figures of summarizeRounds(measured, names)) {
    const base = figures.overBase
      ? `; × ${names[1]} ${figures.overBase.ratio.toFixed(3)}, lower in ${figures.overBase.lowerIn} of ${rounds} rounds`
      : '';
    process.stdout.write(
      `${figures.name}: median ${figures.medianUs.toFixed(0)} µs per request; × hop ${figures.overReference.toFixed(3)}${base}\n`,
    );
  }
} finally {
  await Promise.all(targets.map((target) => target.process.stop()));
  await sandbox.stop();
  rmSync(dir, { recursive: true, force: true });
}
