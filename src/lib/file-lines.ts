import { createReadStream } from 'node:fs';

/** One line of a file: its text, or `tooLong` when it held more than the reader's bound. */
export type FileLine = { number: number; text: string } | { number: number; tooLong: true };

/**
 * The lines of a UTF-8 file (ended by `\n`, a `\r` before it dropped), numbered from 1, each held
 * only up to `maxBytes`: a longer one is skipped to its end and given as `tooLong`. node:readline
 * gathers a line without bound, and one past V8's longest string (about 512 MiB) ended the process
 * with a RangeError thrown from inside its stream handler, which no caller could catch.
 */
export async function* fileLines(file: string, maxBytes: number): AsyncGenerator<FileLine> {
  let parts: Buffer[] = [];
  let held = 0;
  let tooLong = false;
  let number = 0;
  const line = (): FileLine => {
    number += 1;
    const result: FileLine = tooLong
      ? { number, tooLong: true }
      : { number, text: withoutCr(Buffer.concat(parts, held).toString('utf8')) };
    parts = [];
    held = 0;
    tooLong = false;
    return result;
  };
  const keep = (bytes: Buffer) => {
    if (tooLong || bytes.length === 0) return;
    if (held + bytes.length > maxBytes) {
      tooLong = true;
      parts = [];
      held = 0;
      return;
    }
    parts.push(bytes);
    held += bytes.length;
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
      keep(chunk.subarray(start, end));
      yield line();
      start = end + 1;
    }
    keep(chunk.subarray(start));
  }
  if (held > 0 || tooLong) yield line();
}

function withoutCr(text: string): string {
  return text.endsWith('\r') ? text.slice(0, -1) : text;
}
