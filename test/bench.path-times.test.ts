// The bench's path timer (BENCH_PATH): bench/path-times.mjs preloaded into a real Node HTTP server
// on 127.0.0.1 that calls a successor (a server of this test, on 127.0.0.1) with undici times its
// own work before the call and after the answer, only for requests served alone, and
// pathTimesBetween turns two of its snapshots into medians.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hookFlags, hookSnapshot, type PathTimes, pathTimesBetween } from '../bench/processes.js';
import { tempDir } from './temp-dir.js';

// 3 ms of work before the successor call, 5 ms after its answer, 20 ms after the answer is handed
// over (which the timer must leave out); `/local` calls no successor.
const SERVER = `
const { request } = require('undici');
const busy = (ms) => { const end = performance.now() + ms; while (performance.now() < end); };
const server = require('node:http').createServer(async (req, res) => {
  if (req.url === '/local') return res.end('local');
  busy(3);
  const answer = await request(process.env.SUCCESSOR_URL);
  await answer.body.text();
  busy(5);
  res.end('ok');
  busy(20);
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

describe('bench path times', () => {
  const dir = tempDir('path-test');
  // The successor answers after 30 ms, so that two requests sent together overlap.
  const successor = createServer((_req, res) => {
    setTimeout(() => res.end('{}'), 30);
  });
  let successorUrl = '';
  before(async () => {
    await new Promise<void>((resolve) => successor.listen(0, '127.0.0.1', resolve));
    successorUrl = `http://127.0.0.1:${(successor.address() as AddressInfo).port}/`;
  });
  after(async () => {
    successor.closeAllConnections();
    await new Promise((resolve) => successor.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('times the work before the first call and after the last answer of lone requests only', async () => {
    const child = spawn(process.execPath, [...hookFlags('path-times.mjs', dir), '-e', SERVER], {
      cwd: path.resolve(import.meta.dirname, '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, IDM_COMPAT_BENCH_PATH_DIR: dir, SUCCESSOR_URL: successorUrl },
    });
    try {
      const port = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (d) => resolve(String(d).trim()));
        child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it listened`)));
      });
      const pid = child.pid ?? 0;
      const get = (route: string) => fetch(`http://127.0.0.1:${port}${route}`).then((r) => r.text());
      const written = () => existsSync(path.join(dir, `${pid}.json`));
      for (let i = 0; i < 250 && !written(); i++) await sleep(20);
      assert.ok(written(), 'the preloaded timer wrote nothing');
      await get('/');
      await sleep(250);
      const first = hookSnapshot<PathTimes>(dir, pid);
      for (let i = 0; i < 8; i++) await get('/');
      await get('/local');
      await sleep(250);
      const second = hookSnapshot<PathTimes>(dir, pid);
      const lone = pathTimesBetween(first, second);
      assert.ok(lone, 'no request was timed');
      // The request without a successor call is not timed.
      assert.equal(lone.timed, 8);
      assert.ok(lone.beforeUs >= 3000 && lone.beforeUs < 20_000, `before: ${lone.beforeUs} µs`);
      // The 20 ms after the hand-over are not counted.
      assert.ok(lone.afterUs >= 5000 && lone.afterUs < 20_000, `after: ${lone.afterUs} µs`);
      // The successor's 30 ms, and neither the work before nor after.
      assert.ok(lone.callsUs >= 30_000 && lone.callsUs < 50_000, `calls: ${lone.callsUs} µs`);

      // Two requests in flight together: neither is timed.
      await Promise.all([get('/'), get('/')]);
      await sleep(250);
      const third = hookSnapshot<PathTimes>(dir, pid);
      assert.equal(third.timed, second.timed);
      assert.equal(pathTimesBetween(second, third), undefined);
    } finally {
      // Gone before the folder is removed: its timer writes until then.
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('gives the medians of the requests timed between two snapshots', () => {
    const earlier = { timed: 2, before: { 10: 2 }, after: { 40: 2 }, calls: { 700: 2 } };
    const later = {
      timed: 5,
      before: { 10: 2, 20: 1, 30: 2 },
      after: { 40: 4, 50: 1 },
      calls: { 700: 2, 800: 3 },
    };
    assert.deepEqual(pathTimesBetween(earlier, later), { timed: 3, beforeUs: 30, afterUs: 40, callsUs: 800 });
    assert.equal(pathTimesBetween(later, later), undefined);
  });
});
