/**
 * The store cannot be reached (connection refused or lost, the server shutting down, a connect
 * or statement timeout). Requests that need the store answer 503 with this message; it never
 * names the connection URL or a password.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'store_unavailable';
  constructor(message = 'the store (database) is unavailable', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Whether `error` is (or wraps) a StoreUnavailableError. */
export function isStoreUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}

/**
 * A write kept meeting rows that other processes wrote at the same moment, and gave up after a few
 * tries (PostgreSQL: the ID table written by an `ids import` and replicas at once). Nothing of the
 * failed try was written; the same write a moment later succeeds. Requests answer 503.
 */
export class StoreConflictError extends Error {
  override readonly name = 'StoreConflictError';
  readonly code = 'store_conflict';
}
