import { hourOf } from '../shadow.js';
import type { Migration } from '../types.js';
import {
  HOURLY_USAGE_KEEP_MS,
  type UsageCount,
  type UsageFilter,
  type UsageHour,
  type UsageRepository,
} from '../usage.js';
import type { SqliteDatabase } from './connection.js';

/** Schema of the usage inventory: one row per (API user, operation, outcome class). */
export const USAGE_MIGRATION: Migration = {
  id: 'usage-001-inventory',
  sql: `
    CREATE TABLE usage_inventory (
      api_user TEXT NOT NULL,
      operation TEXT NOT NULL,
      outcome TEXT NOT NULL,
      count INTEGER NOT NULL,
      first_seen INTEGER NOT NULL,
      last_seen INTEGER NOT NULL,
      PRIMARY KEY (api_user, operation, outcome)
    ) WITHOUT ROWID;
  `,
};

/** Hourly counts behind `recent` (the dashboard's "last 24 h"), kept for eight days. */
export const USAGE_HOURLY_MIGRATION: Migration = {
  id: 'usage-002-hourly',
  sql: `
    CREATE TABLE usage_hourly (
      api_user TEXT NOT NULL,
      operation TEXT NOT NULL,
      hour INTEGER NOT NULL,
      count INTEGER NOT NULL,
      PRIMARY KEY (api_user, operation, hour)
    ) WITHOUT ROWID;
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

/** The usage inventory in SQLite: a batch is one transaction of upserts; busy, full or failing at its file, it is unavailable. */
export class SqliteUsageRepository implements UsageRepository {
  constructor(private readonly db: SqliteDatabase) {}

  async add(counts: readonly UsageCount[]): Promise<void> {
    if (counts.length === 0) return;
    const upsert = this.db.prepare(
      `INSERT INTO usage_inventory (api_user, operation, outcome, count, first_seen, last_seen)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (api_user, operation, outcome) DO UPDATE SET
         count = count + excluded.count,
         first_seen = min(first_seen, excluded.first_seen),
         last_seen = max(last_seen, excluded.last_seen)`,
    );
    const hourly = this.db.prepare(
      `INSERT INTO usage_hourly (api_user, operation, hour, count) VALUES (?, ?, ?, ?)
       ON CONFLICT (api_user, operation, hour) DO UPDATE SET count = count + excluded.count`,
    );
    const prune = this.db.prepare('DELETE FROM usage_hourly WHERE hour < ?');
    this.db.transaction(() => {
      for (const c of counts) {
        upsert.run(c.apiUser, c.operation, c.outcome, c.count, c.firstSeen, c.lastSeen);
        hourly.run(c.apiUser, c.operation, hourOf(c.lastSeen), c.count);
      }
      prune.run(hourOf(Math.max(...counts.map((c) => c.lastSeen)) - HOURLY_USAGE_KEEP_MS));
    })();
  }

  async recent(since: number): Promise<{ apiUser: string; operation: string; count: number }[]> {
    return (
      this.db
        .prepare(
          `SELECT api_user, operation, SUM(count) AS count FROM usage_hourly WHERE hour >= ?
           GROUP BY api_user, operation ORDER BY operation, api_user`,
        )
        .all(hourOf(since)) as { api_user: string; operation: string; count: number }[]
    ).map((row) => ({ apiUser: row.api_user, operation: row.operation, count: row.count }));
  }

  async hourly(): Promise<UsageHour[]> {
    return (
      this.db
        .prepare(
          'SELECT api_user, operation, hour, count FROM usage_hourly ORDER BY operation, api_user, hour',
        )
        .all() as { api_user: string; operation: string; hour: number; count: number }[]
    ).map((row) => ({ apiUser: row.api_user, operation: row.operation, hour: row.hour, count: row.count }));
  }

  async insertMany(rows: readonly UsageCount[]): Promise<number> {
    const insert = this.db.prepare(
      `INSERT INTO usage_inventory (api_user, operation, outcome, count, first_seen, last_seen)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
    let added = 0;
    this.db.transaction(() => {
      for (const c of rows)
        added += insert.run(c.apiUser, c.operation, c.outcome, c.count, c.firstSeen, c.lastSeen).changes;
    })();
    return added;
  }

  async insertHourlyMany(rows: readonly UsageHour[]): Promise<number> {
    const insert = this.db.prepare(
      'INSERT INTO usage_hourly (api_user, operation, hour, count) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
    );
    let added = 0;
    this.db.transaction(() => {
      for (const h of rows) added += insert.run(h.apiUser, h.operation, h.hour, h.count).changes;
    })();
    return added;
  }

  async list(filter: UsageFilter = {}): Promise<UsageCount[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.apiUser !== undefined) {
      where.push('api_user = ?');
      params.push(filter.apiUser);
    }
    if (filter.operation !== undefined) {
      where.push('operation = ?');
      params.push(filter.operation);
    }
    if (filter.since !== undefined) {
      where.push('last_seen >= ?');
      params.push(filter.since);
    }
    const rows = this.db
      .prepare(
        `SELECT * FROM usage_inventory ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY operation, api_user, outcome`,
      )
      .all(...params) as Row[];
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
