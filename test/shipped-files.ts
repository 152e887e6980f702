// The files idm-compat ships in mappings/ (its profiles and compare rules), kept as they are around
// a test that tries to write there: should a refusal fail, the checkout is put back, and the test
// is told which files were touched.
import {
  chmodSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';

const SHIPPED = path.resolve('mappings');

/** Runs `work`; then puts every shipped file back as it was, and answers the ones it found changed, added or removed. */
export async function keepingShippedFiles(work: () => Promise<void>): Promise<string[]> {
  const before = snapshot();
  let touched: string[] = [];
  try {
    await work();
  } finally {
    touched = restore(before);
  }
  return touched;
}

function snapshot(): Map<string, { bytes: Buffer; mode: number }> {
  const files = new Map<string, { bytes: Buffer; mode: number }>();
  for (const entry of readdirSync(SHIPPED, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files.set(file, { bytes: readFileSync(file), mode: statSync(file).mode });
  }
  return files;
}

function restore(before: Map<string, { bytes: Buffer; mode: number }>): string[] {
  const touched: string[] = [];
  const now = snapshot();
  for (const [file, kept] of before) {
    const current = now.get(file);
    if (current?.bytes.equals(kept.bytes) && current.mode === kept.mode) continue;
    touched.push(file);
    writeFileSync(file, kept.bytes);
    chmodSync(file, kept.mode);
  }
  for (const file of now.keys()) {
    if (before.has(file)) continue;
    touched.push(file);
    rmSync(file);
  }
  return touched;
}

/**
 * A hard link to `shipped` (a file of the shipped `mappings/`) in `dir`, or, where `dir` is on
 * another file system than the checkout, in the checkout's ignored `.tmp/` folder until the test
 * process exits.
 */
export function hardLinkTo(shipped: string, dir: string, name: string): string {
  const link = path.join(dir, name);
  try {
    linkSync(shipped, link);
    return link;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
  }
  const local = path.resolve('.tmp', `${process.pid}-${name}`);
  mkdirSync(path.dirname(local), { recursive: true });
  linkSync(shipped, local);
  // Not left behind in the checkout (temp folders are removed with the test run).
  process.once('exit', () => rmSync(local, { force: true }));
  return local;
}
