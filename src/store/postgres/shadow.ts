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
import type { PostgresDatabase } from './database.js';

/** Schema of the shadow outcomes: hourly counts, hourly path counts, bounded samples. */
export const PG_SHADOW_MIGRATION: Migration = {
  id: 'shadow-001-outcomes',
  sql: `
    CREATE TABLE shadow_counts (
      operation TEXT NOT NULL,
      outcome TEXT NOT NULL,
      hour BIGINT NOT NULL,
      count BIGINT NOT NULL,
      PRIMARY KEY (operation, outcome, hour)
    );
    CREATE TABLE shadow_paths (
      operation TEXT NOT NULL,
      path TEXT NOT NULL,
      hour BIGINT NOT NULL,
      count BIGINT NOT NULL,
      PRIMARY KEY (operation, path, hour)
    );
    CREATE TABLE shadow_samples (
      id BIGSERIAL PRIMARY KEY,
      at BIGINT NOT NULL,
      operation TEXT NOT NULL,
      api_user TEXT NOT NULL,
      request_id TEXT NOT NULL,
      outcome TEXT NOT NULL,
      detail JSONB NOT NULL
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
  detail: unknown;
}

/** Sums rows of one key (an upsert statement may touch a row once) and orders keys (no deadlocks between replicas). */
function merged<T>(rows: readonly T[], key: (row: T) => string, count: (row: T) => number): [T, number][] {
  const out = new Map<string, [T, number]>();
  for (const row of rows) {
    const k = key(row);
    const seen = out.get(k);
    out.set(k, [seen?.[0] ?? row, (seen?.[1] ?? 0) + count(row)]);
  }
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

/** One hourly count to add: (operation, key, hour) → count. */
interface HourlyRow {
  operation: string;
  key: string;
  hour: number;
  count: number;
}

/** Hourly rows of a batch, summed per (operation, key, hour) and ordered (see `merged`). */
function hourlyRows<T extends { operation: string; hour: number; count: number }>(
  rows: readonly T[],
  key: (row: T) => string,
): HourlyRow[] {
  const hourly = rows.map((row) => ({
    operation: row.operation,
    key: key(row),
    hour: hourOf(row.hour),
    count: row.count,
  }));
  return merged(
    hourly,
    (row) => JSON.stringify([row.operation, row.key, row.hour]),
    (row) => row.count,
  ).map(([row, count]) => ({ ...row, count }));
}

/** Adds hourly counts to `table` (keyed by operation, `column`, hour) in one set-based upsert. */
async function addHourly(
  client: { query(sql: string, params: unknown[]): Promise<unknown> },
  table: 'shadow_counts' | 'shadow_paths',
  column: 'outcome' | 'path',
  rows: readonly HourlyRow[],
): Promise<void> {
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO ${table} AS s (operation, ${column}, hour, count)
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
     ON CONFLICT (operation, ${column}, hour) DO UPDATE SET count = s.count + excluded.count`,
    [rows.map((r) => r.operation), rows.map((r) => r.key), rows.map((r) => r.hour), rows.map((r) => r.count)],
  );
}

/** Shadow outcomes in PostgreSQL: a batch is one transaction of set-based upserts. */
export class PostgresShadowRepository implements ShadowRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async add(
    batch: {
      counts: readonly ShadowCount[];
      paths: readonly ShadowPathCount[];
      samples: readonly ShadowSample[];
    },
    keepSamples: number,
  ): Promise<void> {
    const counts = hourlyRows(batch.counts, (c) => c.outcome);
    const paths = hourlyRows(batch.paths, (p) => p.path);
    await this.db.transaction(async (client) => {
      await addHourly(client, 'shadow_counts', 'outcome', counts);
      await addHourly(client, 'shadow_paths', 'path', paths);
      if (batch.samples.length > 0) {
        await client.query(
          `INSERT INTO shadow_samples (at, operation, api_user, request_id, outcome, detail)
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[])`,
          [
            batch.samples.map((s) => s.at),
            batch.samples.map((s) => s.operation),
            batch.samples.map((s) => s.apiUser),
            batch.samples.map((s) => s.requestId),
            batch.samples.map((s) => s.outcome),
            batch.samples.map((s) => JSON.stringify(storableDetail(s.detail))),
          ],
        );
        await client.query(
          `DELETE FROM shadow_samples s WHERE s.operation = ANY($1::text[]) AND s.id NOT IN
             (SELECT id FROM shadow_samples k WHERE k.operation = s.operation ORDER BY id DESC LIMIT $2)`,
          [[...new Set(batch.samples.map((s) => s.operation))], keepSamples],
        );
      }
    });
  }

  async counts(since = 0): Promise<{ operation: string; outcome: ShadowOutcome; count: number }[]> {
    const { rows } = await this.db.query<{ operation: string; outcome: ShadowOutcome; count: number }>(
      `SELECT operation, outcome, SUM(count)::bigint AS count FROM shadow_counts WHERE hour >= $1
       GROUP BY operation, outcome ORDER BY operation COLLATE "C", outcome COLLATE "C"`,
      [hourOf(since)],
    );
    return rows;
  }

  async paths(since = 0): Promise<{ operation: string; path: string; count: number }[]> {
    const { rows } = await this.db.query<{ operation: string; path: string; count: number }>(
      `SELECT operation, path, SUM(count)::bigint AS count FROM shadow_paths WHERE hour >= $1
       GROUP BY operation, path ORDER BY operation COLLATE "C", count DESC, path COLLATE "C"`,
      [hourOf(since)],
    );
    return rows;
  }

  async samples(filter: { operation?: string; since?: number; limit: number }): Promise<ShadowSample[]> {
    const { rows } = await this.db.query<SampleRow>(
      `SELECT at, operation, api_user, request_id, outcome, detail FROM shadow_samples
       WHERE ($1::text IS NULL OR operation = $1) AND at >= $2 ORDER BY id DESC LIMIT $3`,
      [filter.operation ?? null, filter.since ?? 0, filter.limit],
    );
    return rows.map((row) => ({
      at: row.at,
      operation: row.operation,
      apiUser: row.api_user,
      requestId: row.request_id,
      outcome: row.outcome,
      detail: row.detail,
    }));
  }
}
