import { LRUCache } from 'lru-cache';
import type { Clock } from '../lib/clock.js';

/** Forgotten keys remembered for `set`'s check; beyond this the oldest half goes (see `#track`). */
const TRACKED_FORGETS = 10_000;

/**
 * The cache of natural legacy ID → successor UUID resolutions (lru-cache), kept right under
 * concurrent requests: an answer is cached only if its key was not forgotten since the successor
 * call it came from was sent. A resolution read before a rename and answered after it (the rename's
 * own write forgot the old ID meanwhile) would otherwise put the old ID back, and later writes
 * addressed by that ID would reach the renamed entity.
 *
 * A caller takes a `ticket` before it asks the successor and hands it to `set` with what the
 * answer says. Every `delete` and `clear` moves the cache's epoch on; each forgotten key keeps the
 * epoch of its last forget (the most recent TRACKED_FORGETS keys), so `set` refuses a key forgotten
 * after the ticket, and any key for a ticket older than what is still tracked. A write forgets its
 * own subject and then caches what its own calls answered: its forget (`delete` with its ticket)
 * does not count against it, unless another forget of that key came between the ticket and it, or
 * after it.
 */
export class IdCache {
  readonly #entries: LRUCache<string, string>;
  #epoch = 0;
  /** Forgotten keys → the epoch of their last forget, oldest first. */
  readonly #forgotten = new Map<string, number>();
  /** Tickets older than this epoch cache nothing: a forget after them may no longer be tracked. */
  #trackedSince = 0;

  constructor(options: { ttlSeconds: number; max: number; clock: Clock }) {
    this.#entries = new LRUCache<string, string>({
      max: options.max,
      ttl: options.ttlSeconds * 1000,
      perf: { now: () => options.clock.now() },
      // The clock is asked on every read: with lru-cache's default (1 ms) it keeps the time for a
      // millisecond behind a timer, one timer set (and later fired) per request whenever requests
      // come more than 1 ms apart, as on one connection.
      ttlResolution: 0,
    });
  }

  /** Now, for a later `set` of what a successor call sent from here on answers. */
  ticket(): number {
    return this.#epoch;
  }

  get(key: string): string | undefined {
    return this.#entries.get(key);
  }

  /**
   * Caches `key` → `uuid` as an answer after `ticket` says, unless the key was forgotten since;
   * `own`: what `delete` answered for the caller's own forget, which alone does not hold it back.
   */
  set(key: string, uuid: string, ticket: number, own?: number): void {
    const forgottenAt = this.#forgotten.get(key);
    if (own === undefined || forgottenAt !== own) {
      if (ticket < this.#trackedSince) return;
      if (forgottenAt !== undefined && forgottenAt > ticket) return;
    }
    this.#entries.set(key, uuid);
  }

  /**
   * Forgets `key`, also for answers still on their way. With the caller's `ticket`: answers this
   * forget's epoch for `set`'s `own`, or undefined when another forget of the key since the ticket
   * (or one no longer tracked) means the caller's answers are not to be cached either.
   */
  delete(key: string, ticket?: number): number | undefined {
    const previous = this.#forgotten.get(key);
    const alone =
      ticket !== undefined && ticket >= this.#trackedSince && (previous === undefined || previous <= ticket);
    const epoch = ++this.#epoch;
    this.#entries.delete(key);
    this.#forgotten.delete(key);
    this.#forgotten.set(key, epoch);
    if (this.#forgotten.size > TRACKED_FORGETS) this.#track();
    return alone ? epoch : undefined;
  }

  /** Forgets everything, also for answers still on their way. */
  clear(): void {
    this.#trackedSince = ++this.#epoch;
    this.#entries.clear();
    this.#forgotten.clear();
  }

  /** Drops the older half of the forgotten keys; tickets from before the last dropped cache nothing. */
  #track(): void {
    let drop = this.#forgotten.size - TRACKED_FORGETS / 2;
    for (const [key, epoch] of this.#forgotten) {
      if (drop-- <= 0) break;
      this.#forgotten.delete(key);
      this.#trackedSince = epoch;
    }
  }
}
