// Preloaded into the bench's proxies and hop with BENCH_ASYNC (`node --import bench/count-async.mjs`):
// counts the async resources the process creates (promises, process.nextTick callbacks, timers,
// immediates, …, by async_hooks type) and the HTTP requests it serves, and writes both as JSON to
// `$IDM_COMPAT_BENCH_ASYNC_DIR/<pid>.json` every 100 ms, for the bench to take the difference over
// a run. Counts, unlike CPU time, do not move with the machine's speed; the promise hook slows the
// process down, so CPU figures of such a run mean nothing.
import { createHook } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import { writeSnapshots } from './hook-output.mjs';

/** @type {Record<string, number>} */
const resources = {};
let requests = 0;
createHook({
  init(_id, type) {
    resources[type] = (resources[type] ?? 0) + 1;
  },
}).enable();
subscribe('http.server.request.start', () => {
  requests += 1;
});
writeSnapshots('IDM_COMPAT_BENCH_ASYNC_DIR', () => ({ requests, resources }));
