// The bench's async-resource counter (BENCH_ASYNC): bench/count-async.mjs preloaded into a real Node
// HTTP server on 127.0.0.1 counts the requests it serves and the async resources it makes, and
// asyncPerRequest turns two of its counts into figures per request.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AsyncCounts, asyncPerRequest, hookFlags, hookSnapshot } from '../bench/processes.js';
import { tempDir } from './temp-dir.js';

// Each request makes two promises of its own (the async handler's and the one it awaits) and one
// process.nextTick callback.
const SERVER = `
const server = require('node:http').createServer(async (req, res) => {
  await new Promise((resolve) => process.nextTick(resolve));
  res.end('ok');
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

describe('bench async-resource counts', () => {
  const dir = tempDir('async-test');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('counts the requests a process serves and the promises and ticks it makes for them', async () => {
    const child = spawn(process.execPath, [...hookFlags('count-async.mjs', dir), '-e', SERVER], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, IDM_COMPAT_BENCH_ASYNC_DIR: dir },
    });
    try {
      const port = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (d) => resolve(String(d).trim()));
        child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it listened`)));
      });
      const pid = child.pid ?? 0;
      const written = () => existsSync(path.join(dir, `${pid}.json`));
      for (let i = 0; i < 250 && !written(); i++) await sleep(20);
      assert.ok(written(), 'the preloaded counter wrote no counts');
      await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
      await sleep(250);
      const before = hookSnapshot<AsyncCounts>(dir, pid);
      for (let i = 0; i < 20; i++) await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
      await sleep(250);
      const later = hookSnapshot<AsyncCounts>(dir, pid);
      assert.equal(later.requests - before.requests, 20);
      // The handler's own promise and tick at least, per request.
      assert.ok((later.resources.PROMISE ?? 0) - (before.resources.PROMISE ?? 0) >= 40);
      assert.ok((later.resources.TickObject ?? 0) - (before.resources.TickObject ?? 0) >= 20);
    } finally {
      // Gone before the folder is removed: its counter writes until then.
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('gives the resources per request, most first, and says when no request was counted', () => {
    const before = { requests: 10, resources: { PROMISE: 100, Timeout: 5, TickObject: 30 } };
    const later = { requests: 14, resources: { PROMISE: 312, Timeout: 5, TickObject: 42, Immediate: 8 } };
    assert.equal(asyncPerRequest(before, later), 'PROMISE 53.00, TickObject 3.00, Immediate 2.00');
    assert.equal(asyncPerRequest(before, before), 'no requests counted');
  });
});
