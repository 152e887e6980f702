import { hourOf } from '../shadow.js';
import type { Migration } from '../types.js';
import {
  HOURLY_USAGE_KEEP_MS,
  type UsageCount,
  type UsageFilter,
  type UsageHour,
  type UsageRepository,
} from '../usage.js';
import type { PostgresDatabase, Queryable } from './database.js';

/** Schema of the usage inventory: one row per (API user, operation, outcome class). */
export const PG_USAGE_MIGRATION: Migration = {
  id: 'usage-001-inventory',
  sql: `
    CREATE TABLE usage_inventory (
      api_user TEXT NOT NULL,
      operation TEXT NOT NULL,
      outcome TEXT NOT NULL,
      count BIGINT NOT NULL,
      first_seen BIGINT NOT NULL,
      last_seen BIGINT NOT NULL,
      PRIMARY KEY (api_user, operation, outcome)
    );
  `,
};

/** Hourly counts behind `recent` (the dashboard's "last 24 h"), kept for eight days. */
export const PG_USAGE_HOURLY_MIGRATION: Migration = {
  id: 'usage-002-hourly',
  sql: `
    CREATE TABLE usage_hourly (
      api_user TEXT NOT NULL,
      operation TEXT NOT NULL,
      hour BIGINT NOT NULL,
      count BIGINT NOT NULL,
      PRIMARY KEY (api_user, operation, hour)
    );
  `,
};

interface Row {
  api_user: string;
  operation: string;
  outcome: string;
  count: number;
  first_seen: number;
  last_seen: number;
}

/**
 * The usage inventory in PostgreSQL: a batch is one upsert statement. Rows of one key are summed
 * first (an upsert may touch a row once), and keys go in a fixed order, so replicas writing
 * batches at the same moment wait for each other instead of deadlocking.
 */
export class PostgresUsageRepository implements UsageRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async add(counts: readonly UsageCount[]): Promise<void> {
    if (counts.length === 0) return;
    const merged = new Map<string, UsageCount>();
    for (const c of counts) {
      const key = JSON.stringify([c.apiUser, c.operation, c.outcome]);
      const seen = merged.get(key);
      merged.set(
        key,
        seen
          ? {
              ...seen,
              count: seen.count + c.count,
              firstSeen: Math.min(seen.firstSeen, c.firstSeen),
              lastSeen: Math.max(seen.lastSeen, c.lastSeen),
            }
          : { ...c },
      );
    }
    const rows = [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
    const hourly = new Map<string, { apiUser: string; operation: string; hour: number; count: number }>();
    for (const c of rows) {
      const hour = hourOf(c.lastSeen);
      const key = JSON.stringify([c.apiUser, c.operation, hour]);
      const seen = hourly.get(key);
      hourly.set(key, {
        apiUser: c.apiUser,
        operation: c.operation,
        hour,
        count: (seen?.count ?? 0) + c.count,
      });
    }
    const hours = [...hourly.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, h]) => h);
    await this.db.transaction(async (client) => {
      await this.#addInventory(client, rows);
      await client.query(
        `INSERT INTO usage_hourly AS h (api_user, operation, hour, count)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
         ON CONFLICT (api_user, operation, hour) DO UPDATE SET count = h.count + excluded.count`,
        [
          hours.map((h) => h.apiUser),
          hours.map((h) => h.operation),
          hours.map((h) => h.hour),
          hours.map((h) => h.count),
        ],
      );
      await client.query('DELETE FROM usage_hourly WHERE hour < $1', [
        hourOf(Math.max(...rows.map((c) => c.lastSeen)) - HOURLY_USAGE_KEEP_MS),
      ]);
    });
  }

  async recent(since: number): Promise<{ apiUser: string; operation: string; count: number }[]> {
    const { rows } = await this.db.query<{ api_user: string; operation: string; count: number }>(
      `SELECT api_user, operation, SUM(count)::bigint AS count FROM usage_hourly WHERE hour >= $1
       GROUP BY api_user, operation ORDER BY operation COLLATE "C", api_user COLLATE "C"`,
      [hourOf(since)],
    );
    return rows.map((row) => ({ apiUser: row.api_user, operation: row.operation, count: row.count }));
  }

  async hourly(): Promise<UsageHour[]> {
    const { rows } = await this.db.query<{
      api_user: string;
      operation: string;
      hour: number;
      count: number;
    }>(
      `SELECT api_user, operation, hour, count FROM usage_hourly
       ORDER BY operation COLLATE "C", api_user COLLATE "C", hour`,
    );
    return rows.map((row) => ({
      apiUser: row.api_user,
      operation: row.operation,
      hour: row.hour,
      count: row.count,
    }));
  }

  async insertMany(rows: readonly UsageCount[]): Promise<number> {
    if (rows.length === 0) return 0;
    const result = await this.db.query(
      `INSERT INTO usage_inventory (api_user, operation, outcome, count, first_seen, last_seen)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
       ON CONFLICT DO NOTHING`,
      inventoryColumns(rows),
    );
    return result.rowCount ?? 0;
  }

  async insertHourlyMany(rows: readonly UsageHour[]): Promise<number> {
    if (rows.length === 0) return 0;
    const result = await this.db.query(
      `INSERT INTO usage_hourly (api_user, operation, hour, count)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
       ON CONFLICT DO NOTHING`,
      [
        rows.map((h) => h.apiUser),
        rows.map((h) => h.operation),
        rows.map((h) => h.hour),
        rows.map((h) => h.count),
      ],
    );
    return result.rowCount ?? 0;
  }

  async #addInventory(client: Queryable, rows: readonly UsageCount[]): Promise<void> {
    await client.query(
      `INSERT INTO usage_inventory AS u (api_user, operation, outcome, count, first_seen, last_seen)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
       ON CONFLICT (api_user, operation, outcome) DO UPDATE SET
         count = u.count + excluded.count,
         first_seen = LEAST(u.first_seen, excluded.first_seen),
         last_seen = GREATEST(u.last_seen, excluded.last_seen)`,
      inventoryColumns(rows),
    );
  }

  async list(filter: UsageFilter = {}): Promise<UsageCount[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.apiUser !== undefined) {
      params.push(filter.apiUser);
      where.push(`api_user = $${params.length}`);
    }
    if (filter.operation !== undefined) {
      params.push(filter.operation);
      where.push(`operation = $${params.length}`);
    }
    if (filter.since !== undefined) {
      params.push(filter.since);
      where.push(`last_seen >= $${params.length}`);
    }
    const { rows } = await this.db.query<Row>(
      `SELECT * FROM usage_inventory ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY operation COLLATE "C", api_user COLLATE "C", outcome COLLATE "C"`,
      params,
    );
    return rows.map((row) => ({
      apiUser: row.api_user,
      operation: row.operation,
      outcome: row.outcome,
      count: row.count,
      firstSeen: row.first_seen,
      lastSeen: row.last_seen,
    }));
  }
}

/** Inventory rows as the six column arrays `unnest` takes, in the table's column order. */
function inventoryColumns(rows: readonly UsageCount[]): unknown[] {
  return [
    rows.map((c) => c.apiUser),
    rows.map((c) => c.operation),
    rows.map((c) => c.outcome),
    rows.map((c) => c.count),
    rows.map((c) => c.firstSeen),
    rows.map((c) => c.lastSeen),
  ];
}
