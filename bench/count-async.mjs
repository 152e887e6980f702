// Preloaded into the bench's proxies and hop with BENCH_ASYNC (`node --import bench/count-async.mjs`):
// counts the async resources the process creates (promises, process.nextTick callbacks, timers,
// immediates, …, by async_hooks type) and the HTTP requests it serves, and writes both as JSON to
// `$IDM_COMPAT_BENCH_ASYNC_DIR/<pid>.json` every 100 ms, for the bench to take the difference over
// a run. Counts, unlike CPU time, do not move with the machine's speed; the promise hook slows the
// process down, so CPU figures of such a run mean nothing.
import { createHook } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.IDM_COMPAT_BENCH_ASYNC_DIR;
if (!dir) throw new Error('count-async.mjs needs IDM_COMPAT_BENCH_ASYNC_DIR');
const file = path.join(dir, `${process.pid}.json`);
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
// Written beside and renamed into place, so that a reader never sees half a file.
setInterval(() => {
  writeFileSync(`${file}.tmp`, JSON.stringify({ requests, resources }));
  renameSync(`${file}.tmp`, file);
}, 100).unref();
