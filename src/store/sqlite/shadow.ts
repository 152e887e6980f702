import {
  hourOf,
  type ShadowCount,
  type ShadowOutcome,
  type ShadowPathCount,
  type ShadowRepository,
  type ShadowSample,
  storableDetail,
} from '../shadow.js';
import type { Migration } from '../types.js';
import type { SqliteDatabase } from './connection.js';

/** Schema of the shadow outcomes: hourly counts, hourly path counts, bounded samples. */
export const SHADOW_MIGRATION: Migration = {
  id: 'shadow-001-outcomes',
  sql: `
    CREATE TABLE shadow_counts (
      operation TEXT NOT NULL,
      outcome TEXT NOT NULL,
      hour INTEGER NOT NULL,
      count INTEGER NOT NULL,
      PRIMARY KEY (operation, outcome, hour)
    ) WITHOUT ROWID;
    CREATE TABLE shadow_paths (
      operation TEXT NOT NULL,
      path TEXT NOT NULL,
      hour INTEGER NOT NULL,
      count INTEGER NOT NULL,
      PRIMARY KEY (operation, path, hour)
    ) WITHOUT ROWID;
    CREATE TABLE shadow_samples (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      at INTEGER NOT NULL,
      operation TEXT NOT NULL,
      api_user TEXT NOT NULL,
      request_id TEXT NOT NULL,
      outcome TEXT NOT NULL,
      detail TEXT NOT NULL
    );
    CREATE INDEX shadow_samples_operation ON shadow_samples (operation, id);
  `,
};

interface SampleRow {
  at: number;
  operation: string;
  api_user: string;
  request_id: string;
  outcome: 'mismatch' | 'error';
  detail: string;
}

/** Shadow outcomes in SQLite: a batch is one transaction; busy, full or failing at its file, it is unavailable. */
export class SqliteShadowRepository implements ShadowRepository {
  constructor(private readonly db: SqliteDatabase) {}

  async add(
    batch: {
      counts: readonly ShadowCount[];
      paths: readonly ShadowPathCount[];
      samples: readonly ShadowSample[];
    },
    keepSamples: number,
  ): Promise<void> {
    const count = this.db.prepare(
      `INSERT INTO shadow_counts (operation, outcome, hour, count) VALUES (?, ?, ?, ?)
       ON CONFLICT (operation, outcome, hour) DO UPDATE SET count = count + excluded.count`,
    );
    const path = this.db.prepare(
      `INSERT INTO shadow_paths (operation, path, hour, count) VALUES (?, ?, ?, ?)
       ON CONFLICT (operation, path, hour) DO UPDATE SET count = count + excluded.count`,
    );
    const sample = this.db.prepare(
      'INSERT INTO shadow_samples (at, operation, api_user, request_id, outcome, detail) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const prune = this.db.prepare(
      `DELETE FROM shadow_samples WHERE operation = ? AND id NOT IN
         (SELECT id FROM shadow_samples WHERE operation = ? ORDER BY id DESC LIMIT ?)`,
    );
    this.db.transaction(() => {
      for (const c of batch.counts) count.run(c.operation, c.outcome, hourOf(c.hour), c.count);
      for (const p of batch.paths) path.run(p.operation, p.path, hourOf(p.hour), p.count);
      for (const s of batch.samples)
        sample.run(
          s.at,
          s.operation,
          s.apiUser,
          s.requestId,
          s.outcome,
          JSON.stringify(storableDetail(s.detail)),
        );
      for (const operation of new Set(batch.samples.map((s) => s.operation)))
        prune.run(operation, operation, keepSamples);
    })();
  }

  async counts(since = 0): Promise<{ operation: string; outcome: ShadowOutcome; count: number }[]> {
    return this.db
      .prepare(
        `SELECT operation, outcome, SUM(count) AS count FROM shadow_counts WHERE hour >= ?
         GROUP BY operation, outcome ORDER BY operation, outcome`,
      )
      .all(hourOf(since)) as { operation: string; outcome: ShadowOutcome; count: number }[];
  }

  async paths(since = 0): Promise<{ operation: string; path: string; count: number }[]> {
    return this.db
      .prepare(
        `SELECT operation, path, SUM(count) AS count FROM shadow_paths WHERE hour >= ?
         GROUP BY operation, path ORDER BY operation, count DESC, path`,
      )
      .all(hourOf(since)) as { operation: string; path: string; count: number }[];
  }

  async samples(filter: { operation?: string; since?: number; limit: number }): Promise<ShadowSample[]> {
    const rows = this.db
      .prepare(
        `SELECT * FROM shadow_samples WHERE (? IS NULL OR operation = ?) AND at >= ? ORDER BY id DESC LIMIT ?`,
      )
      .all(
        filter.operation ?? null,
        filter.operation ?? null,
        filter.since ?? 0,
        filter.limit,
      ) as SampleRow[];
    return rows.map((row) => ({
      at: row.at,
      operation: row.operation,
      apiUser: row.api_user,
      requestId: row.request_id,
      outcome: row.outcome,
      detail: JSON.parse(row.detail) as unknown,
    }));
  }
}
