import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ApiUserRecord } from './api-users.js';
import type { IdMapRow } from './id-map.js';
import type { Store } from './types.js';
import type { UsageCount, UsageHour } from './usage.js';

/** What happened to one table. */
export interface CopyTableResult {
  /** Rows in the source. */
  source: number;
  /** Rows written to the target. */
  copied: number;
  /** Rows the target already had, equal to the source's (or, for usage, with its own counts). */
  present: number;
  /** Rows the target has differently (another hash, ranges or UUID); left as they are. */
  differ: number;
  /** Up to 20 descriptions of differing rows, without secrets. */
  differences: string[];
}

/** What happened to the API users: also who was written. */
export interface ApiUserCopyResult extends CopyTableResult {
  /** The API users written, by name (up to 20): whom a copy gave credentials to. */
  copiedNames: string[];
}

/** The result of a copy, per table. */
export interface CopyResult {
  apiUsers: ApiUserCopyResult;
  idMap: CopyTableResult;
  usage: CopyTableResult;
  /** The hourly usage counts behind the dashboard's "last 24 h" (eight days of them). */
  usageHourly: CopyTableResult;
}

export interface CopyStoreOptions {
  /** Called once with the number of source rows of all tables. */
  onStart?: (total: number) => void;
  /** Called with the number of source rows handled so far. */
  onProgress?: (done: number) => void;
  /** Stops the copy after the chunk (or API user) under way: a CopyStopped with the counts so far. */
  signal?: AbortSignal;
}

/**
 * A copy that stopped part-way (interrupted, or the target failed): what was written stays, and
 * `result` counts it per table (a table not reached yet has copied nothing); `done` of `total`
 * source rows were handled. Running the same copy again writes the rest.
 */
export class CopyStopped extends Error {
  override readonly name = 'CopyStopped';
  constructor(
    message: string,
    readonly result: CopyResult,
    readonly done: number,
    readonly total: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const CHUNK = 500;
const MAX_DIFFERENCES = 20;

const emptyResult = (source: number): CopyTableResult => ({
  source,
  copied: 0,
  present: 0,
  differ: 0,
  differences: [],
});

function differs(result: CopyTableResult, description: string): void {
  result.differ++;
  if (result.differences.length < MAX_DIFFERENCES) result.differences.push(description);
}

const iso = (at: number) => new Date(at).toISOString();

const sameRanges = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((range, i) => range === b[i]);

/**
 * Copies API users (hashes, ranges, last login), the ID mapping table and the usage inventory
 * with its hourly counts from one store to another. Only what the target lacks is written, so a
 * second run copies nothing; rows the target has differently are left alone and reported.
 */
export async function copyStore(from: Store, to: Store, options: CopyStoreOptions = {}): Promise<CopyResult> {
  // A signal that came while the stores opened: nothing is written.
  options.signal?.throwIfAborted();
  const [users, idRows, usageRows, hourRows] = await Promise.all([
    from.apiUsers.list(),
    from.idMap.list(),
    from.usage.list(),
    from.usage.hourly(),
  ]);
  const total = users.length + idRows.length + usageRows.length + hourRows.length;
  options.onStart?.(total);
  const result: CopyResult = {
    apiUsers: { ...emptyResult(users.length), copiedNames: [] },
    idMap: emptyResult(idRows.length),
    usage: emptyResult(usageRows.length),
    usageHourly: emptyResult(hourRows.length),
  };
  let done = 0;
  const { signal } = options;
  const advance = async (rows: number) => {
    done += rows;
    options.onProgress?.(done);
    // A turn of the event loop, so that a signal is heard between SQLite's synchronous writes.
    if (signal) {
      await nextTurn();
      signal.throwIfAborted();
    }
  };
  try {
    await copyApiUsers(users, to, result.apiUsers, advance);
    await carryRemovals(from, to, result.apiUsers);
    await copyIdMap(idRows, to, result.idMap, advance);
    // Rows as they are: `usage.add` would also book each row's whole count into the hour it was
    // last seen, so a lifetime total would show as that hour's calls ("last 24 h").
    const [targetUsage, targetHours] = await Promise.all([to.usage.list(), to.usage.hourly()]);
    await copyCounts(
      usageRows,
      (part) => to.usage.insertMany(part),
      new Map(targetUsage.map((row) => [usageKey(row), row])),
      usageKey,
      usageDiffers,
      result.usage,
      advance,
    );
    await copyCounts(
      hourRows,
      (part) => to.usage.insertHourlyMany(part),
      new Map(targetHours.map((row) => [hourKey(row), row])),
      hourKey,
      hourDiffers,
      result.usageHourly,
      advance,
    );
  } catch (error) {
    // The store's own error when it failed, the signal's when the copy was stopped.
    const why = signal?.aborted && error === signal.reason ? signal.reason : error;
    throw new CopyStopped(why instanceof Error ? why.message : String(why), result, done, total, {
      cause: error,
    });
  }
  return result;
}

/**
 * The source's removals, for names the target has no user of: a copy from an older store into
 * the target later must not bring back whom the source had revoked. A user the source removed
 * that the target still has (copied before the removal) differs: a copy never deletes, and the
 * credentials revoked on the old box would stay live on the new one without a word.
 */
async function carryRemovals(from: Store, to: Store, result: ApiUserCopyResult): Promise<void> {
  const removals = await from.apiUsers.removals();
  await to.apiUsers.recordRemovals(removals);
  for (const [name, removedAt] of removals) {
    const still = await to.apiUsers.get(name);
    if (still && still.createdAt <= removedAt)
      differs(
        result,
        `API user ${name}: removed from the source at ${iso(removedAt)}, still a user of the target with its credentials (\`apiuser remove\` it there too)`,
      );
  }
}

async function copyApiUsers(
  users: readonly ApiUserRecord[],
  to: Store,
  result: ApiUserCopyResult,
  advance: (rows: number) => Promise<void>,
): Promise<void> {
  const removals = await to.apiUsers.removals();
  for (const user of users) {
    const { lastLoginAt, ...record } = user;
    // Removed from the target after the source's user was created: its credentials were revoked
    // there (a copy run again from the old store brought it back, old password and all).
    const removedAt = removals.get(user.name);
    if (removedAt !== undefined && user.createdAt <= removedAt) {
      differs(
        result,
        `API user ${user.name}: removed from the target at ${iso(removedAt)}; not written again (\`apiuser add\` it there to bring it back)`,
      );
      await advance(1);
      continue;
    }
    if (await to.apiUsers.create(record)) {
      result.copied++;
      if (result.copiedNames.length < MAX_DIFFERENCES) result.copiedNames.push(user.name);
    } else {
      const existing = await to.apiUsers.get(user.name);
      if (existing && existing.passwordHash === user.passwordHash && sameRanges(existing.ranges, user.ranges))
        result.present++;
      else differs(result, `API user ${user.name}: the target has another password or other ranges`);
    }
    if (lastLoginAt !== null) await to.apiUsers.recordLogin(user.name, lastLoginAt);
    await advance(1);
  }
}

async function copyIdMap(
  rows: readonly IdMapRow[],
  to: Store,
  result: CopyTableResult,
  advance: (rows: number) => Promise<void>,
): Promise<void> {
  for (let start = 0; start < rows.length; start += CHUNK) {
    const part = rows.slice(start, start + CHUNK);
    const copied = await to.idMap.insertMany(part);
    result.copied += copied;
    // Every row of the chunk is now in the target, unless its legacy ID or UUID was mapped otherwise.
    const byKind = new Map<string, IdMapRow[]>();
    for (const row of part) byKind.set(row.kind, [...(byKind.get(row.kind) ?? []), row]);
    let differing = 0;
    for (const [kind, kindRows] of byKind) {
      const mapped = await to.idMap.byLegacyIds(
        kind,
        kindRows.map((row) => row.legacyId),
      );
      for (const row of kindRows) {
        if (mapped.get(row.legacyId) === row.uuid) continue;
        const uuid = mapped.get(row.legacyId);
        differing++;
        differs(
          result,
          uuid === undefined
            ? `${kind} ${row.legacyId}: its UUID ${row.uuid} has another legacy ID in the target`
            : `${kind} ${row.legacyId}: the target maps it to ${uuid}, the source to ${row.uuid}`,
        );
      }
    }
    result.present += part.length - copied - differing;
    await advance(part.length);
  }
}

/**
 * Copies counts (usage rows, hourly usage counts) chunk by chunk with `insert`, which skips what
 * the target has and answers how many it added. A row the target had before (`before`, by `key`)
 * is "already there" when the target's count can hold the source's (`differsFrom` answers
 * undefined: as many calls or more, counted since as early or earlier — the copy's own row, grown
 * since); else it differs, since the source's calls are not added to the target's (a copy made
 * after the replicas took traffic, or a source that counted on after the copy).
 */
async function copyCounts<T>(
  rows: readonly T[],
  insert: (part: readonly T[]) => Promise<number>,
  before: ReadonlyMap<string, T>,
  key: (row: T) => string,
  differsFrom: (had: T, row: T) => string | undefined,
  result: CopyTableResult,
  advance: (rows: number) => Promise<void>,
): Promise<void> {
  for (let start = 0; start < rows.length; start += CHUNK) {
    const part = rows.slice(start, start + CHUNK);
    const copied = await insert(part);
    let differing = 0;
    for (const row of part) {
      // Not there before: written now, or by a replica meanwhile (then present).
      const had = before.get(key(row));
      const difference = had === undefined ? undefined : differsFrom(had, row);
      if (difference === undefined) continue;
      differing++;
      differs(result, difference);
    }
    result.copied += copied;
    result.present += part.length - copied - differing;
    await advance(part.length);
  }
}

const usageKey = (row: UsageCount) => JSON.stringify([row.apiUser, row.operation, row.outcome]);
const hourKey = (row: UsageHour) => JSON.stringify([row.apiUser, row.operation, row.hour]);

function usageDiffers(had: UsageCount, row: UsageCount): string | undefined {
  if (had.count >= row.count && had.firstSeen <= row.firstSeen) return undefined;
  return `usage ${row.apiUser || '(none)'} ${row.operation} ${row.outcome}: the target counts ${had.count} since ${iso(had.firstSeen)}, the source ${row.count} since ${iso(row.firstSeen)}; the source's are not added`;
}

function hourDiffers(had: UsageHour, row: UsageHour): string | undefined {
  if (had.count >= row.count) return undefined;
  return `usage hour ${row.apiUser || '(none)'} ${row.operation} ${iso(row.hour)}: the target counts ${had.count}, the source ${row.count}; the source's are not added`;
}
