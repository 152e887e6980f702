// Runs the idm-compat CLI (argv after this file) with two signal handlers for bench/memory.ts:
// SIGUSR2 runs a full GC and prints `memory: {before, after}` (process.memoryUsage) on stderr; SIGWINCH
// writes a heap snapshot into the working directory. Needs node --expose-gc.
import path from 'node:path';
import v8 from 'node:v8';

const gc = globalThis.gc;
if (typeof gc !== 'function') throw new Error('run with node --expose-gc');
process.on('SIGUSR2', () => {
  const before = process.memoryUsage();
  gc();
  process.stderr.write(`memory: ${JSON.stringify({ before, after: process.memoryUsage() })}\n`);
});
process.on('SIGWINCH', () => {
  const file = v8.writeHeapSnapshot();
  process.stderr.write(`snapshot: ${path.resolve(file)}\n`);
});
await import(path.resolve(import.meta.dirname, '..', 'bin', 'idm-compat.js'));
