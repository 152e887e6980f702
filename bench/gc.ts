// The proxy child of bench/memory.ts and bench/soak.ts runs through bench/memory-child.mjs: SIGUSR2
// runs a full GC and prints `memory: {before, after}`, SIGWINCH writes a heap snapshot.
import type { ChildProcess } from 'node:child_process';

/** Lines the proxy child prints on stderr, for the GC and snapshot signals' answers. */
export class ChildLines {
  #waiting: { prefix: string; resolve: (rest: string) => void }[] = [];
  constructor(child: ChildProcess) {
    let buffer = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        const waiter = this.#waiting.find((w) => line.startsWith(w.prefix));
        if (waiter) {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          waiter.resolve(line.slice(waiter.prefix.length));
        } else process.stderr.write(`${line}\n`);
      }
    });
  }
  next(prefix: string): Promise<string> {
    return new Promise((resolve) => this.#waiting.push({ prefix, resolve }));
  }
}

/** MiB with one decimal. */
export const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);

/** process.memoryUsage() of the child before and after a full GC. */
export async function gcReport(
  child: ChildProcess,
  lines: ChildLines,
): Promise<{ before: NodeJS.MemoryUsage; after: NodeJS.MemoryUsage }> {
  const answer = lines.next('memory: ');
  child.kill('SIGUSR2');
  return JSON.parse(await answer) as { before: NodeJS.MemoryUsage; after: NodeJS.MemoryUsage };
}
