/**
 * Outcomes of shadow comparisons (SPEC 8): counts per operation, outcome and hour, how often each
 * JSON path differed, and a bounded number of redacted samples of mismatches and errors. Written
 * in batches by the shadow recorder and summed across replicas. Times are milliseconds since the
 * epoch; `hour` is the start of the hour a count belongs to.
 */

/** What a shadow comparison came to. */
export type ShadowOutcome = 'match' | 'mismatch' | 'error' | 'skipped';

export interface ShadowCount {
  operation: string;
  outcome: ShadowOutcome;
  hour: number;
  count: number;
}

export interface ShadowPathCount {
  operation: string;
  /** A JSON path that differed (indexes as `[*]`), or `status`. */
  path: string;
  hour: number;
  count: number;
}

/** One mismatch or error kept to show: its request and what differed (already redacted). */
export interface ShadowSample {
  at: number;
  operation: string;
  apiUser: string;
  requestId: string;
  outcome: 'mismatch' | 'error';
  /** The comparison's sample (request, statuses, differences) or the error, as JSON. */
  detail: unknown;
}

/** The shadow outcome store. */
export interface ShadowRepository {
  /**
   * Adds a batch atomically: counts and path counts are summed with what is stored, samples are
   * appended and only the newest `keepSamples` per operation are kept.
   */
  add(
    batch: {
      counts: readonly ShadowCount[];
      paths: readonly ShadowPathCount[];
      samples: readonly ShadowSample[];
    },
    keepSamples: number,
  ): Promise<void>;
  /** Counts per operation and outcome, summed over the hours from the one `since` falls in. */
  counts(since?: number): Promise<{ operation: string; outcome: ShadowOutcome; count: number }[]>;
  /** Differing paths per operation, summed likewise, most frequent first. */
  paths(since?: number): Promise<{ operation: string; path: string; count: number }[]>;
  /** The newest samples first, at most `limit`, optionally of one operation and since a time. */
  samples(filter: { operation?: string; since?: number; limit: number }): Promise<ShadowSample[]>;
}

/** The start of the hour `at` falls in. */
export function hourOf(at: number): number {
  return at - (at % 3_600_000);
}
