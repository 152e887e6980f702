// The figures `npm run bench` prints: the --json document's shape and the terminal table, from a
// report built by hand (no timing involved).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addCalls,
  addedOverDirect,
  type BenchReport,
  callTotal,
  callWrites,
  countsBetween,
  formatTable,
  median,
  perRequestText,
  summarizeRounds,
  type TargetFigures,
  toJson,
  turnOrder,
} from '../bench/report.js';

const figures = (overrides: Partial<TargetFigures> = {}): TargetFigures => ({
  rps: 1000,
  p50Ms: 5,
  p99Ms: 12,
  addedP50Ms: 0.4,
  cpuUsPerRequest: 150,
  successorCallsPerRequest: 1,
  successorWritesPerRequest: 0,
  rssMiB: 120.5,
  errors: 0,
  ...overrides,
});

const report: BenchReport = {
  node: 'v20.20.2',
  seconds: 5,
  connections: 50,
  scenarios: [
    {
      name: 'get one user (warm)',
      kind: 'load',
      targets: {
        direct: figures({ rps: 4000, addedP50Ms: 0, cpuUsPerRequest: null, rssMiB: null }),
        hop: figures({ rps: 3000, cpuUsPerRequest: 100 }),
        proxy: figures({ rps: 2400, cpuUsPerRequest: 180 }),
        proxyPostgres: figures({ rps: 2200, cpuUsPerRequest: 190 }),
      },
    },
    {
      name: 'link + unlink a group',
      kind: 'load',
      targets: {
        direct: figures({ addedP50Ms: 0, cpuUsPerRequest: null, rssMiB: null, successorWritesPerRequest: 1 }),
        hop: figures({ successorWritesPerRequest: 1 }),
        proxy: figures({ successorCallsPerRequest: 2.49, successorWritesPerRequest: 1 }),
      },
    },
    {
      name: 'list users extended, 10,000 users',
      kind: 'large-list',
      targets: {
        direct: figures({ rps: null, seconds: 0.5, peakRssMiB: null, cpuUsPerRequest: null }),
        hop: figures({ rps: null, seconds: 0.55, peakRssMiB: 95 }),
        proxy: figures({ rps: null, seconds: 0.6, peakRssMiB: 140, cpuUsPerRequest: 100_000 }),
      },
    },
  ],
};

describe('bench report', () => {
  it('prints the JSON document with node, scenarios and every figure per target', () => {
    const json = JSON.parse(toJson(report)) as {
      node: string;
      scenarios: { name: string; targets: Record<string, Record<string, unknown>> }[];
    };
    assert.equal(json.node, 'v20.20.2');
    assert.deepEqual(
      json.scenarios.map((scenario) => scenario.name),
      ['get one user (warm)', 'link + unlink a group', 'list users extended, 10,000 users'],
    );
    assert.deepEqual(Object.keys(json.scenarios[0]?.targets ?? {}), [
      'direct',
      'hop',
      'proxy',
      'proxyPostgres',
    ]);
    for (const scenario of json.scenarios) {
      assert.deepEqual(Object.keys(scenario).sort(), ['name', 'targets']);
      assert.deepEqual(Object.keys(scenario.targets).slice(0, 3), ['direct', 'hop', 'proxy']);
      for (const target of Object.values(scenario.targets)) {
        for (const key of [
          'rps',
          'p50Ms',
          'p99Ms',
          'addedP50Ms',
          'cpuUsPerRequest',
          'successorCallsPerRequest',
          'successorWritesPerRequest',
          'rssMiB',
        ])
          assert.ok(key in target, key);
      }
    }
    assert.equal(json.scenarios[1]?.targets.proxy?.successorWritesPerRequest, 1);
    const large = json.scenarios[2]?.targets.proxy;
    assert.equal(large?.seconds, 0.6);
    assert.equal(large?.peakRssMiB, 140);
  });

  it('prints one table row per scenario and target, ratios to direct and to the hop', () => {
    const table = formatTable(report);
    const lines = table.split('\n');
    assert.match(lines[0] ?? '', /Node v20\.20\.2, 5s per target, 50 connections/);
    const proxyRow = lines.find((line) => line.startsWith('get one user (warm)') && / proxy /.test(line));
    assert.ok(proxyRow, table);
    const postgresRow = lines.find(
      (line) => line.startsWith('get one user (warm)') && / proxyPostgres /.test(line),
    );
    assert.match(postgresRow ?? '', /2200 \(0\.55×\)/, 'the PostgreSQL store has its row next to SQLite');
    assert.match(proxyRow, /2400 \(0\.60×\)/, 'req/s as a share of direct');
    assert.match(proxyRow, /180 \(1\.80×\)/, 'CPU per request as a multiple of the hop');
    assert.match(proxyRow, / 1\.00 {2}/, 'a read scenario shows its calls alone');
    const writeRow = lines.find((line) => line.startsWith('link + unlink a group') && / proxy /.test(line));
    assert.match(
      writeRow ?? '',
      / 2\.49 \(1\.00\) /,
      'a write scenario shows its calls and, in brackets, its writes',
    );
    const directRow = lines.find((line) => line.startsWith('get one user (warm)') && / direct /.test(line));
    assert.match(directRow ?? '', / — /, 'no proxy process, no CPU figure');
    const largeRow = lines.find(
      (line) => line.startsWith('list users extended, 10,000') && / proxy /.test(line),
    );
    assert.match(largeRow ?? '', /0\.60 \(1\.20×\)\s+100\s+1\s+140\.0\s/, 'seconds, CPU ms, calls, peak RSS');
  });

  it("reports each target's one-connection median minus direct's, direct's own median left as measured", () => {
    const medians = { direct: 0.643, hop: 0.746, proxy: 0.952, proxyPostgres: 1.047 };
    assert.deepEqual(addedOverDirect(medians), { direct: 0, hop: 0.1, proxy: 0.31, proxyPostgres: 0.4 });
    assert.deepEqual(
      medians,
      { direct: 0.643, hop: 0.746, proxy: 0.952, proxyPostgres: 1.047 },
      'input unchanged',
    );
    // A target faster than direct at one connection (noise) shows as negative, not as its median.
    assert.deepEqual(addedOverDirect({ direct: 0.9, hop: 0.85, proxy: 1.5 }), {
      direct: 0,
      hop: -0.05,
      proxy: 0.6,
    });
    assert.throws(() => addedOverDirect({ hop: 1 }), /direct was not measured/);
  });

  it("sums up side-by-side rounds by ratios within each round, not by the rounds' medians", () => {
    // Round 2 runs on a machine twice as slow for all: within each round the proxy costs 2× the
    // hop and the candidate 0.9× the proxy, so the ratios say so exactly, whatever the drift.
    const rounds = [
      { hop: 100, proxy: 200, candidate: 180 },
      { hop: 200, proxy: 400, candidate: 360 },
      { hop: 110, proxy: 220, candidate: 230 },
    ];
    const [hop, proxy, candidate] = summarizeRounds(rounds, ['hop', 'proxy', 'candidate']);
    assert.deepEqual(hop, { name: 'hop', medianUs: 110, overReference: 1 });
    assert.deepEqual(proxy, { name: 'proxy', medianUs: 220, overReference: 2 });
    assert.equal(candidate?.medianUs, 230);
    assert.equal(candidate?.overReference, 1.8);
    assert.equal(candidate?.overBase?.ratio, 0.9);
    assert.equal(candidate?.overBase?.lowerIn, 2);
  });

  it("counts the successor's calls between two snapshots by route, writes being every method but GET and HEAD", () => {
    const before = { 'GET /users/{id}': 10, 'POST /users/{id}/groups': 4 };
    const after = {
      'GET /users/{id}': 13,
      'POST /users/{id}/groups': 5,
      'DELETE /users/{id}/groups/{groupId}': 1,
      'HEAD /users/{id}': 0,
    };
    const between = countsBetween(before, after);
    assert.deepEqual(between, {
      'GET /users/{id}': 3,
      'POST /users/{id}/groups': 1,
      'DELETE /users/{id}/groups/{groupId}': 1,
    });
    assert.equal(callTotal(between), 5);
    assert.equal(callWrites(between), 2);
    assert.equal(callWrites({ 'HEAD /users/{id}': 2, 'GET /users': 1 }), 0);
    const tally = { 'GET /users/{id}': 1 };
    addCalls(tally, between);
    assert.deepEqual(tally, {
      'GET /users/{id}': 4,
      'POST /users/{id}/groups': 1,
      'DELETE /users/{id}/groups/{groupId}': 1,
    });
    assert.equal(
      perRequestText(tally, 2),
      'GET /users/{id} 2.00, DELETE /users/{id}/groups/{groupId} 0.50, POST /users/{id}/groups 0.50',
    );
    assert.equal(perRequestText({}, 2), 'none');
    assert.equal(perRequestText({ 'GET /users': 1 }, 1000), 'none', 'under 0.01 a request: left out');
    // Counters only grow; a drop (the sandbox's counters reset during a run) shows, not hidden.
    assert.deepEqual(countsBetween({ 'GET /users': 5 }, { 'GET /users': 3 }), { 'GET /users': -2 });
  });

  it('takes the median of an odd and an even count', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });

  it('lets the targets take turns, every target once a round, the order reversed every other round', () => {
    assert.deepEqual(turnOrder(['direct', 'hop', 'proxy'], 3), [
      'direct',
      'hop',
      'proxy',
      'proxy',
      'hop',
      'direct',
      'direct',
      'hop',
      'proxy',
    ]);
    assert.deepEqual(turnOrder(['direct', 'hop'], 0), []);
  });
});
