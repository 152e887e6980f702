import { isUtf8 } from 'node:buffer';

/**
 * The text of a file that must be UTF-8 (a byte order mark is left for the reader to skip), or
 * why it is not: read as UTF-8 anyway, UTF-16 would be mojibake and a Latin-1 or Windows-1252 `ü`
 * a U+FFFD, which no legacy call, user or table ever names. The reason names the first line that
 * holds other bytes.
 */
export function utf8Text(bytes: Buffer): { text: string } | { problem: string } {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
    return { problem: 'is UTF-16; save it as UTF-8' };
  if (isUtf8(bytes)) return { text: bytes.toString('utf8') };
  let line = 1;
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(0x0a, start);
    if (!isUtf8(bytes.subarray(start, end < 0 ? bytes.length : end))) break;
    if (end < 0) break;
    start = end + 1;
    line += 1;
  }
  return {
    problem: `is not UTF-8 (line ${line} holds other bytes, e.g. Latin-1 or Windows-1252); save it as UTF-8`,
  };
}
