import type { Context } from 'hono';
import { LegacyError } from './legacy-error.js';

/** Refuses what is not UTF-8 instead of turning it into U+FFFD (a BOM is dropped, as before). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The request body as text, for the legacy operations' JSON and form bodies. JSON travels as
 * UTF-8 (RFC 8259, and the old server's PHP refused anything else), so other bytes, whatever
 * charset the request declares, are the legacy 400: decoded leniently, a Latin-1 `ü` would be
 * written to the successor as U+FFFD. A client that hangs up before its announced length has
 * arrived gets a 400 too (it is not there to read it; the log and the metrics say 400, not 500).
 */
export async function requestText(c: Context): Promise<string> {
  let bytes: ArrayBuffer;
  try {
    bytes = await c.req.arrayBuffer();
  } catch (error) {
    throw asBodyCutOff(error);
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new LegacyError(400, 'The request body is not valid UTF-8', [
      { path: 'body', message: 'must be UTF-8 text' },
    ]);
  }
}

/**
 * A failure to read the request body, as the caller's 400 when its connection closed (or its
 * framing broke) before the body was complete; any other error as it is. The client is not there
 * to read the 400, but the log, the metrics and the usage inventory say 400, not 500.
 */
export function asBodyCutOff(error: unknown): unknown {
  if (!clientHungUp(error)) return error;
  return new LegacyError(400, 'The request body ended before its announced length: the client hung up', [
    { path: 'body', message: 'incomplete' },
  ]);
}

/** Node's error for a request whose connection closed before its body was complete. */
function clientHungUp(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && (code === 'ECONNRESET' || error.message === 'aborted');
}
