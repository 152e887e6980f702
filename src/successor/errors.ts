import { redactText, withoutSecrets } from '../lib/redact.js';

/** Stable codes for everything that can go wrong talking to the successor IDM API. */
export type UpstreamErrorCode =
  | 'timeout'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'validation'
  | 'unavailable'
  | 'bad_response';

/** Which part of the successor failed: its token endpoint or its API. */
export type UpstreamSource = 'token' | 'api';

export interface UpstreamViolation {
  path: string;
  message: string;
}

/**
 * The one error type of the successor client. `message` is written for an operator (what to
 * fix); `violations` and `detail` keep the successor's own words. None of them carries a secret:
 * what the successor or its token endpoint said is quoted in them, and a server that echoes what
 * it was sent (a debugging error page, an `error_description` repeating the token request) would
 * hand back the client secret, the access token or a password. So every text is redacted here,
 * once for all its readers (`/readyz`, the log, `mappings check --live`, the legacy error bodies):
 * credentials, URL user information and secret parameters, a secret's `name=value` or
 * `name: value` (src/lib/redact.ts). What the proxy itself sent, which a server may repeat with
 * no label at all, is left out by its value where the error is made ({@link withoutSecretValues}:
 * the call's access token, the client secret of a token request).
 */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  readonly details: UpstreamErrorDetails;
  constructor(
    readonly code: UpstreamErrorCode,
    message: string,
    details: UpstreamErrorDetails = {},
  ) {
    super(redactText(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.details = withoutSecretTexts(details);
  }

  get source(): UpstreamSource {
    return this.details.source ?? 'api';
  }
}

/**
 * `error` with the given secrets' values left out of its texts (`withoutSecrets`: also
 * percent-encoded and JSON-escaped): what the proxy itself sent (its access token, its client
 * secret), which a server may repeat without any label the redaction by pattern knows
 * (`JWT eyJ… could not be verified`, `presented secret 'x'`). The error itself when none is there.
 */
export function withoutSecretValues(error: UpstreamError, secrets: readonly string[]): UpstreamError {
  const { detail, violations } = error.details;
  const message = withoutSecrets(error.message, secrets);
  const cleanDetail = detail === undefined ? undefined : withoutSecrets(detail, secrets);
  const cleanViolations = violations === undefined ? undefined : withoutSecrets(violations, secrets);
  if (
    message === error.message &&
    cleanDetail === detail &&
    JSON.stringify(cleanViolations) === JSON.stringify(violations)
  )
    return error;
  return new UpstreamError(error.code, message, {
    ...error.details,
    ...(cleanDetail === undefined ? {} : { detail: cleanDetail }),
    ...(cleanViolations === undefined ? {} : { violations: cleanViolations }),
  });
}

/** The successor's words in an error's details, redacted (see UpstreamError). */
function withoutSecretTexts(details: UpstreamErrorDetails): UpstreamErrorDetails {
  const { violations, detail } = details;
  if (violations === undefined && detail === undefined) return details;
  return {
    ...details,
    ...(violations === undefined
      ? {}
      : {
          violations: violations.map((v) => ({ path: redactText(v.path), message: redactText(v.message) })),
        }),
    ...(detail === undefined ? {} : { detail: redactText(detail) }),
  };
}

/** What an UpstreamError says beside its code and message. */
export interface UpstreamErrorDetails {
  source?: UpstreamSource;
  status?: number;
  method?: string;
  path?: string;
  violations?: UpstreamViolation[];
  /** The successor's own words on a refused value (the problem document's detail), for a 400. */
  detail?: string;
  /**
   * The OAuth2 scope that was missing, for `forbidden`. Set exactly when the refusal is about
   * the client's permissions (a 502 for the proxy), unset when the successor refused the
   * operation itself, e.g. on a protected entity (a legacy 403).
   */
  scope?: string;
  /**
   * Set on a `forbidden` about the client's permissions that names no scope (a create refused
   * in a standing collection, see `asStandingCollectionError`): a 502 too, not a legacy 403.
   */
  permission?: true;
  /** The answer's Retry-After, when a refusal for now (429) said when to try again. */
  retryAfter?: string;
  /** Set on network-level failures that an idempotent read may retry. */
  retryable?: boolean;
  /**
   * Set by the transport on a failure without an answer: whether the request may have reached
   * the successor. False only when it never went out (no connection could be made: refused,
   * connect timeout, DNS, or the call gave up while it waited for one).
   */
  sent?: boolean;
  cause?: unknown;
}

/**
 * A failure of a call on a standing collection (a kind's, there whatever entities exist: read, or
 * created in) as what it is; any other error as it is:
 * - a 404: the successor has no such collection, so the base URL or the profile's collection path
 *   is wrong. Taken for `not_found`, it read to the legacy caller as "no such user", an empty 404
 *   of a list, or a create's 404.
 * - for a create (`create`: the call makes the entity it answers), a 403 of the API that names no
 *   scope: no entity is protected there, so a permission of the proxy's client is missing (a 502,
 *   SPEC 6). Taken for a protected entity, a refused create read to the legacy caller as the 403
 *   "may not be deleted or updated". Another write to a fixed path (a relation written with both
 *   IDs in its body) may well be refused for an entity's protection: it keeps its 403.
 */
export function asStandingCollectionError(error: unknown, create = false): unknown {
  if (!(error instanceof UpstreamError)) return error;
  if (error.code === 'not_found') {
    return new UpstreamError(
      'bad_response',
      `${error.message}; a collection that is always there, so successor.baseUrl or the collection path in the mapping profile is wrong`,
      { ...error.details, cause: error },
    );
  }
  return create ? asMissingPermission(error, 'refused in a collection, which protects no entity') : error;
}

/**
 * A failure of a write on the entity this very call created (a create's later steps, such as a new
 * role's grants, or the undo of its writes), as what it is: nothing can protect that entity yet,
 * so a 403 is a permission the proxy's client lacks ({@link asMissingPermission}); and it cannot be
 * gone unless the successor lost it, so a 404 is an answer the proxy cannot use (a 502), not the
 * caller's unknown path entity, of which a create has none. Any other error as it is.
 */
export function asCreatedEntityError(error: unknown): unknown {
  if (error instanceof UpstreamError && error.code === 'not_found' && error.source === 'api') {
    return new UpstreamError(
      'bad_response',
      `${error.message}; the entity this call created, which the successor cannot have lost so soon: its path in the mapping profile may be wrong`,
      { ...error.details, cause: error },
    );
  }
  return asMissingPermission(error, 'refused on the entity this call created');
}

/**
 * A 403 of the API that names no scope, on a write where no entity can be protected (`why`: a
 * create in its collection, a write on the entity this very call created), as what it is: a
 * permission of the proxy's client is missing (a 502, SPEC 6), not the legacy 403 "may not be
 * deleted or updated". Any other error as it is.
 */
function asMissingPermission(error: unknown, why: string): unknown {
  if (!(error instanceof UpstreamError && isProtectedEntity(error))) return error;
  return new UpstreamError(
    'forbidden',
    `${error.message}; ${why}, so the proxy's client lacks a permission`,
    {
      ...error.details,
      permission: true,
      cause: error,
    },
  );
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Whether the successor may have carried out a failed call all the same: a write (by its method;
 * `method` when the error does not name one) to the API that got no answer, neither in time nor
 * at all (the connection dropped after the request may have gone out). A write that never went
 * out (no connection, `sent: false`) changed nothing; a write the successor answered, even with
 * an error status, was not carried out; a read changes nothing.
 */
export function mayHaveBeenApplied(error: UpstreamError, method?: string): boolean {
  if (error.source !== 'api' || !WRITE_METHODS.has(error.details.method ?? method ?? '')) return false;
  if (error.details.sent !== undefined) return error.details.sent;
  // Not from the transport: a 408, which a gateway in front of the successor may send after it
  // passed the request on.
  return error.code === 'timeout' && error.details.retryable !== true;
}

/**
 * What a failure means, in words for the legacy caller and the operator (no HTTP status: the
 * HTTP layer picks that). The same text serves error bodies and partial-failure reports.
 */
export function describeUpstreamError(error: UpstreamError): string {
  switch (error.code) {
    case 'not_found':
      return 'Not found';
    case 'validation':
      return `The successor rejected the request: ${error.message}`;
    case 'conflict':
      return `The successor reported a conflict: ${error.message}`;
    case 'timeout':
      return `The successor did not answer in time: ${error.message}`;
    case 'unavailable':
      return `${publicUpstreamMessage(error)}: ${error.message}`;
    case 'forbidden':
      return isProtectedEntity(error)
        ? 'The entity may not be deleted or updated'
        : `The successor refused the proxy's access: ${error.message}`;
    case 'unauthorized':
      return `The successor refused the proxy's credentials; ${error.message}`;
    case 'bad_response':
      return `The successor gave an answer the proxy cannot use: ${error.message}`;
  }
}

/**
 * What a failure means for an API client, without internals (addresses, successor paths, UUIDs,
 * client ids): those are for the operator, in the log ({@link describeUpstreamError}).
 */
export function publicUpstreamMessage(error: UpstreamError): string {
  switch (error.code) {
    case 'not_found':
      return 'Not found';
    case 'validation':
      return isReadMethod(error.details.method)
        ? 'The successor refused a read the proxy sent (its mapping tables may not fit the successor)'
        : 'The successor rejected the request';
    case 'conflict':
      return 'The successor reported a conflict';
    case 'timeout':
      return 'The successor did not answer in time';
    case 'unavailable':
      return error.source === 'token'
        ? 'No access token could be obtained from the successor'
        : isRateLimited(error)
          ? 'The successor refuses more requests for now (too many requests)'
          : 'The successor is unreachable or failing';
    case 'forbidden':
      // The missing scope is named (SPEC 6: what the operator must grant); the client id is not.
      return isProtectedEntity(error)
        ? 'The entity may not be deleted or updated'
        : error.details.scope === undefined
          ? "The successor refused the proxy's access (a permission of the proxy's client is missing)"
          : `The successor refused the proxy's access: the proxy's client lacks scope ${error.details.scope}`;
    case 'unauthorized':
      return "The successor refused the proxy's credentials";
    case 'bad_response':
      return 'The successor gave an answer the proxy cannot use';
  }
}

/**
 * A 429 of the API: the successor refuses more requests for now. Not a failure of the successor
 * (a 502): the legacy caller gets a 503, with the successor's `Retry-After` when it gave one.
 */
export function isRateLimited(error: UpstreamError): boolean {
  return error.code === 'unavailable' && error.source === 'api' && error.details.status === 429;
}

/** Whether an HTTP method only reads (GET, HEAD): never refused for an entity's protection, never a write done. */
export function isReadMethod(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD';
}

/** A 403 of the API itself, not about the proxy's scopes: the successor protects that entity. */
export function isProtectedEntity(error: UpstreamError): boolean {
  return (
    error.code === 'forbidden' &&
    error.details.status === 403 &&
    error.source === 'api' &&
    error.details.scope === undefined &&
    error.details.permission !== true &&
    // Entities are protected from change; a refused read is the client's permissions (502).
    !isReadMethod(error.details.method)
  );
}
