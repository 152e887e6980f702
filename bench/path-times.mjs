// Preloaded into the bench's proxies and hop with BENCH_PATH (`node --import bench/path-times.mjs`):
// the process's own time on the path of a request, which is what it adds to a caller's wait
// besides the successor's answer and the extra trip over the network:
// - `before`: from the request's arrival (its headers parsed) to the start of its first successor
//   call (undici's `undici:request:create`);
// - `after`: from the end of its last successor answer (`undici:request:trailers`) to the moment
//   the answer is handed to the socket (`res.end`). What the process does after that (a log line,
//   metrics) keeps the caller of a lone request no longer waiting, and is not counted;
// - `calls`: from the first call's start to the last answer's end, the successor's part as the
//   process sees it (with a request's own work between two calls, if it makes several).
// Only a request that was the only one in flight from its arrival to its end is timed, so the
// figures come from one-connection load (the bench's latency slices); requests without a
// successor call are not timed either. Successor calls are told apart by order only: a call made
// for a request whose caller has already gone (its handler still running) or in the background
// (a token renewal) counts for the lone request of the moment. The bench's one-connection slices
// wait for every answer and start 300 ms after the load slices, so such calls are rare there.
// All three are kept in 1 µs buckets, cumulative, and written as JSON to
// `$IDM_COMPAT_BENCH_PATH_DIR/<pid>.json` every 100 ms when they changed, for the bench to take
// the difference over its one-connection slices. The hooks cost the process a little on
// every request, so such a run leaves the CPU figures empty.
import { subscribe } from 'node:diagnostics_channel';
import { ServerResponse } from 'node:http';
import { writeSnapshots } from './hook-output.mjs';

/** µs → requests, cumulative. */
const before = {};
const after = {};
const calls = {};
let timed = 0;
let changed = true;
let inFlight = 0;
/** The request being timed while it is the only one in flight; undefined otherwise. */
let current;

subscribe('http.server.request.start', ({ response }) => {
  inFlight += 1;
  current =
    inFlight === 1 ? { response, arrived: performance.now(), firstCall: 0, lastAnswer: 0 } : undefined;
  response.once('close', () => {
    inFlight -= 1;
  });
});
subscribe('undici:request:create', () => {
  if (current && current.firstCall === 0) current.firstCall = performance.now();
});
subscribe('undici:request:trailers', () => {
  if (current && current.firstCall > 0) current.lastAnswer = performance.now();
});

const end = ServerResponse.prototype.end;
ServerResponse.prototype.end = function endTimed(...args) {
  const request = current;
  if (request?.response === this) {
    current = undefined;
    if (request.firstCall > 0 && request.lastAnswer > 0) {
      add(before, request.firstCall - request.arrived);
      add(after, performance.now() - request.lastAnswer);
      add(calls, request.lastAnswer - request.firstCall);
      timed += 1;
      changed = true;
    }
  }
  return end.apply(this, args);
};

/** Counts one request in the bucket of `ms`, rounded to whole µs. */
function add(buckets, ms) {
  const us = Math.max(0, Math.round(ms * 1000));
  buckets[us] = (buckets[us] ?? 0) + 1;
}

writeSnapshots('IDM_COMPAT_BENCH_PATH_DIR', () => {
  if (!changed) return undefined;
  changed = false;
  return { timed, before, after, calls };
});
