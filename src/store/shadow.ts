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
   * appended (their detail as `storableDetail` gives it) and only the newest `keepSamples` per
   * operation are kept.
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

/** What stands for U+0000 in a stored sample: U+2400 SYMBOL FOR NULL (`␀`). */
export const NUL_STAND_IN = '\u2400';

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function storableText(text: string): string {
  return text.replaceAll('\u0000', NUL_STAND_IN).replace(UNPAIRED_SURROGATE, '\ufffd');
}

/**
 * A sample's detail as every store keeps it: U+0000 in a string or member name becomes U+2400
 * (`␀`), an unpaired UTF-16 surrogate U+FFFD. Answers may hold both (JSON escapes them as
 * `\u0000` and `\ud800`), and PostgreSQL's jsonb refuses both; SQLite would keep them, so both
 * stores get the same stand-ins and show a sample alike.
 */
export function storableDetail(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableDetail);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [storableText(key), storableDetail(item)]),
    );
  return value;
}

/** The start of the hour `at` falls in. */
export function hourOf(at: number): number {
  return at - (at % 3_600_000);
}
