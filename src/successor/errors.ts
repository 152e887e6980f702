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
 * fix) and never contains a secret; `violations` keeps the successor's own validation messages.
 */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  constructor(
    readonly code: UpstreamErrorCode,
    message: string,
    readonly details: {
      source?: UpstreamSource;
      status?: number;
      method?: string;
      path?: string;
      violations?: UpstreamViolation[];
      /**
       * The OAuth2 scope that was missing, for `forbidden`. Set exactly when the refusal is about
       * the client's permissions (a 502 for the proxy), unset when the successor refused the
       * operation itself, e.g. on a protected entity (a legacy 403).
       */
      scope?: string;
      /** Set on network-level failures that an idempotent read may retry. */
      retryable?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
  }

  get source(): UpstreamSource {
    return this.details.source ?? 'api';
  }
}
