import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

/**
 * Statuses whose completion lines a flood can multiply: no or wrong credentials, unknown paths,
 * wrong methods on known paths (the proxy's own paths answer them without credentials; they were
 * 404s before they were 405s), throttled.
 */
export const FLOOD_STATUSES: ReadonlySet<number> = new Set([401, 404, 405, 429]);

/**
 * Bounds the completion lines of requests answered with a {@link FLOOD_STATUSES} status to
 * `perSecond` per second (0: no bound), so that a flood of requests without credentials cannot
 * fill the disk; every second that suppressed lines ends with one line saying how many, by
 * status. Metrics and the usage inventory still count every request.
 */
export class RequestLineLimiter {
  #second = Number.NaN;
  #written = 0;
  #suppressed = new Map<number, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly perSecond: number,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Whether the completion line of a request answered `status` may be written now. */
  admit(status: number): boolean {
    if (this.perSecond <= 0 || !FLOOD_STATUSES.has(status)) return true;
    const now = this.clock.now();
    const second = Math.floor(now / 1000);
    if (second !== this.#second) {
      this.flush();
      this.#second = second;
      this.#written = 0;
    }
    if (this.#written < this.perSecond) {
      this.#written++;
      return true;
    }
    this.#suppressed.set(status, (this.#suppressed.get(status) ?? 0) + 1);
    // The summary comes at the end of the second even when no further request arrives.
    this.#timer ??= setTimeout(() => this.flush(), 1000 - (now % 1000)).unref();
    return false;
  }

  /** Writes the summary of the lines suppressed so far, if any. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#suppressed.size === 0) return;
    let total = 0;
    for (const count of this.#suppressed.values()) total += count;
    this.log.warn(
      {
        suppressed: total,
        byStatus: Object.fromEntries(this.#suppressed),
        second: new Date(this.#second * 1000).toISOString(),
        limit: this.perSecond,
      },
      `suppressed ${total} request lines`,
    );
    this.#suppressed = new Map();
  }
}
