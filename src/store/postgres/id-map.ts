import { StoreConflictError } from '../errors.js';
import type {
  IdMapImportProgress,
  IdMapImportResult,
  IdMapInsertResult,
  IdMapRepository,
  IdMapRow,
  IdMapSource,
} from '../id-map.js';
import { freedKey, MISSING_NAMES_VERSION, nextSequence } from '../id-map.js';
import type { Migration } from '../types.js';
import type { PostgresDatabase, Queryable } from './database.js';

/** Schema of the ID mapping table: unique per kind in both directions. */
export const PG_ID_MAP_MIGRATION: Migration = {
  id: 'mapping-001-id-map',
  sql: `
    CREATE TABLE id_map (
      kind TEXT NOT NULL,
      legacy_id TEXT NOT NULL,
      uuid TEXT NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('import', 'assigned')),
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (kind, legacy_id)
    );
    CREATE UNIQUE INDEX id_map_uuid ON id_map (kind, uuid);
  `,
};

/** The names version (IdMapRepository.namesVersion): one row. */
export const PG_NAMES_VERSION_MIGRATION: Migration = {
  id: 'mapping-002-names-version',
  sql: `
    CREATE TABLE id_names_version (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version BIGINT NOT NULL
    );
    INSERT INTO id_names_version (id, version) VALUES (1, 0);
  `,
};

interface Row {
  kind: string;
  legacy_id: string;
  uuid: string;
  source: IdMapSource;
  updated_at: number;
}

const toRow = (row: Row): IdMapRow => ({
  kind: row.kind,
  legacyId: row.legacy_id,
  uuid: row.uuid,
  source: row.source,
  updatedAt: row.updated_at,
});

/** Legacy IDs `prefix` + digits; the prefix is matched literally (no pattern characters). */
const SEQUENCE_WHERE = `kind = $1 AND left(legacy_id, length($2)) = $2
  AND length(legacy_id) > length($2) AND substr(legacy_id, length($2) + 1) ~ '^[0-9]+$'`;

/**
 * Adds or replaces the rows of one import chunk (see IdMapRepository.upsert); answers what it did.
 * A row written by another session meanwhile (a replica assigning the same UUID) is not visible to
 * the DELETE, and the INSERT then fails on the UUID's unique index: the chunk runs again.
 */
async function upsertChunk(
  client: Queryable,
  rows: readonly Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[],
  at: number,
  freedBefore: ReadonlySet<string>,
): Promise<IdMapImportResult & { freed: Set<string> }> {
  const done = { added: 0, changed: 0, unchanged: 0, freed: new Set<string>() };
  for (const row of rows) {
    const { rows: dropped } = await client.query<{ legacy_id: string }>(
      'DELETE FROM id_map WHERE kind = $1 AND uuid = $2 AND legacy_id <> $3 RETURNING legacy_id',
      [row.kind, row.uuid, row.legacyId],
    );
    const moved = dropped.length > 0;
    for (const { legacy_id } of dropped) done.freed.add(freedKey(row.kind, legacy_id));
    const key = freedKey(row.kind, row.legacyId);
    // A row this import took away before (its UUID moved) had it before: given back, it is changed.
    const hadRow = freedBefore.has(key) || done.freed.has(key);
    // The row comes back only when it was inserted or changed; xmax = 0 marks an insert.
    const { rows: written } = await client.query<{ inserted: boolean }>(
      `INSERT INTO id_map AS m (kind, legacy_id, uuid, source, updated_at) VALUES ($1, $2, $3, 'import', $4)
       ON CONFLICT (kind, legacy_id) DO UPDATE SET uuid = excluded.uuid, source = 'import',
         updated_at = excluded.updated_at
       WHERE m.uuid <> excluded.uuid
       RETURNING (xmax = 0) AS inserted`,
      [row.kind, row.legacyId, row.uuid, at],
    );
    const outcome = written[0];
    if (outcome === undefined && !moved) done.unchanged++;
    else if (outcome?.inserted && !moved && !hadRow) done.added++;
    else done.changed++;
  }
  return done;
}

/**
 * unique_violation: another session wrote the same rows at the same moment. (A deadlock, 40P01, is
 * run again by the transaction itself, PostgresDatabase.transaction, and then is the store busy.)
 */
const CONFLICT_SQLSTATES = new Set(['23505']);
const CONFLICT_ATTEMPTS = 5;

/**
 * Runs a transaction again when it met rows that another session wrote at the same moment (its
 * unique violation rolled it back; the next run sees them committed). After
 * CONFLICT_ATTEMPTS runs the conflict is reported as such, never as a raw driver error.
 */
async function againOnConflict<T>(transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !CONFLICT_SQLSTATES.has(code)) throw error;
      if (attempt >= CONFLICT_ATTEMPTS) {
        throw new StoreConflictError(
          `the ID table changed under this write ${attempt} times in a row (other processes writing the same rows); try again`,
          { cause: error },
        );
      }
    }
  }
}

/** The ID mapping table in PostgreSQL; lists of IDs go as one array parameter. */
export class PostgresIdMapRepository implements IdMapRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async byLegacyIds(kind: string, legacyIds: readonly string[]): Promise<Map<string, string>> {
    if (legacyIds.length === 0) return new Map();
    const { rows } = await this.db.query<Pick<Row, 'legacy_id' | 'uuid'>>(
      'SELECT legacy_id, uuid FROM id_map WHERE kind = $1 AND legacy_id = ANY($2::text[])',
      [kind, legacyIds],
    );
    return new Map(rows.map((row) => [row.legacy_id, row.uuid]));
  }

  async byUuids(kind: string, uuids: readonly string[]): Promise<Map<string, string>> {
    if (uuids.length === 0) return new Map();
    const { rows } = await this.db.query<Pick<Row, 'legacy_id' | 'uuid'>>(
      'SELECT legacy_id, uuid FROM id_map WHERE kind = $1 AND uuid = ANY($2::text[])',
      [kind, uuids],
    );
    return new Map(rows.map((row) => [row.uuid, row.legacy_id]));
  }

  async insert(row: Omit<IdMapRow, 'updatedAt'>, at: number): Promise<IdMapInsertResult> {
    const inserted = await this.db.query(
      `INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING`,
      [row.kind, row.legacyId, row.uuid, row.source, at],
    );
    if (inserted.rowCount === 1) return 'inserted';
    const { rows } = await this.db.query('SELECT 1 FROM id_map WHERE kind = $1 AND uuid = $2', [
      row.kind,
      row.uuid,
    ]);
    return rows.length > 0 ? 'uuid-mapped' : 'legacy-taken';
  }

  async upsert(
    rows: readonly Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[],
    at: number,
    onProgress?: (progress: IdMapImportProgress) => void,
    signal?: AbortSignal,
  ): Promise<IdMapImportResult> {
    const result: IdMapImportResult = { added: 0, changed: 0, unchanged: 0 };
    // Legacy IDs whose rows this import took away (their UUID moved to another): counted as
    // changed, not added, when a later row gives one back. Merged once a chunk is committed.
    const freed = new Set<string>();
    const chunk = 500;
    for (let start = 0; start < rows.length; start += chunk) {
      signal?.throwIfAborted();
      const part = rows.slice(start, start + chunk);
      const counted = await againOnConflict(() =>
        this.db.transaction((client) => upsertChunk(client, part, at, freed)),
      );
      for (const key of counted.freed) freed.add(key);
      result.added += counted.added;
      result.changed += counted.changed;
      result.unchanged += counted.unchanged;
      onProgress?.({ done: Math.min(rows.length, start + chunk), ...result });
    }
    return result;
  }

  async insertMany(rows: readonly IdMapRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    const result = await this.db.query(
      `INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
       ON CONFLICT DO NOTHING`,
      [
        rows.map((r) => r.kind),
        rows.map((r) => r.legacyId),
        rows.map((r) => r.uuid),
        rows.map((r) => r.source),
        rows.map((r) => r.updatedAt),
      ],
    );
    return result.rowCount ?? 0;
  }

  async maxSequence(kind: string, prefix: string): Promise<bigint | undefined> {
    const { rows } = await this.db.query<{ n: string | null }>(
      `SELECT MAX(substr(legacy_id, length($2) + 1)::numeric)::text AS n FROM id_map WHERE ${SEQUENCE_WHERE}`,
      [kind, prefix],
    );
    const n = rows[0]?.n;
    return n === null || n === undefined ? undefined : BigInt(n);
  }

  async assignSequence(
    kind: string,
    prefix: string,
    start: number,
    uuid: string,
    at: number,
  ): Promise<{ legacyId: string; inserted: boolean }> {
    return againOnConflict(() =>
      this.db.transaction(async (client) => {
        // One lock per (kind, prefix), held to the end of the transaction: replicas assigning at
        // the same moment take turns, so no two read the same highest number.
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
          `idm-compat id_map ${kind} ${prefix}`,
        ]);
        const mappedNow = async () =>
          (
            await client.query<{ legacy_id: string }>(
              'SELECT legacy_id FROM id_map WHERE kind = $1 AND uuid = $2',
              [kind, uuid],
            )
          ).rows[0]?.legacy_id;
        const existing = await mappedNow();
        if (existing !== undefined) return { legacyId: existing, inserted: false };
        const { rows } = await client.query<{ n: string | null }>(
          `SELECT MAX(substr(legacy_id, length($2) + 1)::numeric)::text AS n FROM id_map WHERE ${SEQUENCE_WHERE}`,
          [kind, prefix],
        );
        const max = rows[0]?.n;
        let next = nextSequence(max === null || max === undefined ? undefined : BigInt(max), start);
        // Writers that take no lock (an `ids import`, another rule, an operator's SQL) may map the
        // number or the UUID meanwhile; the insert then waits for them and does nothing (on either
        // unique index). A UUID mapped by then keeps its legacy ID; a number taken is skipped.
        for (;;) {
          const legacyId = `${prefix}${next}`;
          const inserted = await client.query(
            `INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES ($1, $2, $3, 'assigned', $4)
             ON CONFLICT DO NOTHING`,
            [kind, legacyId, uuid, at],
          );
          if (inserted.rowCount === 1) return { legacyId, inserted: true };
          const mapped = await mappedNow();
          if (mapped !== undefined) return { legacyId: mapped, inserted: false };
          next++;
        }
      }),
    );
  }

  async list(kind?: string): Promise<IdMapRow[]> {
    const { rows } =
      kind === undefined
        ? await this.db.query<Row>('SELECT * FROM id_map ORDER BY kind COLLATE "C", legacy_id COLLATE "C"')
        : await this.db.query<Row>('SELECT * FROM id_map WHERE kind = $1 ORDER BY legacy_id COLLATE "C"', [
            kind,
          ]);
    return rows.map(toRow);
  }

  async assigned(kind: string): Promise<Pick<IdMapRow, 'legacyId' | 'uuid'>[]> {
    const { rows } = await this.db.query<Pick<IdMapRow, 'legacyId' | 'uuid'>>(
      `SELECT legacy_id AS "legacyId", uuid FROM id_map WHERE kind = $1 AND source = 'assigned' ORDER BY legacy_id COLLATE "C"`,
      [kind],
    );
    return rows;
  }

  async count(kind?: string): Promise<number> {
    const { rows } =
      kind === undefined
        ? await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM id_map')
        : await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM id_map WHERE kind = $1', [kind]);
    return rows[0]?.n ?? 0;
  }

  async remove(kind: string, legacyId: string): Promise<boolean> {
    const result = await this.db.query('DELETE FROM id_map WHERE kind = $1 AND legacy_id = $2', [
      kind,
      legacyId,
    ]);
    return (result.rowCount ?? 0) > 0;
  }

  async namesVersion(): Promise<number> {
    const { rows } = await this.db.query<{ version: string }>(
      'SELECT version FROM id_names_version WHERE id = 1',
    );
    return Number(rows[0]?.version ?? 0);
  }

  async bumpNamesVersion(): Promise<number> {
    const { rows } = await this.db.query<{ version: string }>(
      'UPDATE id_names_version SET version = version + 1 WHERE id = 1 RETURNING version',
    );
    const version = rows[0]?.version;
    if (version === undefined) throw new Error(MISSING_NAMES_VERSION);
    return Number(version);
  }
}
