import type { Migration } from '../types.js';
import type { UsageCount, UsageFilter, UsageRepository } from '../usage.js';
import type { SqliteDatabase } from './database.js';

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

interface Row {
  api_user: string;
  operation: string;
  outcome: string;
  count: number;
  first_seen: number;
  last_seen: number;
}

/** The usage inventory in SQLite: a batch is one transaction of upserts. */
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
    this.db.transaction(() => {
      for (const c of counts) upsert.run(c.apiUser, c.operation, c.outcome, c.count, c.firstSeen, c.lastSeen);
    })();
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
