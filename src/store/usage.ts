/**
 * The usage inventory (SPEC 8): how often each API user called each legacy operation, per
 * outcome class, with first and last seen. Counts arrive in batches from the write-behind
 * recorder (never one write per request) and are summed with what is stored. Storage-neutral;
 * implementations: SQLite (`sqlite/usage.ts`), PostgreSQL (`postgres/usage.ts`). Times are
 * milliseconds since the epoch.
 */

/** One row of the inventory: an (API user, operation, outcome class) and how it was used. */
export interface UsageCount {
  /** The API user; `""` for requests refused before an API user was known. */
  apiUser: string;
  /** The legacy operation id (`user.list`), or `unknown` for paths that match no operation. */
  operation: string;
  /** The outcome class of the answers: `2xx`, `3xx`, `4xx` or `5xx`. */
  outcome: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
}

/** Calls of an (API user, operation) in one hour: the counts behind `recent`. */
export interface UsageHour {
  apiUser: string;
  operation: string;
  /** The start of the hour (of the calls' last-seen time, as `add` books them). */
  hour: number;
  count: number;
}

/** Which rows to list; every given criterion must hold. */
export interface UsageFilter {
  apiUser?: string;
  operation?: string;
  /** Only rows last seen at or after this time. */
  since?: number;
}

/** The usage inventory store. */
export interface UsageRepository {
  /**
   * Adds a batch atomically: for each row, count += count, firstSeen = the earlier, lastSeen =
   * the later; rows not yet stored are inserted. Rows of one key may repeat within a batch.
   */
  add(counts: readonly UsageCount[]): Promise<void>;
  /** The stored rows that match, ordered by operation, API user and outcome. */
  list(filter?: UsageFilter): Promise<UsageCount[]>;
  /**
   * Calls per (API user, operation) since the hour `since` falls in (counts are kept per hour of
   * their last-seen time, for eight days), ordered by operation and API user.
   */
  recent(since: number): Promise<{ apiUser: string; operation: string; count: number }[]>;
  /** Every stored hourly count, ordered by operation, API user and hour (`store copy`). */
  hourly(): Promise<UsageHour[]>;
  /**
   * Adds inventory rows as they are (count, first and last seen kept, no hourly count booked),
   * skipping every (API user, operation, outcome) already stored; one transaction. Answers how
   * many were added (`store copy`).
   */
  insertMany(rows: readonly UsageCount[]): Promise<number>;
  /**
   * Adds hourly counts as they are, skipping every (API user, operation, hour) already stored;
   * one transaction. Answers how many were added (`store copy`).
   */
  insertHourlyMany(rows: readonly UsageHour[]): Promise<number>;
}

/** How long the hourly usage counts behind `recent` are kept. */
export const HOURLY_USAGE_KEEP_MS = 8 * 24 * 3_600_000;
