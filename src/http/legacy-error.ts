import { quoteInput } from '../lib/quote.js';

/** Status codes the legacy surface answers with on error. */
export type LegacyStatus = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 429 | 500 | 501 | 502 | 503 | 504;

/**
 * Whether an answer's status says the proxy failed (logged as an error) rather than refused the
 * request: every 5xx but 501, which refuses what the client asked for (a transfer coding,
 * `CONNECT`) and is the client's to change.
 */
export function isFailureStatus(status: number): boolean {
  return status >= 500 && status !== 501;
}

export interface LegacyErrorItem {
  path: string;
  message: string;
}

/**
 * An error the legacy API reports to its caller, rendered as
 * `{"code": status, "message": "...", "errors": [{"path","message"}]?}` by the root error handler.
 */
export class LegacyError extends Error {
  override readonly name = 'LegacyError';
  constructor(
    readonly status: LegacyStatus,
    message: string,
    readonly errors?: LegacyErrorItem[],
    /** Extra response headers, e.g. `WWW-Authenticate` or `Retry-After`. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/**
 * The 404 of a path that names nothing, the same everywhere (the legacy surface, the docs, the
 * proxy's own paths). `withoutSlash`: the path without its trailing slash, when that one names an
 * operation (the seed's paths have none, and neither do the proxy's: a slash answered as its path
 * would hide the client's mistake, and a redirect is not followed by every client, nor for a write).
 */
export function noSuchPath(path: string, withoutSlash?: string): LegacyError {
  const hint = withoutSlash === undefined ? '' : ` (without the trailing slash: ${quoteInput(withoutSlash)})`;
  return new LegacyError(404, `No such path: ${quoteInput(path)}${hint}`);
}

/**
 * The 405 of a known path asked with a method it does not take (SPEC 3), the same everywhere (the
 * legacy operations, the docs, the proxy's own paths): `Method X is not allowed here; allowed:
 * GET, HEAD` with `Allow` listing the same methods.
 */
export function methodNotAllowed(method: string, allowed: readonly string[]): LegacyError {
  const list = allowed.join(', ');
  return new LegacyError(405, `Method ${method} is not allowed here; allowed: ${list}`, undefined, {
    Allow: list,
  });
}
