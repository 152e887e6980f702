import { promisify } from 'node:util';
import zlib from 'node:zlib';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotliDecompress = promisify(zlib.brotliDecompress);

type Decoder = (bytes: Buffer, maxOutputLength: number) => Promise<Buffer>;

/**
 * The Content-Encodings an answer is read through for a recording or a shadow comparison. The
 * proxy asks the old server for none (`identity`); one that compresses all the same uses gzip in
 * practice. HTTP's `deflate` is zlib-wrapped (RFC 9110 8.4.1.2), but servers have long sent it
 * raw, so both are read, as browsers do.
 */
const DECODERS = new Map<string, Decoder>([
  ['gzip', (bytes, maxOutputLength) => gunzip(bytes, { maxOutputLength })],
  ['x-gzip', (bytes, maxOutputLength) => gunzip(bytes, { maxOutputLength })],
  [
    'deflate',
    (bytes, maxOutputLength) =>
      inflate(bytes, { maxOutputLength }).catch((error: unknown) =>
        tooLarge(error) ? Promise.reject(error) : inflateRaw(bytes, { maxOutputLength }),
      ),
  ],
  ['br', (bytes, maxOutputLength) => brotliDecompress(bytes, { maxOutputLength })],
]);

function tooLarge(error: unknown): boolean {
  return error instanceof RangeError && 'code' in error && error.code === 'ERR_BUFFER_TOO_LARGE';
}

/**
 * An answer's bytes as the caller's client would read them: decoded by its Content-Encoding, at
 * most `cap` bytes of it (a small gzip can unpack to gigabytes). `too-large` past the cap;
 * `undecodable` for an encoding other than those above (or several in a row) or bytes that do not
 * decode as it says. Without an encoding (or `identity`) the bytes are returned as they are.
 */
export async function decodedAnswer(
  bytes: Buffer,
  contentEncoding: string | undefined,
  cap: number,
): Promise<Buffer | 'too-large' | 'undecodable'> {
  const encoding = contentEncoding?.trim().toLowerCase() ?? '';
  // No bytes decode to none (a HEAD, a 204 or 304 that names the coding of the GET's body).
  if (encoding === '' || encoding === 'identity' || bytes.length === 0) return bytes;
  const decode = DECODERS.get(encoding);
  if (!decode) return 'undecodable';
  try {
    return await decode(bytes, cap);
  } catch (error) {
    return tooLarge(error) ? 'too-large' : 'undecodable';
  }
}
