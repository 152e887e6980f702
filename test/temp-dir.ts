// Folders for the files a test writes (configuration files, SQLite stores, recordings, builds):
// all of a test file's folders live under one folder of its own in os.tmpdir(), removed when the
// test file's process exits (node --test runs each file in a process of its own). A process that
// never got to its exit handler (killed at a timeout, Ctrl-C) leaves its folder behind; the next
// test file to ask for a folder removes those of processes that no longer run. Without this, a
// run left some 800 folders (about 70 MB) in the temp folder, run after run.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const PREFIX = 'idm-compat-test-';

let root: string | undefined;

/** This process's folder for test files, made at first use and removed at exit. */
function testRoot(): string {
  if (root === undefined) {
    removeOrphans();
    const made = mkdtempSync(path.join(tmpdir(), `${PREFIX}${process.pid}-`));
    process.once('exit', () => removeQuietly(made));
    root = made;
  }
  return root;
}

/** A new, empty folder named after `name` (e.g. `config`), gone when this test file's process exits. */
export function tempDir(name: string): string {
  return mkdtempSync(path.join(testRoot(), `${name}-`));
}

/** The folders of test processes that ended without removing theirs. */
function removeOrphans(): void {
  const parent = tmpdir();
  for (const entry of readdirSync(parent)) {
    if (!entry.startsWith(PREFIX)) continue;
    const pid = Number.parseInt(entry.slice(PREFIX.length), 10);
    if (Number.isSafeInteger(pid) && pid > 0 && !running(pid)) removeQuietly(path.join(parent, entry));
  }
}

/** Whether a process with this ID runs (one of another user's counts: it may not be signalled). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeQuietly(folder: string): void {
  try {
    rmSync(folder, { recursive: true, force: true });
  } catch {
    // Another test file removes it at the same moment, or a child process a test left running
    // still writes into it: better a folder left behind than a test file failed at its exit.
  }
}
