// Folders for the files a test writes (configuration files, SQLite stores, recordings, builds):
// all of a test file's folders live under one folder of its own in os.tmpdir(), which is removed
// when the test file's process exits (node --test runs each file in a process of its own), so
// that `npm test` leaves nothing behind however a test ends. Without it, a run left some 800
// folders (about 70 MB) in the temp folder, run after run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

let root: string | undefined;

/** This process's folder for test files, made at first use and removed at exit. */
function testRoot(): string {
  if (root === undefined) {
    const made = mkdtempSync(path.join(tmpdir(), `idm-compat-test-${process.pid}-`));
    process.once('exit', () => {
      try {
        rmSync(made, { recursive: true, force: true });
      } catch {
        // A child process a test left running still writes into it: better a folder left behind
        // than a test file failed at its exit.
      }
    });
    root = made;
  }
  return root;
}

/** A new, empty folder named after `name` (e.g. `config`), gone when this test file's process exits. */
export function tempDir(name: string): string {
  return mkdtempSync(path.join(testRoot(), `${name}-`));
}
