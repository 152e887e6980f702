import type { Logger } from 'pino';
import { isDataRefusal } from '../store/errors.js';
import type { UsageCount, UsageRepository } from '../store/usage.js';
import type { Observer, RequestEvent } from './observer.js';
import { PeriodicFlush } from './periodic-flush.js';

/** The outcome class of a status for the usage inventory: `2xx`, `4xx`, … */
export function outcomeClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/**
 * The usage inventory's write-behind (SPEC 8): counts requests per (API user, operation, outcome
 * class) in memory and adds them to the store in one batch every `flushIntervalMs` and at close,
 * never one store write per request. A batch the store does not take is kept and tried again
 * with the next one, so a store outage loses nothing while the process runs; one it refuses for
 * what it holds (`isDataRefusal`: it would be refused again), and one that fails at close, is
 * logged as an error with its counts, which are then lost.
 */
export class UsageRecorder implements Observer {
  #pending = new Map<string, UsageCount>();
  readonly #flusher: PeriodicFlush;

  constructor(
    private readonly options: { repository: UsageRepository; flushIntervalMs: number; logger: Logger },
  ) {
    this.#flusher = new PeriodicFlush(options.flushIntervalMs, (final) => this.#flushOnce(final));
  }

  request(event: RequestEvent): void {
    // Health, readiness, metrics and the dashboard are the operators' own, not integrations' usage.
    if (event.operation.startsWith('ops.')) return;
    this.#add(event.apiUser, event.operation, outcomeClass(event.status), 1, event.at, event.at);
  }

  /** Writes what was counted since the last flush (one store call); waits for a flush under way. */
  flush(): Promise<void> {
    return this.#flusher.flush();
  }

  /** Stops the timer and writes what is left. */
  close(): Promise<void> {
    return this.#flusher.close();
  }

  async #flushOnce(final: boolean): Promise<void> {
    if (this.#pending.size === 0) return;
    const batch = [...this.#pending.values()];
    this.#pending = new Map();
    try {
      await this.options.repository.add(batch);
    } catch (error) {
      if (final) {
        this.options.logger.error(
          {
            err: error,
            rows: batch.length,
            lost: loggedRows(batch),
          },
          'usage inventory not written at shutdown; these counts are lost',
        );
        return;
      }
      // Kept unless the store refused what it holds: such a batch would be refused again at every
      // flush, together with every count added to it meanwhile.
      if (isDataRefusal(error)) {
        this.options.logger.error(
          { err: error, rows: batch.length, lost: loggedRows(batch) },
          'usage inventory refused by the store; these counts are dropped',
        );
        return;
      }
      for (const row of batch)
        this.#add(row.apiUser, row.operation, row.outcome, row.count, row.firstSeen, row.lastSeen);
      this.options.logger.warn(
        { err: error, rows: batch.length },
        'usage inventory not written; kept in memory for the next flush',
      );
    }
  }

  /** Adds to the pending row of (API user, operation, outcome), made from its parts only when new. */
  #add(
    apiUser: string,
    operation: string,
    outcome: string,
    count: number,
    firstSeen: number,
    lastSeen: number,
  ): void {
    const key = `${apiUser}\u0000${operation}\u0000${outcome}`;
    const known = this.#pending.get(key);
    if (!known) {
      this.#pending.set(key, { apiUser, operation, outcome, count, firstSeen, lastSeen });
      return;
    }
    known.count += count;
    known.firstSeen = Math.min(known.firstSeen, firstSeen);
    known.lastSeen = Math.max(known.lastSeen, lastSeen);
  }
}

/** Counts as a log line names them: their times as every time the proxy prints, ISO 8601 in UTC. */
function loggedRows(rows: readonly UsageCount[]): (Omit<UsageCount, 'firstSeen' | 'lastSeen'> & {
  firstSeen: string;
  lastSeen: string;
})[] {
  return rows.map((row) => ({
    ...row,
    firstSeen: new Date(row.firstSeen).toISOString(),
    lastSeen: new Date(row.lastSeen).toISOString(),
  }));
}
