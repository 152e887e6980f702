import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { LegacyError, type LegacyStatus } from '../legacy/errors.js';
import { UpstreamError } from '../successor/errors.js';

/** The JSON error body of the legacy API. */
export interface ErrorBody {
  code: number;
  message: string;
  errors?: { path: string; message: string }[];
}

/**
 * Maps a successor failure to what the legacy caller sees (SPEC 6): 404 on the path entity,
 * 400 with the successor's violations, 502 for auth/scope problems and broken answers, 503 when
 * no token can be had, 504 on timeouts. The message tells the operator what to fix.
 */
export function upstreamToLegacy(error: UpstreamError): LegacyError {
  const violations = error.details.violations;
  switch (error.code) {
    case 'not_found':
      return new LegacyError(404, 'Not found');
    case 'validation':
      return new LegacyError(400, `The successor rejected the request: ${error.message}`, violations);
    case 'conflict':
      return new LegacyError(400, `The successor reported a conflict: ${error.message}`, violations);
    case 'timeout':
      return new LegacyError(504, `The successor did not answer in time: ${error.message}`);
    case 'unavailable':
      return error.source === 'token'
        ? new LegacyError(503, `No access token could be obtained from the successor: ${error.message}`)
        : new LegacyError(502, `The successor is unreachable or failing: ${error.message}`);
    case 'forbidden':
      return error.details.status === 403 && error.source === 'api' && error.details.scope === undefined
        ? new LegacyError(403, 'The entity may not be deleted or updated')
        : new LegacyError(502, `The successor refused the proxy's access: ${error.message}`);
    case 'unauthorized':
      return new LegacyError(502, `The successor refused the proxy's credentials: ${error.message}`);
    case 'bad_response':
      return new LegacyError(502, `The successor gave an answer the proxy cannot use: ${error.message}`);
  }
}

/** Turns any thrown value into the legacy error the caller gets. Unknown errors become a bare 500. */
export function toLegacyError(error: unknown): LegacyError {
  if (error instanceof LegacyError) return error;
  if (error instanceof UpstreamError) return upstreamToLegacy(error);
  if (error instanceof HTTPException) {
    const status = error.status as LegacyStatus;
    return new LegacyError(status, error.message || 'Request failed');
  }
  return new LegacyError(500, 'Internal error; the request id in the log has the details');
}

/** Renders a legacy error as `application/json` with the legacy body shape. */
export function renderLegacyError(c: Context, error: LegacyError): Response {
  const body: ErrorBody = { code: error.status, message: error.message };
  if (error.errors && error.errors.length > 0) body.errors = error.errors;
  return c.json(body, error.status, error.headers);
}
