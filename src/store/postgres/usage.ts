import type { Migration } from '../types.js';
import type { UsageCount, UsageFilter, UsageRepository } from '../usage.js';
import type { PostgresDatabase } from './database.js';

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
    await this.db.query(
      `INSERT INTO usage_inventory AS u (api_user, operation, outcome, count, first_seen, last_seen)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
       ON CONFLICT (api_user, operation, outcome) DO UPDATE SET
         count = u.count + excluded.count,
         first_seen = LEAST(u.first_seen, excluded.first_seen),
         last_seen = GREATEST(u.last_seen, excluded.last_seen)`,
      [
        rows.map((c) => c.apiUser),
        rows.map((c) => c.operation),
        rows.map((c) => c.outcome),
        rows.map((c) => c.count),
        rows.map((c) => c.firstSeen),
        rows.map((c) => c.lastSeen),
      ],
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
