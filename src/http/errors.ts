import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { listSome, QUOTE_MAX_CHARS, quoteInput, shorten } from '../lib/quote.js';
import { withoutSecrets } from '../lib/redact.js';
import { type InputProblem, TranslationError } from '../mapping/errors.js';
import { LegacyUpstreamError } from '../migration/legacy-upstream.js';
import type { AppEnv } from '../services.js';
import { StoreConflictError, StoreUnavailableError } from '../store/errors.js';
import {
  describeUpstreamError,
  isProtectedEntity,
  isRateLimited,
  isReadMethod,
  mayHaveBeenApplied,
  publicUpstreamMessage,
  UpstreamError,
} from '../successor/errors.js';
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
 * and broken answers, 503 when no token can be had or the API refuses more requests for now (429),
 * 504 on timeouts.
 */
function upstreamStatus(error: UpstreamError): LegacyStatus {
  switch (error.code) {
    case 'not_found':
      return 404;
    case 'validation':
      // A read carries nothing of the legacy caller's for the successor to refuse (its path ID is
      // resolved by a query the mapping tables build): its refusal is the proxy's, a 502 the log
      // explains, not a 400 that blames the caller.
      return isReadMethod(error.details.method) ? 502 : 400;
    case 'conflict':
      return 400;
    case 'timeout':
      return 504;
    case 'unavailable':
      return error.source === 'token' || isRateLimited(error) ? 503 : 502;
    case 'forbidden':
      return isProtectedEntity(error) ? 403 : 502;
    case 'unauthorized':
    case 'bad_response':
      return 502;
  }
}

/** What the HTTP layer knows of the request an error answers: its id and method. */
export interface ErrorContext {
  requestId?: string | undefined;
  method?: string | undefined;
}

/** The end of every 5xx message: where the details are (the log, under the request id). */
function logHint(context: ErrorContext): string {
  return context.requestId === undefined
    ? '; the operator finds the details in the log'
    : `; request id ${context.requestId}: the operator finds the details in the log`;
}

/**
 * Maps a successor failure to what the legacy caller sees. A 5xx says in words what failed and
 * the request id, never addresses, successor paths or UUIDs (those are in the log); a write that
 * got no answer (timed out, or its connection dropped after it went out) says its outcome is unknown. A 400 lists the successor's violations with legacy paths
 * (`violations` from the field tables; without them every path is `body`).
 */
export function upstreamToLegacy(
  error: UpstreamError,
  context: ErrorContext = {},
  violations?: InputProblem[],
  options: { partial?: boolean } = {},
): LegacyError {
  const status = upstreamStatus(error);
  const words = publicUpstreamMessage(error);
  if (status >= 500) {
    const unknown =
      !options.partial && mayHaveBeenApplied(error, context.method)
        ? '; the outcome of the change is unknown: it may or may not be in effect, check it before retrying'
        : '';
    // A 503 (no token for now, or a 429 of the API) passes on when the successor said to try again.
    const retryAfter = status === 503 ? validRetryAfter(error.details.retryAfter) : undefined;
    return new LegacyError(
      status,
      `${words}${unknown}${logHint(context)}`,
      undefined,
      retryAfter === undefined ? undefined : { 'Retry-After': retryAfter },
    );
  }
  if (error.code !== 'validation' && error.code !== 'conflict') return new LegacyError(status, words);
  const items =
    violations ?? error.details.violations?.map(({ message }) => ({ path: 'body', message })) ?? [];
  const reason =
    items.length > 0
      ? listSome(items.map((item) => `${item.path}: ${item.message}`))
      : (error.details.detail ?? '');
  return new LegacyError(status, reason === '' ? words : `${words}: ${reason}`, items);
}

/**
 * Maps the translation engine's error codes to legacy statuses: the one place that decides
 * which HTTP answer each kind of translation failure becomes.
 */
export function translationToLegacy(error: TranslationError, context: ErrorContext = {}): LegacyError {
  const { problems, upstream, violations } = error.details;
  switch (error.code) {
    case 'not_found':
      return new LegacyError(404, error.message);
    case 'refused':
      return new LegacyError(403, error.message);
    case 'invalid_input':
    case 'unknown_ids':
      return new LegacyError(400, error.message, problems);
    case 'upstream':
      return upstream
        ? upstreamToLegacy(upstream, context, violations)
        : new LegacyError(502, `The successor failed${logHint(context)}`);
    case 'partial_failure': {
      const { goneItem } = error.details;
      const cause =
        goneItem !== undefined
          ? new LegacyError(400, `Body ID ${quoteInput(goneItem)} names nothing the successor still has`)
          : upstream
            ? upstreamToLegacy(upstream, context, violations, { partial: true })
            : new LegacyError(502, `The successor failed${logHint(context)}`);
      return new LegacyError(cause.status, `${cause.message.replace(/[.\s]+$/, '')}. ${error.message}`, [
        ...(problems ?? []),
        ...(cause.errors ?? []),
      ]);
    }
    case 'unanswered': {
      // The status of what failed, and that the change is in effect (no Retry-After: a repeat
      // would do it again, or be refused as a duplicate).
      const { cause } = error.details;
      let base: LegacyError;
      if (cause instanceof UpstreamError)
        // Gone right after the change: not the caller's 404, which would read as "not done".
        base =
          cause.code === 'not_found'
            ? new LegacyError(502, `The successor no longer has what it just changed${logHint(context)}`)
            : upstreamToLegacy(cause, context, undefined, { partial: true });
      else if (cause instanceof TranslationError) base = translationToLegacy(cause, context);
      else if (cause instanceof StoreUnavailableError || cause instanceof StoreConflictError)
        base = new LegacyError(503, cause.message);
      else base = new LegacyError(500, `Internal error${logHint(context)}`);
      return new LegacyError(base.status, `${base.message.replace(/[.\s]+$/, '')}. ${error.message}`);
    }
    case 'profile_error':
      return new LegacyError(500, `${error.message}${logHint(context)}`);
  }
}

/** Turns any thrown value into the legacy error the caller gets. Unknown errors become a bare 500. */
export function toLegacyError(error: unknown, context: ErrorContext = {}): LegacyError {
  if (error instanceof LegacyError) return error;
  if (error instanceof TranslationError) return translationToLegacy(error, context);
  if (error instanceof UpstreamError) return upstreamToLegacy(error, context);
  if (error instanceof LegacyUpstreamError) {
    return new LegacyError(
      error.code === 'timeout' ? 504 : 502,
      `The old server (migration.legacy) failed: ${error.message}${logHint(context)}`,
    );
  }
  // The database is down or too slow: a clear, retryable answer instead of a 500 (docs/scaling.md).
  if (error instanceof StoreUnavailableError)
    return new LegacyError(503, error.message, undefined, { 'Retry-After': '5' });
  // Practically never: concurrent writers of the same ID-table rows, five times in a row.
  if (error instanceof StoreConflictError)
    return new LegacyError(503, error.message, undefined, { 'Retry-After': '1' });
  if (error instanceof HTTPException) {
    const status = error.status as LegacyStatus;
    return new LegacyError(status, error.message || 'Request failed');
  }
  return new LegacyError(500, `Internal error${logHint(context)}`);
}

/**
 * What the log says about a failure beyond the error itself: the successor failure in the
 * operator's words (addresses, paths, what to fix), and a failed rollback's.
 */
export function operatorDetails(error: unknown): Record<string, string> {
  const upstream =
    error instanceof UpstreamError
      ? error
      : error instanceof TranslationError
        ? (error.details.upstream ??
          (error.details.cause instanceof UpstreamError ? error.details.cause : undefined))
        : undefined;
  const rollback = error instanceof TranslationError ? error.details.rollbackFailure : undefined;
  return {
    ...(upstream ? { successor: describeUpstreamError(upstream) } : {}),
    ...(rollback ? { rollback: describeUpstreamError(rollback) } : {}),
  };
}

/** How many `errors` entries a body lists before one entry says how many more there were. */
export const MAX_ERROR_ITEMS = 100;
/** The longest message a body carries; the quoting helpers keep messages far below it. */
const MAX_MESSAGE_CHARS = 2_000;

/**
 * The legacy body of an error. A last bound on the size of what is echoed: the message and each
 * entry are cut, and a long `errors` list ends with `and N more` (per-value quoting happens where
 * messages are written, src/lib/quote.ts). Also used outside hono, for what the Node adapter refuses.
 * `secrets` (the request's, `requestSecrets`) are left out of every text (`withoutSecrets`).
 */
export function legacyErrorBody(error: LegacyError, secrets: readonly string[] = []): ErrorBody {
  // The secrets go before the texts are cut: one cut in two would leave its first part.
  const text = (value: string, max: number) => shorten(withoutSecrets(value, secrets), max);
  const body: ErrorBody = { code: error.status, message: text(error.message, MAX_MESSAGE_CHARS) };
  const errors = error.errors ?? [];
  if (errors.length > 0) {
    body.errors = errors.slice(0, MAX_ERROR_ITEMS).map((item) => ({
      path: text(item.path, 2 * QUOTE_MAX_CHARS),
      message: text(item.message, 4 * QUOTE_MAX_CHARS),
    }));
    const more = errors.length - MAX_ERROR_ITEMS;
    if (more > 0) {
      const root = errors[MAX_ERROR_ITEMS]?.path.split('.')[0] ?? 'body';
      body.errors.push({ path: root, message: `and ${more} more` });
    }
  }
  return body;
}

/**
 * Sent with every error body: its message may quote the request (a path, an ID), and a browser
 * that guessed the type of such an answer could run what it quotes.
 */
export const NO_SNIFF = { 'X-Content-Type-Options': 'nosniff' } as const;

/** Renders a legacy error as `application/json` with the legacy body shape (`legacyErrorBody`). */
export function renderLegacyError(c: Context<AppEnv>, error: LegacyError): Response {
  // A refusal that repeats a secret of the request (the successor's `The value Geheim-1 is too
  // weak` of a new password) leaves it out: an error body never carries a secret.
  return c.json(
    legacyErrorBody(error, c.get('requestSecrets')),
    error.status,
    error.headers ? { ...error.headers, ...NO_SNIFF } : NO_SNIFF,
  );
}

/** The longest wait a passed-on Retry-After asks of a legacy client: a day. */
const RETRY_AFTER_MAX_SECONDS = 86_400;

/**
 * A successor's `Retry-After` as RFC 9110 10.2.3 allows it, to be passed on: a whole number of
 * seconds or an HTTP-date in its preferred form (IMF-fixdate) naming a day that exists, with its
 * weekday; undefined for anything else (`soon`, `-5`, `1.5`, `Mon, 31 Feb 2026 …`, which
 * Date.parse rolls over to March), which a client that parses the header could trip on. One
 * further off than RETRY_AFTER_MAX_SECONDS (however many digits) is passed on as that many
 * seconds: a legacy client that honours the header would otherwise stop trying for as long as a
 * successor says (`999999999`, some 31 years), or trip on a number too large to hold.
 */
function validRetryAfter(value: string | undefined, now = Date.now()): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed))
    return trimmed.length > 9 || Number(trimmed) > RETRY_AFTER_MAX_SECONDS
      ? String(RETRY_AFTER_MAX_SECONDS)
      : trimmed;
  const at = Date.parse(trimmed);
  // Written back, an IMF-fixdate is itself only when every part of it was a real date's.
  if (Number.isNaN(at) || new Date(at).toUTCString() !== trimmed) return undefined;
  return at - now > RETRY_AFTER_MAX_SECONDS * 1000 ? String(RETRY_AFTER_MAX_SECONDS) : trimmed;
}
