// The successor's connection pool is undici's own Agent, loaded without the rest of undici
// (src/successor/agent.ts): the binary's modules never load undici's index, whose fetch, WebSocket
// and caches the proxy does not use; replaying recordings and forwarding to the old server load it
// when they run. What goes through the Agent (API, token and discovery calls) is tested against
// the sandbox and its OAuth2 server in successor.*.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { Agent } from '../src/successor/agent.js';

const root = path.resolve(import.meta.dirname, '..');

test('the Agent is the very class undici exports (an undici release that moves it fails here)', () => {
  const undici = createRequire(import.meta.url)('undici') as { Agent: unknown };
  assert.equal(Agent, undici.Agent);
});

test("importing the binary's modules loads undici's Agent, not its index", () => {
  const script = `
    import { createRequire } from 'node:module';
    await import('./src/cli.ts');
    const require = createRequire(process.cwd() + '/');
    const loaded = (id) => require.resolve(id) in require.cache;
    process.stdout.write(JSON.stringify({ index: loaded('undici'), agent: loaded('undici/lib/dispatcher/agent.js') }));
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { index: false, agent: true });
});
