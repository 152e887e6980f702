import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { TranslationError } from '../mapping/errors.js';
import { LegacyUpstreamError } from '../migration/legacy-upstream.js';
import { StoreUnavailableError } from '../store/errors.js';
import { describeUpstreamError, isProtectedEntity, UpstreamError } from '../successor/errors.js';
import { LegacyError, type LegacyStatus } from './legacy-error.js';

/** The JSON error body of the legacy API. */
export interface ErrorBody {
  code: number;
  message: string;
  errors?: { path: string; message: string }[];
}

/**
 * The legacy status of a successor failure (SPEC 6): 404 on the path entity, 400 with the
 * successor's violations, 403 for an entity the successor protects, 502 for auth/scope problems
 * and broken answers, 503 when no token can be had, 504 on timeouts.
 */
function upstreamStatus(error: UpstreamError): LegacyStatus {
  switch (error.code) {
    case 'not_found':
      return 404;
    case 'validation':
    case 'conflict':
      return 400;
    case 'timeout':
      return 504;
    case 'unavailable':
      return error.source === 'token' ? 503 : 502;
    case 'forbidden':
      return isProtectedEntity(error) ? 403 : 502;
    case 'unauthorized':
    case 'bad_response':
      return 502;
  }
}

/** Maps a successor failure to what the legacy caller sees; the message tells the operator what to fix. */
export function upstreamToLegacy(error: UpstreamError): LegacyError {
  const violations =
    error.code === 'validation' || error.code === 'conflict' ? error.details.violations : undefined;
  return new LegacyError(upstreamStatus(error), describeUpstreamError(error), violations);
}

/**
 * Maps the translation engine's error codes to legacy statuses: the one place that decides
 * which HTTP answer each kind of translation failure becomes.
 */
export function translationToLegacy(error: TranslationError): LegacyError {
  const problems = error.details.problems;
  switch (error.code) {
    case 'not_found':
      return new LegacyError(404, error.message);
    case 'invalid_input':
    case 'unknown_ids':
      return new LegacyError(400, error.message, problems);
    case 'upstream':
      return error.details.upstream
        ? upstreamToLegacy(error.details.upstream)
        : new LegacyError(502, error.message);
    case 'partial_failure': {
      const upstream = error.details.upstream;
      const cause = upstream ? upstreamToLegacy(upstream) : new LegacyError(502, 'The successor failed');
      return new LegacyError(cause.status, `${cause.message.replace(/[.\s]+$/, '')}. ${error.message}`, [
        ...(problems ?? []),
        ...(cause.errors ?? []),
      ]);
    }
    case 'profile_error':
      return new LegacyError(500, error.message);
  }
}

/** Turns any thrown value into the legacy error the caller gets. Unknown errors become a bare 500. */
export function toLegacyError(error: unknown): LegacyError {
  if (error instanceof LegacyError) return error;
  if (error instanceof TranslationError) return translationToLegacy(error);
  if (error instanceof UpstreamError) return upstreamToLegacy(error);
  if (error instanceof LegacyUpstreamError) {
    return new LegacyError(
      error.code === 'timeout' ? 504 : 502,
      `The old server (migration.legacy) failed: ${error.message}`,
    );
  }
  // The database is down or too slow: a clear, retryable answer instead of a 500 (docs/scaling.md).
  if (error instanceof StoreUnavailableError)
    return new LegacyError(503, error.message, undefined, { 'Retry-After': '5' });
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
