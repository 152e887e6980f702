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
import type { SqliteDatabase, SqliteStatement } from './connection.js';
import { untilUnlocked } from './database.js';

/** Schema of the ID mapping table: unique per kind in both directions. */
export const ID_MAP_MIGRATION: Migration = {
  id: 'mapping-001-id-map',
  sql: `
    CREATE TABLE id_map (
      kind TEXT NOT NULL,
      legacy_id TEXT NOT NULL,
      uuid TEXT NOT NULL,
      source TEXT NOT NULL CHECK (source IN ('import', 'assigned')),
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (kind, legacy_id)
    ) WITHOUT ROWID;
    CREATE UNIQUE INDEX id_map_uuid ON id_map (kind, uuid);
  `,
};

/** The names version (IdMapRepository.namesVersion): one row. */
export const NAMES_VERSION_MIGRATION: Migration = {
  id: 'mapping-002-names-version',
  sql: `
    CREATE TABLE id_names_version (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL
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

/** The ID mapping table in SQLite; lists of IDs go to SQLite as one JSON array (json_each). */
export class SqliteIdMapRepository implements IdMapRepository {
  /** Asked before every write that trusts a cached natural ID: prepared once. */
  private readonly namesStatements: {
    read: SqliteStatement<[], number>;
    bump: SqliteStatement<[], number>;
  };

  constructor(private readonly db: SqliteDatabase) {
    this.namesStatements = {
      read: db.prepare<[], number>('SELECT version FROM id_names_version WHERE id = 1').pluck(),
      bump: db
        .prepare<[], number>(
          'UPDATE id_names_version SET version = version + 1 WHERE id = 1 RETURNING version',
        )
        .pluck(),
    };
  }

  async byLegacyIds(kind: string, legacyIds: readonly string[]): Promise<Map<string, string>> {
    if (legacyIds.length === 0) return new Map();
    const rows = this.db
      .prepare(
        'SELECT legacy_id, uuid FROM id_map WHERE kind = ? AND legacy_id IN (SELECT value FROM json_each(?))',
      )
      .all(kind, JSON.stringify(legacyIds)) as Pick<Row, 'legacy_id' | 'uuid'>[];
    return new Map(rows.map((row) => [row.legacy_id, row.uuid]));
  }

  async byUuids(kind: string, uuids: readonly string[]): Promise<Map<string, string>> {
    if (uuids.length === 0) return new Map();
    const rows = this.db
      .prepare(
        'SELECT legacy_id, uuid FROM id_map WHERE kind = ? AND uuid IN (SELECT value FROM json_each(?))',
      )
      .all(kind, JSON.stringify(uuids)) as Pick<Row, 'legacy_id' | 'uuid'>[];
    return new Map(rows.map((row) => [row.uuid, row.legacy_id]));
  }

  async insert(row: Omit<IdMapRow, 'updatedAt'>, at: number): Promise<IdMapInsertResult> {
    // IMMEDIATE, as every read-then-write here: a transaction that has read waits for no lock when
    // it comes to write (SQLite answers SQLITE_BUSY at once if another process holds it then).
    return this.db
      .transaction((): IdMapInsertResult => {
        const taken = this.db
          .prepare('SELECT legacy_id, uuid FROM id_map WHERE kind = ? AND (legacy_id = ? OR uuid = ?)')
          .all(row.kind, row.legacyId, row.uuid) as Pick<Row, 'legacy_id' | 'uuid'>[];
        if (taken.some((t) => t.uuid === row.uuid)) return 'uuid-mapped';
        if (taken.length > 0) return 'legacy-taken';
        this.db
          .prepare('INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES (?, ?, ?, ?, ?)')
          .run(row.kind, row.legacyId, row.uuid, row.source, at);
        return 'inserted';
      })
      .immediate();
  }

  async upsert(
    rows: readonly Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[],
    at: number,
    onProgress?: (progress: IdMapImportProgress) => void,
    signal?: AbortSignal,
  ): Promise<IdMapImportResult> {
    const byLegacy = this.db.prepare('SELECT uuid FROM id_map WHERE kind = ? AND legacy_id = ?');
    const dropUuid = this.db.prepare(
      'DELETE FROM id_map WHERE kind = ? AND uuid = ? AND legacy_id <> ? RETURNING legacy_id',
    );
    const write = this.db.prepare(
      `INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES (?, ?, ?, 'import', ?)
       ON CONFLICT (kind, legacy_id) DO UPDATE SET uuid = excluded.uuid, source = 'import', updated_at = excluded.updated_at`,
    );
    // Legacy IDs whose rows this import took away (their UUID moved to another): counted as
    // changed, not added, when a later row gives one back. Merged once a chunk is committed.
    const freed = new Set<string>();
    // Counted per chunk and added once it is committed: a chunk that fails wrote nothing.
    const writeChunk = (part: readonly Pick<IdMapRow, 'kind' | 'legacyId' | 'uuid'>[]) => {
      const done = { added: 0, changed: 0, unchanged: 0, freed: new Set<string>() };
      for (const row of part) {
        const existing = byLegacy.get(row.kind, row.legacyId) as Pick<Row, 'uuid'> | undefined;
        const dropped = dropUuid.all(row.kind, row.uuid, row.legacyId) as { legacy_id: string }[];
        const moved = dropped.length > 0;
        for (const { legacy_id } of dropped) done.freed.add(freedKey(row.kind, legacy_id));
        if (existing?.uuid === row.uuid && !moved) {
          done.unchanged++;
          continue;
        }
        write.run(row.kind, row.legacyId, row.uuid, at);
        const key = freedKey(row.kind, row.legacyId);
        if (existing === undefined && !moved && !freed.has(key) && !done.freed.has(key)) done.added++;
        else done.changed++;
      }
      return done;
    };
    const result: IdMapImportResult = { added: 0, changed: 0, unchanged: 0 };
    const chunk = 500;
    for (let start = 0; start < rows.length; start += chunk) {
      // The chunks are written synchronously: a turn of the event loop before each lets a signal
      // (Ctrl-C) be heard between them, which would otherwise wait for the last.
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      // IMMEDIATE: the chunk takes the write lock before its first read, and waits for it (each
      // chunk on its own: trying the whole import again would count its committed chunks twice).
      const part = rows.slice(start, start + chunk);
      const counted = await untilUnlocked(() => this.db.transaction(writeChunk).immediate(part));
      for (const key of counted.freed) freed.add(key);
      result.added += counted.added;
      result.changed += counted.changed;
      result.unchanged += counted.unchanged;
      onProgress?.({ done: Math.min(rows.length, start + chunk), ...result });
    }
    return result;
  }

  async insertMany(rows: readonly IdMapRow[]): Promise<number> {
    const insert = this.db.prepare(
      `INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    );
    return this.db.transaction(() =>
      rows.reduce(
        (added, row) =>
          added + insert.run(row.kind, row.legacyId, row.uuid, row.source, row.updatedAt).changes,
        0,
      ),
    )();
  }

  async maxSequence(kind: string, prefix: string): Promise<bigint | undefined> {
    return this.maxSequenceNow(kind, prefix);
  }

  private maxSequenceNow(kind: string, prefix: string): bigint | undefined {
    const row = this.db
      .prepare(
        // The number as text, compared as digits (the longer one without leading zeros is the
        // higher): SQLite's integers end at 2^63 and node:sqlite refuses to read one beyond 2^53,
        // and an imported ID may have 20 digits or more.
        `SELECT substr(legacy_id, length(@prefix) + 1) AS n FROM id_map
         WHERE kind = @kind AND substr(legacy_id, 1, length(@prefix)) = @prefix
           AND length(legacy_id) > length(@prefix) AND substr(legacy_id, length(@prefix) + 1) NOT GLOB '*[^0-9]*'
         ORDER BY length(ltrim(substr(legacy_id, length(@prefix) + 1), '0')) DESC,
                  ltrim(substr(legacy_id, length(@prefix) + 1), '0') DESC
         LIMIT 1`,
      )
      .get({ prefix, kind }) as { n: string } | undefined;
    return row === undefined ? undefined : BigInt(row.n);
  }

  async assignSequence(
    kind: string,
    prefix: string,
    start: number,
    uuid: string,
    at: number,
  ): Promise<{ legacyId: string; inserted: boolean }> {
    // IMMEDIATE takes the write lock first, so another process cannot read the same maximum.
    return this.db
      .transaction(() => {
        const mapped = this.db
          .prepare('SELECT legacy_id FROM id_map WHERE kind = ? AND uuid = ?')
          .get(kind, uuid) as Pick<Row, 'legacy_id'> | undefined;
        if (mapped) return { legacyId: mapped.legacy_id, inserted: false };
        const exists = this.db.prepare('SELECT 1 FROM id_map WHERE kind = ? AND legacy_id = ?');
        let next = nextSequence(this.maxSequenceNow(kind, prefix), start);
        while (exists.get(kind, `${prefix}${next}`)) next++;
        const legacyId = `${prefix}${next}`;
        this.db
          .prepare(
            "INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES (?, ?, ?, 'assigned', ?)",
          )
          .run(kind, legacyId, uuid, at);
        return { legacyId, inserted: true };
      })
      .immediate();
  }

  async list(kind?: string): Promise<IdMapRow[]> {
    const rows = (
      kind === undefined
        ? this.db.prepare('SELECT * FROM id_map ORDER BY kind, legacy_id').all()
        : this.db.prepare('SELECT * FROM id_map WHERE kind = ? ORDER BY legacy_id').all(kind)
    ) as Row[];
    return rows.map(toRow);
  }

  async assigned(kind: string): Promise<Pick<IdMapRow, 'legacyId' | 'uuid'>[]> {
    return this.db
      .prepare(
        "SELECT legacy_id AS legacyId, uuid FROM id_map WHERE kind = ? AND source = 'assigned' ORDER BY legacy_id",
      )
      .all(kind) as Pick<IdMapRow, 'legacyId' | 'uuid'>[];
  }

  async count(kind?: string): Promise<number> {
    const row = (
      kind === undefined
        ? this.db.prepare('SELECT COUNT(*) AS n FROM id_map').get()
        : this.db.prepare('SELECT COUNT(*) AS n FROM id_map WHERE kind = ?').get(kind)
    ) as { n: number };
    return row.n;
  }

  async remove(kind: string, legacyId: string): Promise<boolean> {
    return (
      this.db.prepare('DELETE FROM id_map WHERE kind = ? AND legacy_id = ?').run(kind, legacyId).changes > 0
    );
  }

  async namesVersion(): Promise<number> {
    return this.namesStatements.read.get() ?? 0;
  }

  async bumpNamesVersion(): Promise<number> {
    const version = this.namesStatements.bump.get();
    if (version === undefined) throw new Error(MISSING_NAMES_VERSION);
    return version;
  }
}
