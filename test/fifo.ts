// A FIFO (named pipe) for tests of writers that meet one: a stalled disk (nobody reads it yet), or
// an --out a reader consumes as it is written.
import { execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';

/** Makes a FIFO at `file` (mkfifo). */
export function makeFifo(file: string): void {
  execFileSync('mkfifo', [file]);
}

/** Opens the FIFO for reading and resolves with everything written to it until its writer closes it. */
export function readFifo(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    createReadStream(file, 'utf8')
      .on('data', (chunk) => {
        text += chunk;
      })
      .on('end', () => resolve(text))
      .on('error', reject);
  });
}
