/**
 * The ID mapping table of the `table` ID strategy (SPEC 5): legacy ID ↔ successor UUID per
 * entity kind. Storage-neutral; implementations: SQLite (`sqlite/id-map.ts`), PostgreSQL
 * (`postgres/id-map.ts`).
 */

/** Where a row came from: an `ids import`, or an assignment rule for an entity the proxy saw. */
export type IdMapSource = 'import' | 'assigned';

/** One row. UUIDs are dashed and lower case. */
export interface IdMapRow {
  kind: string;
  legacyId: string;
  uuid: string;
  source: IdMapSource;
  /** Milliseconds since the epoch. */
  updatedAt: number;
}

/** What an import did. */
export interface IdMapImportResult {
  added: number;
  changed: number;
  unchanged: number;
}

/** How far an import has come: rows written so far (committed), and what they did. */
export interface IdMapImportProgress extends IdMapImportResult {
  done: number;
}

/** Why `bumpNamesVersion` failed on a store whose one row of it is gone (deleted by hand). */
export const MISSING_NAMES_VERSION = 'the names version row (id_names_version) is missing';

/** Outcome of inserting one row without replacing anything. */
export type IdMapInsertResult = 'inserted' | 'legacy-taken' | 'uuid-mapped';

/** The ID mapping table. Every lookup of many IDs is one query. */
export interface IdMapRepository {
  /** UUIDs of the given legacy IDs of a kind; unknown IDs are absent from the map. */
  byLegacyIds(kind: string, legacyIds: readonly string[]): Promise<Map<string, string>>;
  /** Legacy IDs of the given UUIDs of a kind; unmapped UUIDs are absent from the map. */
  byUuids(kind: string, uuids: readonly string[]): Promise<Map<string, string>>;
  /** Adds one row unless the legacy ID or the UUID is already mapped. */
  insert(row: Omit<IdMapRow, 'updatedAt'>, at: number): Promise<IdMapInsertResult>;
  /**
   * Adds or replaces rows in one transaction per chunk: a row whose legacy ID exists with another
   * UUID is changed; a UUID mapped under another legacy ID moves to the new one, also when another
   * process maps it at the same moment. `onProgress` is called after each chunk is committed; when
   * a later chunk fails, what it reported last stays written. An aborted `signal` stops it before
   * the next chunk, rejecting with the signal's reason (the chunks committed stay written).
   */
  upsert(
    rows: readonly Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[],
    at: number,
    onProgress?: (progress: IdMapImportProgress) => void,
    signal?: AbortSignal,
  ): Promise<IdMapImportResult>;
  /**
   * Adds rows as they are (source and time kept), skipping every row whose legacy ID or UUID is
   * already mapped in its kind; one transaction. Answers how many were added (`store copy`).
   */
  insertMany(rows: readonly IdMapRow[]): Promise<number>;
  /**
   * The highest number N among legacy IDs `prefix + N` of a kind, for the sequence rule; exact at
   * any length (an imported ID may have 20 digits or more).
   */
  maxSequence(kind: string, prefix: string): Promise<bigint | undefined>;
  /**
   * The sequence rule, atomically: maps `uuid` to `prefix + (highest N + 1)` (`start` when there is none),
   * or answers the legacy ID it already has, also when another process (an `ids import`) maps the
   * UUID while this runs. Processes sharing the store never hand out one number twice: the read
   * of the highest number and the insert happen under one lock.
   */
  assignSequence(
    kind: string,
    prefix: string,
    start: number,
    uuid: string,
    at: number,
  ): Promise<{ legacyId: string; inserted: boolean }>;
  /** Every row (of one kind, or all), ordered by kind then legacy ID. */
  list(kind?: string): Promise<IdMapRow[]>;
  /** The legacy IDs and UUIDs of a kind's rows that an assignment rule made (source `assigned`), by legacy ID. */
  assigned(kind: string): Promise<Pick<IdMapRow, 'legacyId' | 'uuid'>[]>;
  /** Number of rows (of one kind, or all). */
  count(kind?: string): Promise<number>;
  /** Removes one row; false when there was none. */
  remove(kind: string, legacyId: string): Promise<boolean>;
  /**
   * The names version: a number every process sharing the store moves on (`bumpNamesVersion`) when
   * a write of its own renamed an entity of a natural kind, so that the others stop trusting the
   * legacy ID → UUID resolutions they cached before (src/mapping/ids.ts). Read from the store on
   * every call: only a write that would trust a cached resolution unread asks.
   */
  namesVersion(): Promise<number>;
  /** Moves the names version on by one; answers the new version. Throws when its row is gone. */
  bumpNamesVersion(): Promise<number>;
}

/**
 * The sequence rule's next number: one after the highest, `start` when there is none. A bigint, so
 * that it stays exact beyond 2^53 (one imported ID of 16 digits made `Number(max) + 1` equal to
 * `max`, and the search for a free number never ended).
 */
export function nextSequence(highest: bigint | undefined, start: number): bigint {
  return highest === undefined ? BigInt(start) : highest + 1n;
}

/**
 * A legacy ID of a kind as an import's set of freed rows holds it: a row the import took away
 * (its UUID moved to another legacy ID) that a later row may give back (counted as changed then).
 */
export function freedKey(kind: string, legacyId: string): string {
  return `${kind}\u0000${legacyId}`;
}
