import type {
  ApiUserRecord,
  ApiUserRepository,
  KnownAddress,
  LoginThrottleRepository,
  ThrottleKey,
  ThrottleScope,
  ThrottleState,
} from '../api-users.js';
import type { Migration } from '../types.js';
import type { PostgresDatabase, Queryable } from './database.js';

/** Schema of API users and failed-login counters. Times are BIGINT milliseconds since the epoch. */
export const PG_API_USERS_MIGRATION: Migration = {
  id: 'auth-001-api-users',
  sql: `
    CREATE TABLE api_users (
      name TEXT PRIMARY KEY,
      password_hash TEXT NOT NULL,
      ranges JSONB NOT NULL,
      created_at BIGINT NOT NULL,
      last_login_at BIGINT
    );
    -- One row: bumped in the transaction of every credential change; replicas poll it.
    CREATE TABLE api_user_credentials_version (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version BIGINT NOT NULL
    );
    INSERT INTO api_user_credentials_version (id, version) VALUES (1, 0);
    CREATE TABLE auth_throttle (
      scope TEXT NOT NULL CHECK (scope IN ('user', 'pair', 'address')),
      user_name TEXT NOT NULL,
      address TEXT NOT NULL,
      failures INTEGER NOT NULL,
      last_failure_at BIGINT NOT NULL,
      blocked_until BIGINT NOT NULL,
      PRIMARY KEY (scope, user_name, address)
    );
    CREATE INDEX auth_throttle_user ON auth_throttle (user_name);
  `,
};

/** Known addresses: where each API user last logged in successfully (see the SQLite twin). */
export const PG_KNOWN_ADDRESSES_MIGRATION: Migration = {
  id: 'auth-002-known-addresses',
  sql: `
    CREATE TABLE auth_known_addresses (
      user_name TEXT NOT NULL,
      address TEXT NOT NULL,
      last_success_at BIGINT NOT NULL,
      PRIMARY KEY (user_name, address)
    );
  `,
};

/** API users removed, by name (see the SQLite twin). */
export const PG_API_USER_REMOVALS_MIGRATION: Migration = {
  id: 'auth-003-api-user-removals',
  sql: `
    CREATE TABLE api_user_removals (
      name TEXT PRIMARY KEY,
      removed_at BIGINT NOT NULL
    );
  `,
};

interface ApiUserRow {
  name: string;
  password_hash: string;
  ranges: string[];
  created_at: number;
  last_login_at: number | null;
}

interface ThrottleRow {
  scope: ThrottleScope;
  user_name: string;
  address: string;
  failures: number;
  last_failure_at: number;
  blocked_until: number;
}

const toRecord = (row: ApiUserRow): ApiUserRecord => ({
  name: row.name,
  passwordHash: row.password_hash,
  ranges: row.ranges,
  createdAt: row.created_at,
  lastLoginAt: row.last_login_at,
});

const toState = (row: ThrottleRow): ThrottleState => ({
  scope: row.scope,
  userName: row.user_name,
  address: row.address,
  failures: row.failures,
  lastFailureAt: row.last_failure_at,
  blockedUntil: row.blocked_until,
});

/**
 * API users in PostgreSQL. `credentialsVersion` answers from memory and reads the version row at
 * most once per `pollMs` (one concurrent read shared by all callers), so a change made by another
 * replica is seen within that interval without a round trip per request.
 */
export class PostgresApiUserRepository implements ApiUserRepository {
  private version = 0;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private polling: Promise<number> | undefined;

  constructor(
    private readonly db: PostgresDatabase,
    private readonly pollMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async get(name: string): Promise<ApiUserRecord | undefined> {
    const { rows } = await this.db.query<ApiUserRow>('SELECT * FROM api_users WHERE name = $1', [name]);
    const row = rows[0];
    return row ? toRecord(row) : undefined;
  }

  async list(): Promise<ApiUserRecord[]> {
    const { rows } = await this.db.query<ApiUserRow>('SELECT * FROM api_users ORDER BY name COLLATE "C"');
    return rows.map(toRecord);
  }

  async create(user: Omit<ApiUserRecord, 'lastLoginAt'>): Promise<boolean> {
    return this.change(async (client) => {
      const created =
        (
          await client.query(
            `INSERT INTO api_users (name, password_hash, ranges, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO NOTHING`,
            [user.name, user.passwordHash, JSON.stringify(user.ranges), user.createdAt],
          )
        ).rowCount === 1;
      if (created) await client.query('DELETE FROM api_user_removals WHERE name = $1', [user.name]);
      return created;
    });
  }

  async remove(name: string, at: number): Promise<boolean> {
    return this.change(async (client) => {
      const removed = (await client.query('DELETE FROM api_users WHERE name = $1', [name])).rowCount === 1;
      if (removed) {
        await client.query("DELETE FROM auth_throttle WHERE user_name = $1 AND scope IN ('user', 'pair')", [
          name,
        ]);
        await client.query('DELETE FROM auth_known_addresses WHERE user_name = $1', [name]);
        await client.query(
          `INSERT INTO api_user_removals (name, removed_at) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE SET removed_at = excluded.removed_at`,
          [name, at],
        );
      }
      return removed;
    });
  }

  async recordRemovals(removals: ReadonlyMap<string, number>): Promise<void> {
    if (removals.size === 0) return;
    await this.db.query(
      `INSERT INTO api_user_removals (name, removed_at)
       SELECT name, removed_at FROM unnest($1::text[], $2::bigint[]) AS copied (name, removed_at)
       WHERE NOT EXISTS (SELECT 1 FROM api_users WHERE api_users.name = copied.name)
       ON CONFLICT (name) DO UPDATE SET removed_at = GREATEST(api_user_removals.removed_at, excluded.removed_at)`,
      [[...removals.keys()], [...removals.values()]],
    );
  }

  async removals(): Promise<Map<string, number>> {
    const { rows } = await this.db.query<{ name: string; removed_at: number }>(
      'SELECT name, removed_at FROM api_user_removals',
    );
    return new Map(rows.map((row) => [row.name, row.removed_at]));
  }

  async setPasswordHash(name: string, passwordHash: string): Promise<boolean> {
    return this.change(
      async (client) =>
        (await client.query('UPDATE api_users SET password_hash = $1 WHERE name = $2', [passwordHash, name]))
          .rowCount === 1,
    );
  }

  async setRanges(name: string, ranges: string[]): Promise<boolean> {
    return this.change(
      async (client) =>
        (
          await client.query('UPDATE api_users SET ranges = $1 WHERE name = $2', [
            JSON.stringify(ranges),
            name,
          ])
        ).rowCount === 1,
    );
  }

  async recordLogin(name: string, at: number): Promise<void> {
    await this.db.query(
      'UPDATE api_users SET last_login_at = $1 WHERE name = $2 AND (last_login_at IS NULL OR last_login_at < $1)',
      [at, name],
    );
  }

  async credentialsVersion(): Promise<number> {
    if (this.now() - this.checkedAt < this.pollMs) return this.version;
    this.polling ??= this.readVersion().finally(() => {
      this.polling = undefined;
    });
    return this.polling;
  }

  private async readVersion(): Promise<number> {
    const startedAt = this.now();
    const { rows } = await this.db.query<{ version: number }>(
      'SELECT version FROM api_user_credentials_version WHERE id = 1',
    );
    this.version = rows[0]?.version ?? 0;
    this.checkedAt = startedAt;
    return this.version;
  }

  /** Runs a write in a transaction and bumps the credentials version in it when it changed something. */
  private async change(write: (client: Queryable) => Promise<boolean>): Promise<boolean> {
    const bumped = await this.db.transaction(async (client) => {
      if (!(await write(client))) return undefined;
      const { rows } = await client.query<{ version: number }>(
        'UPDATE api_user_credentials_version SET version = version + 1 WHERE id = 1 RETURNING version',
      );
      return rows[0]?.version ?? 0;
    });
    if (bumped === undefined) return false;
    this.version = bumped;
    this.checkedAt = this.now();
    return true;
  }
}

/**
 * Failed-login counters in PostgreSQL. A failure is counted by one upsert whose row lock is held
 * until its block end is written, so replicas counting the same key at once never lose a count.
 */
export class PostgresLoginThrottleRepository implements LoginThrottleRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async get(keys: readonly ThrottleKey[]): Promise<ThrottleState[]> {
    if (keys.length === 0) return [];
    const { rows } = await this.db.query<ThrottleRow>(
      `SELECT t.* FROM auth_throttle t
       JOIN unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k (scope, user_name, address, n)
         ON t.scope = k.scope AND t.user_name = k.user_name AND t.address = k.address
       ORDER BY k.n`,
      [keys.map((k) => k.scope), keys.map((k) => k.userName), keys.map((k) => k.address)],
    );
    return rows.map(toState);
  }

  async recordFailure(
    key: ThrottleKey,
    at: number,
    forgetBefore: number,
    blockedUntil: (failures: number) => number,
  ): Promise<ThrottleState> {
    return this.db.transaction(async (client) => {
      const { rows } = await client.query<{ failures: number }>(
        `INSERT INTO auth_throttle AS t (scope, user_name, address, failures, last_failure_at, blocked_until)
         VALUES ($1, $2, $3, 1, $4, 0)
         ON CONFLICT (scope, user_name, address) DO UPDATE SET
           failures = CASE WHEN t.last_failure_at >= $5 THEN t.failures + 1 ELSE 1 END,
           last_failure_at = $4
         RETURNING failures`,
        [key.scope, key.userName, key.address, at, forgetBefore],
      );
      const failures = rows[0]?.failures ?? 1;
      const until = blockedUntil(failures);
      await client.query(
        'UPDATE auth_throttle SET blocked_until = $4 WHERE scope = $1 AND user_name = $2 AND address = $3',
        [key.scope, key.userName, key.address, until],
      );
      return { ...key, failures, lastFailureAt: at, blockedUntil: until };
    });
  }

  async reset(keys: readonly ThrottleKey[]): Promise<void> {
    if (keys.length === 0) return;
    await this.db.query(
      `DELETE FROM auth_throttle t USING unnest($1::text[], $2::text[], $3::text[]) AS k (scope, user_name, address)
       WHERE t.scope = k.scope AND t.user_name = k.user_name AND t.address = k.address`,
      [keys.map((k) => k.scope), keys.map((k) => k.userName), keys.map((k) => k.address)],
    );
  }

  async resetUser(userName: string): Promise<void> {
    await this.db.query("DELETE FROM auth_throttle WHERE user_name = $1 AND scope IN ('user', 'pair')", [
      userName,
    ]);
  }

  async forUser(userName: string): Promise<ThrottleState[]> {
    const { rows } = await this.db.query<ThrottleRow>(
      `SELECT * FROM auth_throttle WHERE user_name = $1 AND scope IN ('user', 'pair')
       ORDER BY scope COLLATE "C", address COLLATE "C"`,
      [userName],
    );
    return rows.map(toState);
  }

  async prune(before: number, now: number): Promise<number> {
    const result = await this.db.query(
      'DELETE FROM auth_throttle WHERE last_failure_at < $1 AND blocked_until <= $2',
      [before, now],
    );
    return result.rowCount ?? 0;
  }

  async recordSuccess(
    userName: string,
    address: string,
    at: number,
    forgetBefore: number,
    keep: number,
  ): Promise<void> {
    await this.db.transaction(async (client) => {
      await client.query(
        `INSERT INTO auth_known_addresses AS k (user_name, address, last_success_at)
         SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM api_users WHERE name = $1)
         ON CONFLICT (user_name, address) DO UPDATE SET
           last_success_at = GREATEST(k.last_success_at, excluded.last_success_at)`,
        [userName, address, at],
      );
      await client.query(
        `DELETE FROM auth_known_addresses WHERE user_name = $1 AND (last_success_at < $2 OR address IN (
           SELECT address FROM auth_known_addresses WHERE user_name = $1
           ORDER BY last_success_at DESC, address COLLATE "C" OFFSET $3))`,
        [userName, forgetBefore, keep],
      );
    });
  }

  async lastSuccess(userName: string, address: string): Promise<number | undefined> {
    const { rows } = await this.db.query<{ last_success_at: number }>(
      'SELECT last_success_at FROM auth_known_addresses WHERE user_name = $1 AND address = $2',
      [userName, address],
    );
    return rows[0]?.last_success_at;
  }

  async knownAddresses(userName: string): Promise<KnownAddress[]> {
    const { rows } = await this.db.query<{ address: string; last_success_at: number }>(
      `SELECT address, last_success_at FROM auth_known_addresses WHERE user_name = $1
       ORDER BY last_success_at DESC, address COLLATE "C"`,
      [userName],
    );
    return rows.map((row) => ({ address: row.address, lastSuccessAt: row.last_success_at }));
  }
}
