import { LRUCache } from 'lru-cache';
import type { Clock } from '../lib/clock.js';

/** Forgotten keys remembered for `set`'s check; beyond this the oldest half goes (see `#track`). */
const TRACKED_FORGETS = 10_000;

/**
 * An entity's renames among the forgotten keys: its UUID behind a character no cache key starts
 * with (keys are `<kind>\0<legacy ID>`).
 */
function entityMark(uuid: string): string {
  return `\u0001${uuid}`;
}

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
 *
 * A write whose answer shows its entity under another legacy ID than the one it was addressed by
 * (a rename: its own, or a concurrent one that the successor ran before or after it) caches through
 * `rename`, which first drops every cached ID of that entity and marks the entity (by its UUID) as
 * renamed. No answer sent before the mark caches any ID of it afterwards, and of two renames whose
 * calls overlap, neither caches its new ID: which one the entity has now is not known. Without this,
 * two overlapping renames of one group (`a` → `b` and `a` → `c`) each cached their new ID, and a
 * later write addressed by the one the entity does not have reached the entity that has the other.
 */
export class IdCache {
  readonly #entries: LRUCache<string, string>;
  #epoch = 0;
  /** Forgotten keys → the epoch of their last forget, oldest first. */
  readonly #forgotten = new Map<string, number>();
  /** Tickets older than this epoch cache nothing: a forget after them may no longer be tracked. */
  #trackedSince = 0;
  /** Whether `rename` marked an entity since the last `clear`: until then `set` has no mark to look up. */
  #renamed = false;
  /** The store's names version the entries are known to be right for (see `syncNames`); none before the first check. */
  #namesVersion: number | undefined;
  /** Whether the store could not say its names version at the last check (see `namesUnknown`). */
  #namesFailing = false;
  /** Whether a read of the names version outlived its wait and has not settled (IdResolver's #syncNames). */
  namesReadStuck = false;

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
    if (this.#renamed) {
      const renamedAt = this.#forgotten.get(entityMark(uuid));
      if (renamedAt !== undefined && renamedAt > ticket) return;
    }
    this.#setUnlessForgotten(key, uuid, ticket, own);
  }

  /**
   * Caches `key` → `uuid` from the answer of a write that was addressed by another legacy ID of the
   * same entity (a rename, see the class comment): drops every cached ID of the entity and marks it
   * renamed, then caches `key` as `set` would, unless another rename of the entity came after
   * `ticket`.
   */
  rename(key: string, uuid: string, ticket: number, own?: number): void {
    const mark = entityMark(uuid);
    const previous = this.#forgotten.get(mark);
    const alone = ticket >= this.#trackedSince && (previous === undefined || previous <= ticket);
    const stale: string[] = [];
    // Renames are rare: a walk over the cache (some 3–4 ms for 10,000 entries) is cheaper in all
    // than an index that every cached entry would keep up.
    for (const [cachedKey, cachedUuid] of this.#entries.entries())
      if (cachedUuid === uuid) stale.push(cachedKey);
    for (const cachedKey of stale) this.#entries.delete(cachedKey);
    this.#mark(mark);
    this.#renamed = true;
    if (alone) this.#setUnlessForgotten(key, uuid, ticket, own);
  }

  #setUnlessForgotten(key: string, uuid: string, ticket: number, own: number | undefined): void {
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
    this.#entries.delete(key);
    const epoch = this.#mark(key);
    return alone ? epoch : undefined;
  }

  /** Notes a forget of `key` (or a rename of an entity, by its mark) at a new epoch. */
  #mark(key: string): number {
    const epoch = ++this.#epoch;
    this.#forgotten.delete(key);
    this.#forgotten.set(key, epoch);
    if (this.#forgotten.size > TRACKED_FORGETS) this.#track();
    return epoch;
  }

  /**
   * Keeps the entries only while the store's names version (IdMapRepository.namesVersion) is the one
   * they were checked against: another process sharing the store renamed an entity since, and any
   * entry may name it by its old ID. The first check drops them too: they were cached before it
   * (the resolver makes that check as it makes the cache).
   */
  syncNames(version: number): void {
    this.#namesFailing = false;
    if (this.#namesVersion === version) return;
    this.clear();
    this.#namesVersion = version;
  }

  /**
   * The store could not say its names version: drops every entry (any may name a renamed entity)
   * and forgets the version, so that the next answer is checked as a first one. Answers whether
   * this is the first such failure since the store last answered (for one warning, not one a write).
   */
  namesUnknown(): boolean {
    this.clear();
    this.#namesVersion = undefined;
    const first = !this.#namesFailing;
    this.#namesFailing = true;
    return first;
  }

  /**
   * Notes this process's own move of the names version to `version`: the entries stay (its rename
   * has dropped what it made wrong) unless another process moved it as well since the last check.
   */
  ownNamesChange(version: number): void {
    if (this.#namesVersion === version - 1) this.#namesVersion = version;
    else this.syncNames(version);
  }

  /** Forgets everything, also for answers still on their way. */
  clear(): void {
    this.#trackedSince = ++this.#epoch;
    this.#entries.clear();
    this.#forgotten.clear();
    this.#renamed = false;
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
