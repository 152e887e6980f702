import { legacyIdProblem } from '../lib/legacy-id.js';
import { quoteInput } from '../lib/quote.js';
import { isDashedUuid, normalizeUuid } from '../lib/uuid.js';
import type { IdMapImportProgress, IdMapImportResult, IdMapRepository, IdMapRow } from '../store/id-map.js';
import type { CompiledProfile } from './compile.js';

/** A CSV row that was not imported, by its line number in the file. */
export interface RejectedRow {
  line: number;
  reason: string;
}

/** What an import did: rows added, changed, unchanged, and the rejected ones with reasons. */
export interface IdImportSummary extends IdMapImportResult {
  rows: number;
  rejected: RejectedRow[];
  /**
   * Imported rows that are likely mistakes, or that take away an ID integrations may hold, by line:
   * a legacy ID that is a dashed UUID other than the row's own (it may be another entity's UUID,
   * whose `uuid` rule then gives it `<uuid>-2`); a row that changes or moves an ID the proxy
   * assigned (see `assignedTakeovers`).
   */
  warnings: RejectedRow[];
  /** Kinds in the file whose ID strategy in the profile is not `table` (imported anyway). */
  notTableKinds: string[];
}

const KIND_COLUMNS = ['kind'];
const LEGACY_COLUMNS = ['legacy_id', 'legacyid', 'legacy', '_id', 'id'];
const UUID_COLUMNS = ['uuid', 'hexuuid', 'successor_uuid'];

/**
 * The line a CSV record starts on, from the line it ends on (csv-parse's `info.lines`) and its raw
 * text (the blank lines skipped before it, the record, its line break): a record whose quoted
 * field holds line breaks is named by its first line, where an editor shows it.
 */
function firstLine(lastLine: number, raw: string): number {
  const record = raw.replace(/^(?:[ \t]*\n)+/, '').replace(/\n$/, '');
  let breaks = 0;
  for (let at = record.indexOf('\n'); at !== -1; at = record.indexOf('\n', at + 1)) breaks++;
  return lastLine - breaks;
}

/**
 * Why `kind` (a `--kind` of `ids import` or `ids export`) cannot be used: not a kind of the
 * profile (kinds are exact, lower-case names: `User` is none), with the kinds it has; undefined
 * when it is one.
 */
export function unknownKind(profile: Pick<CompiledProfile, 'kinds'>, kind: string): string | undefined {
  if (profile.kinds.has(kind)) return undefined;
  return `unknown kind ${kind}; the profile has ${[...profile.kinds.keys()].join(', ')}`;
}

/**
 * Parses and checks an ID-table CSV (header `kind,legacy_id,uuid`; `kind` may come from
 * `defaultKind` instead), then writes the good rows in one transaction per chunk. Rows with an
 * unknown kind, an empty legacy ID or one no legacy call can address (over 255 bytes URL-encoded,
 * a control character, a "/" or "\\", "." or ".."; src/lib/legacy-id.ts), something that is not a UUID (dashed or base58), or
 * a legacy ID or UUID already used earlier in the file are rejected with their line number. Rejects with
 * IdImportStopped when the store fails while writing, with a plain Error (nothing written) when
 * the file or `defaultKind` cannot be used.
 */
export async function importIdCsv(options: {
  text: string;
  profile: CompiledProfile;
  idMap: IdMapRepository;
  now: number;
  defaultKind?: string | undefined;
  onStart?: (rows: number) => void;
  onProgress?: (done: number) => void;
  /** Stops the writes before the next chunk (IdImportStopped, its cause the signal's reason). */
  signal?: AbortSignal;
}): Promise<IdImportSummary> {
  const { profile, defaultKind } = options;
  const kindProblem = defaultKind === undefined ? undefined : unknownKind(profile, defaultKind);
  if (kindProblem !== undefined) throw new Error(kindProblem);
  // Loaded here, for the one command that imports a CSV, not with everything that imports this module.
  const { parse } = await import('csv-parse/sync');
  // The header as read, not the first row's keys: a short first row has fewer of them.
  let header: string[] | undefined;
  // CRLF and a lone CR (Excel for Mac's line end) read as LF: csv-parse counts a CRLF inside a
  // quoted field as two lines, so every row after one was given a line too far. A value that held
  // either is refused anyway (a control character).
  const records = parse(options.text.replace(/\r\n?/g, '\n'), {
    bom: true,
    columns: (names: string[]) => {
      header = names.map((name) => name.trim().toLowerCase());
      return header;
    },
    skip_empty_lines: true,
    trim: true,
    relax_column_count: true,
    info: true,
    raw: true,
  }) as { record: Record<string, string | undefined>; info: { lines: number }; raw: string }[];
  // An empty file, or one whose header lacks a column, imports nothing: it is no ID table (a
  // wrong file, an export cut off), not an empty one.
  const named = header ?? [];
  // The first of a part's names the header has (`legacy_id` before `id`: an export may add a row
  // number as `id`); one named twice is refused, as which of the two holds it is not known (a row
  // took the last one's value unseen).
  const column = (names: string[]) => {
    const found = names.find((name) => named.includes(name));
    if (found !== undefined && named.indexOf(found) !== named.lastIndexOf(found)) {
      throw new Error(
        `the CSV's header has the column ${found} twice: keep one; its header is ${quoteInput(named.join(','), 100)}`,
      );
    }
    return found;
  };
  const kindColumn = column(KIND_COLUMNS);
  const legacyColumn = column(LEGACY_COLUMNS);
  const uuidColumn = column(UUID_COLUMNS);
  if (legacyColumn === undefined || uuidColumn === undefined) {
    throw new Error(
      `the CSV needs a header with the columns legacy_id and uuid (and kind, unless --kind is given); ${header === undefined ? 'the file is empty' : `its header is ${quoteInput(named.join(','), 100)}`}`,
    );
  }
  if (kindColumn === undefined && defaultKind === undefined) {
    throw new Error('the CSV has no kind column: add one or pass --kind');
  }

  const rejected: RejectedRow[] = [];
  const warnings: RejectedRow[] = [];
  const rows: Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[] = [];
  // The line of each row in `rows`, for the warnings made once they are all known.
  const rowLines: number[] = [];
  const seenLegacy = new Map<string, number>();
  const seenUuid = new Map<string, number>();
  const notTable = new Set<string>();
  for (const { record, info, raw } of records) {
    const line = firstLine(info.lines, raw);
    const given = kindColumn === undefined ? undefined : record[kindColumn];
    const kind = given || defaultKind;
    const legacyId = record[legacyColumn];
    const rawUuid = record[uuidColumn];
    const reject = (reason: string) => rejected.push({ line, reason });
    if (!kind) {
      reject('no kind');
      continue;
    }
    // --kind is the kind of every row: a row that names another is a mix-up, not overruled.
    if (given && defaultKind !== undefined && given !== defaultKind) {
      reject(`kind ${JSON.stringify(given)}, but --kind ${defaultKind}`);
      continue;
    }
    const compiled = profile.kinds.get(kind);
    if (!compiled) {
      reject(`unknown kind ${JSON.stringify(kind)}`);
      continue;
    }
    if (!legacyId) {
      reject('empty legacy ID');
      continue;
    }
    const idProblem = legacyIdProblem(legacyId);
    if (idProblem !== undefined) {
      reject(`legacy ID ${quoteInput(legacyId, 40)} ${idProblem}: no legacy call could address it`);
      continue;
    }
    const uuid = rawUuid ? normalizeUuid(rawUuid) : undefined;
    if (uuid === undefined) {
      reject(`not a UUID (dashed or base58): ${JSON.stringify(rawUuid ?? '')}`);
      continue;
    }
    const legacyKey = `${kind}\u0000${legacyId}`;
    const uuidKey = `${kind}\u0000${uuid}`;
    const earlierLegacy = seenLegacy.get(legacyKey);
    if (earlierLegacy !== undefined) {
      reject(`legacy ID ${JSON.stringify(legacyId)} already given on line ${earlierLegacy}`);
      continue;
    }
    const earlierUuid = seenUuid.get(uuidKey);
    if (earlierUuid !== undefined) {
      reject(`UUID ${uuid} already given on line ${earlierUuid}`);
      continue;
    }
    seenLegacy.set(legacyKey, line);
    seenUuid.set(uuidKey, line);
    if (compiled.id.strategy !== 'table') notTable.add(kind);
    if (isDashedUuid(legacyId) && legacyId.toLowerCase() !== uuid) {
      warnings.push({
        line,
        reason: `legacy ID ${legacyId} is a UUID, but not the row's (${uuid}): if it is another ${kind}'s, that one's UUID is taken as an ID`,
      });
    }
    rows.push({ kind, legacyId, uuid });
    rowLines.push(line);
  }
  warnings.push(...(await assignedTakeovers(options.idMap, rows, rowLines)));
  warnings.sort((a, b) => a.line - b.line);
  options.onStart?.(rows.length);
  const summary = (result: IdMapImportResult): IdImportSummary => ({
    ...result,
    rows: records.length,
    rejected,
    warnings,
    notTableKinds: [...notTable].sort(),
  });
  let written: IdMapImportProgress = { done: 0, added: 0, changed: 0, unchanged: 0 };
  try {
    const result = await options.idMap.upsert(
      rows,
      options.now,
      (progress) => {
        written = progress;
        options.onProgress?.(progress.done);
      },
      options.signal,
    );
    return summary(result);
  } catch (error) {
    const { done, ...result } = written;
    throw new IdImportStopped(summary(result), done, rows.length, error);
  }
}

/**
 * The rows that take an ID the proxy assigned away from its entity, as the rows stand before the
 * import: the proxy answered with that ID (a create's 201, a list), so an integration may hold it.
 * A legacy ID assigned to another entity names this row's entity afterwards (that one gets a new
 * ID when next seen); an entity with an assigned ID gets the row's instead. Both follow the import's
 * rules and are what a migration may mean to do; they are told, not refused. (An ID the sequence
 * rule hands out while the import runs cannot be told here.)
 */
async function assignedTakeovers(
  idMap: IdMapRepository,
  rows: readonly Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[],
  lines: readonly number[],
): Promise<RejectedRow[]> {
  const found: RejectedRow[] = [];
  for (const kind of new Set(rows.map((row) => row.kind))) {
    const uuidOf = new Map<string, string>();
    const legacyOf = new Map<string, string>();
    for (const row of await idMap.assigned(kind)) {
      uuidOf.set(row.legacyId, row.uuid);
      legacyOf.set(row.uuid, row.legacyId);
    }
    if (uuidOf.size === 0) continue;
    // Where the file itself gives a UUID its legacy ID (a swap of two IDs, say).
    const givenAt = new Map<string, { legacyId: string; line: number }>();
    rows.forEach((row, index) => {
      if (row.kind === kind) givenAt.set(row.uuid, { legacyId: row.legacyId, line: lines[index] ?? 0 });
    });
    rows.forEach((row, index) => {
      if (row.kind !== kind) return;
      const line = lines[index] ?? 0;
      const holder = uuidOf.get(row.legacyId);
      if (holder !== undefined && holder !== row.uuid) {
        const given = givenAt.get(holder);
        const then = given ? `gets ${given.legacyId} (line ${given.line})` : 'gets a new ID when next seen';
        found.push({
          line,
          reason: `legacy ID ${row.legacyId} was assigned by the proxy to ${kind} ${holder}: an integration that holds it names ${row.uuid} after the import, and ${holder} ${then}`,
        });
      }
      const had = legacyOf.get(row.uuid);
      if (had !== undefined && had !== row.legacyId)
        found.push({
          line,
          reason: `${kind} ${row.uuid} has the legacy ID ${had}, assigned by the proxy: it becomes ${row.legacyId}, and an integration that holds ${had} no longer reaches it`,
        });
    });
  }
  return found;
}

/**
 * The store failed while the rows were written (unreachable, too slow), or the import was
 * interrupted (`signal`): the chunks written before stay imported, and running the same import
 * again writes the rest (rows already there count as unchanged). `summary` counts what was written.
 */
export class IdImportStopped extends Error {
  override readonly name = 'IdImportStopped';
  constructor(
    readonly summary: IdImportSummary,
    readonly written: number,
    readonly toWrite: number,
    cause: unknown,
  ) {
    super(
      `the import stopped after ${written} of ${toWrite} rows: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/** Renders rows of the ID table as CSV (`kind,legacy_id,uuid,source,updated_at`). */
export function idRowsToCsv(rows: readonly IdMapRow[]): string {
  const lines = ['kind,legacy_id,uuid,source,updated_at'];
  for (const row of rows) {
    lines.push(
      [row.kind, row.legacyId, row.uuid, row.source, new Date(row.updatedAt).toISOString()]
        .map(csvField)
        .join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}

function csvField(value: string): string {
  return /[",\r\n]|^\s|\s$/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}
