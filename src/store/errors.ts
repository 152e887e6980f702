/**
 * The store cannot be reached (connection refused or lost, the server shutting down, a connect
 * or statement timeout). Requests that need the store answer 503 with this message; it never
 * names the connection URL or a password.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'store_unavailable';
  /**
   * The store answers but takes no writes for now (read-only: a standby, a read-only file; or out
   * of disk or memory), as opposed to being unreachable or busy for a moment.
   */
  readonly refusesWrites: boolean;
  constructor(
    message = 'the store (database) is unavailable',
    options?: { cause?: unknown; refusesWrites?: boolean },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.refusesWrites = options?.refusesWrites ?? false;
  }
}

/** Whether `error` is (or wraps) a StoreUnavailableError. */
export function isStoreUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}

/**
 * A store a command may only read is not there, or only in part: tables that its recorded
 * migrations created are gone (see `OpenStoreOptions.requireExisting`).
 */
export class MissingStoreError extends Error {
  override readonly name = 'MissingStoreError';

  constructor(
    message: string,
    /** `missing`: no store at all; `incomplete`: some of its tables are gone. */
    readonly state: 'missing' | 'incomplete' = 'missing',
  ) {
    super(message);
  }

  /** What is wrong with the store, for a sentence that names it ("the store does not exist"). */
  get verb(): string {
    return this.state === 'missing' ? 'does not exist' : 'is incomplete';
  }
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

/**
 * Whether a store refused a write for what it holds, so the same write would fail again:
 * PostgreSQL's SQLSTATE classes 22 (data exception), 23 (integrity), 42 (syntax or access rule)
 * and 54 (a limit exceeded); SQLite's CONSTRAINT, TOOBIG and MISMATCH (better-sqlite3: its code;
 * node:sqlite: the low byte of its errcode). Anything else (unavailable, busy, read-only, full, a
 * deadlock, a failover to a standby, a table missing: 42P01 comes as a StoreUnavailableError, see
 * postgres/database.ts) may pass later.
 */
export function isDataRefusal(error: unknown): boolean {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (
    typeof code === 'string' &&
    /^(?:(?:22|23|42|54)[0-9A-Z]{3}|SQLITE_(?:CONSTRAINT|TOOBIG|MISMATCH)(?:_[A-Z]+)*)$/.test(code)
  )
    return true;
  return typeof errcode === 'number' && [18, 19, 20].includes(errcode & 0xff);
}
