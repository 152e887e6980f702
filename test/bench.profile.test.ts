// bench/profile.ts: what a V8 CPU profile says about where a process's time went, from a profile
// built by hand (the shape `node --cpu-prof` writes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CpuProfile, formatSummary, moduleOf, summarizeProfile } from '../bench/profile.js';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3, 4, 5, 6] },
    { id: 2, callFrame: frame('(idle)') },
    { id: 3, callFrame: frame('writev') },
    {
      id: 4,
      callFrame: frame('json', 'file:///srv/idm-compat/node_modules/hono/dist/context.js', 335),
      children: [7],
    },
    { id: 5, callFrame: frame('run', 'file:///srv/idm-compat/dist/mapping/executor.js', 91) },
    { id: 6, callFrame: frame('(garbage collector)') },
    { id: 7, callFrame: frame('end', 'node:_http_outgoing', 1033) },
  ],
  // timeDeltas[i] is the time from sample i-1 to sample i, so each sample stands for the next
  // delta: idle 1 ms, writev 1 + 0.5 ms, json 1 + 1 + 1 ms, run 1 ms, GC 0.5 ms, end 0.25 ms, and
  // the last sample (idle) for nothing.
  samples: [2, 3, 4, 4, 5, 3, 6, 4, 7, 2],
  timeDeltas: [0, 1000, 1000, 1000, 1000, 1000, 500, 500, 1000, 250],
};

describe('bench profile summary', () => {
  it('adds up self time by function and by module, idle left out of the busy time', () => {
    const summary = summarizeProfile(profile);
    assert.equal(summary.totalMs, 7.25);
    assert.equal(summary.busyMs, 6.25);
    assert.deepEqual(
      summary.byModule.map((row) => [row.name, row.selfMs, row.share]),
      [
        ['hono', 3, 3 / 6.25],
        ['native writev', 1.5, 1.5 / 6.25],
        ['src/mapping', 1, 1 / 6.25],
        ['(garbage collector)', 0.5, 0.5 / 6.25],
        ['node:_http_outgoing', 0.25, 0.25 / 6.25],
      ],
    );
    assert.deepEqual(
      summary.byFunction.map((row) => row.name),
      [
        'json hono/dist/context.js:336',
        'writev',
        'run src/mapping/executor.js:92',
        '(garbage collector)',
        'end node:_http_outgoing:1034',
      ],
    );
  });

  it('names the module of packages, scoped packages, Node internals and our own folders', () => {
    assert.equal(
      moduleOf('file:///a/node_modules/@hono/node-server/dist/index.mjs', 'f'),
      '@hono/node-server',
    );
    assert.equal(moduleOf('file:///a/node_modules/pino/node_modules/sonic-boom/index.js', 'f'), 'sonic-boom');
    assert.equal(moduleOf('node:internal/streams/writable', 'f'), 'node:streams');
    assert.equal(moduleOf('node:events', 'f'), 'node:events');
    assert.equal(moduleOf('file:///w/idm-compat/src/successor/http.ts', 'f'), 'src/successor');
    // The build's dist/ is our src/.
    assert.equal(moduleOf('file:///w/idm-compat/dist/mapping/ids.js', 'f'), 'src/mapping');
    assert.equal(moduleOf('file:///w/idm-compat/dist/app.js', 'f'), 'src/app.js');
    assert.equal(moduleOf('file:///w/idm-compat/bench/hop.ts', 'f'), 'bench/hop.ts');
    // A checkout below a src/ folder of its own: the last such folder counts.
    assert.equal(moduleOf('file:///home/kim/src/idm-compat/dist/auth/middleware.js', 'f'), 'src/auth');
    assert.equal(moduleOf('wasm://wasm/00034eea', 'wasm-function[20]'), 'wasm');
    assert.equal(moduleOf('', 'parse'), 'native parse');
    assert.equal(moduleOf('', '(program)'), '(program)');
  });

  it('prints shares, and µs per request when given the CPU per request', () => {
    const text = formatSummary(summarizeProfile(profile), 2, 400);
    assert.match(text, /^busy 6 ms of 7 ms sampled/);
    assert.match(text, /\n {2}48\.0 % {3}192\.0 µs {2}hono\n/);
    // --top cuts each table.
    assert.doesNotMatch(text, /src\/mapping/);
    assert.doesNotMatch(formatSummary(summarizeProfile(profile), 5), /µs/);
  });
});
