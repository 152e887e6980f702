// What the bench's preloaded hooks (count-async.mjs, path-times.mjs) share: each writes a snapshot
// of what it has measured so far as JSON to `<dir>/<pid>.json` every 100 ms, `dir` from its
// environment variable, for the bench to take the difference of two (bench/processes.ts,
// `hookSnapshot`).
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes `snapshot()` every 100 ms into the folder `process.env[variable]` names (throws at once
 * without one); nothing when it returns undefined (nothing changed).
 * @param {string} variable
 * @param {() => unknown} snapshot
 */
export function writeSnapshots(variable, snapshot) {
  const dir = process.env[variable];
  if (!dir) throw new Error(`a bench hook needs ${variable}`);
  const file = path.join(dir, `${process.pid}.json`);
  setInterval(() => {
    const data = snapshot();
    if (data === undefined) return;
    // Written beside and renamed into place, so that a reader never sees half a file.
    writeFileSync(`${file}.tmp`, JSON.stringify(data));
    renameSync(`${file}.tmp`, file);
  }, 100).unref();
}
