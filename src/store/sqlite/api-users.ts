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
import type { SqliteDatabase } from './connection.js';

/** Schema of API users and failed-login counters. Times are integer milliseconds since the epoch. */
export const API_USERS_MIGRATION: Migration = {
  id: 'auth-001-api-users',
  sql: `
    CREATE TABLE api_users (
      name TEXT PRIMARY KEY,
      password_hash TEXT NOT NULL,
      ranges TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      last_login_at INTEGER
    );
    -- One row: bumped on every credential change so servers notice CLI changes at once.
    CREATE TABLE api_user_credentials_version (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL
    );
    INSERT INTO api_user_credentials_version (id, version) VALUES (1, 0);
    CREATE TABLE auth_throttle (
      scope TEXT NOT NULL CHECK (scope IN ('user', 'pair', 'address')),
      user_name TEXT NOT NULL,
      address TEXT NOT NULL,
      failures INTEGER NOT NULL,
      last_failure_at INTEGER NOT NULL,
      blocked_until INTEGER NOT NULL,
      PRIMARY KEY (scope, user_name, address)
    );
    CREATE INDEX auth_throttle_user ON auth_throttle (user_name);
  `,
};

/**
 * Known addresses: where each API user last logged in successfully (throttle subjects: IPv4, or
 * the IPv6 /64). Such a (user, address) pair is judged by its own counter only (docs/auth.md).
 */
export const KNOWN_ADDRESSES_MIGRATION: Migration = {
  id: 'auth-002-known-addresses',
  sql: `
    CREATE TABLE auth_known_addresses (
      user_name TEXT NOT NULL,
      address TEXT NOT NULL,
      last_success_at INTEGER NOT NULL,
      PRIMARY KEY (user_name, address)
    );
  `,
};

/**
 * API users removed, by name: `store copy` does not write back one the target removed after the
 * source's copy of it was created (docs/cli.md). Creating a user of the name again clears its row.
 */
export const API_USER_REMOVALS_MIGRATION: Migration = {
  id: 'auth-003-api-user-removals',
  sql: `
    CREATE TABLE api_user_removals (
      name TEXT PRIMARY KEY,
      removed_at INTEGER NOT NULL
    );
  `,
};

interface ApiUserRow {
  name: string;
  password_hash: string;
  ranges: string;
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

function toRecord(row: ApiUserRow): ApiUserRecord {
  return {
    name: row.name,
    passwordHash: row.password_hash,
    ranges: JSON.parse(row.ranges) as string[],
    createdAt: row.created_at,
    lastLoginAt: row.last_login_at,
  };
}

function toState(row: ThrottleRow): ThrottleState {
  return {
    scope: row.scope,
    userName: row.user_name,
    address: row.address,
    failures: row.failures,
    lastFailureAt: row.last_failure_at,
    blockedUntil: row.blocked_until,
  };
}

/** API users in SQLite. `credentialsVersion` costs one `PRAGMA data_version` unless something changed. */
export class SqliteApiUserRepository implements ApiUserRepository {
  private readonly statements;
  /** `PRAGMA data_version` at the last read: it changes when another connection commits. */
  private seenDataVersion = -1;
  private version = 0;

  constructor(private readonly db: SqliteDatabase) {
    this.statements = {
      get: db.prepare<[string], ApiUserRow>('SELECT * FROM api_users WHERE name = ?'),
      list: db.prepare<[], ApiUserRow>('SELECT * FROM api_users ORDER BY name'),
      insert: db.prepare(
        `INSERT INTO api_users (name, password_hash, ranges, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (name) DO NOTHING`,
      ),
      delete: db.prepare('DELETE FROM api_users WHERE name = ?'),
      deleteThrottle: db.prepare(
        "DELETE FROM auth_throttle WHERE user_name = ? AND scope IN ('user', 'pair')",
      ),
      deleteKnown: db.prepare('DELETE FROM auth_known_addresses WHERE user_name = ?'),
      recordRemoval: db.prepare(
        `INSERT INTO api_user_removals (name, removed_at) VALUES (?, ?)
         ON CONFLICT (name) DO UPDATE SET removed_at = excluded.removed_at`,
      ),
      clearRemoval: db.prepare('DELETE FROM api_user_removals WHERE name = ?'),
      copyRemoval: db.prepare(
        `INSERT INTO api_user_removals (name, removed_at)
         SELECT @name, @at WHERE NOT EXISTS (SELECT 1 FROM api_users WHERE name = @name)
         ON CONFLICT (name) DO UPDATE SET removed_at = max(removed_at, excluded.removed_at)`,
      ),
      removals: db.prepare<[], { name: string; removed_at: number }>(
        'SELECT name, removed_at FROM api_user_removals',
      ),
      setHash: db.prepare('UPDATE api_users SET password_hash = ? WHERE name = ?'),
      setRanges: db.prepare('UPDATE api_users SET ranges = ? WHERE name = ?'),
      login: db.prepare(
        'UPDATE api_users SET last_login_at = ? WHERE name = ? AND (last_login_at IS NULL OR last_login_at < ?)',
      ),
      bump: db.prepare('UPDATE api_user_credentials_version SET version = version + 1 WHERE id = 1'),
      version: db
        .prepare<[], number>('SELECT version FROM api_user_credentials_version WHERE id = 1')
        .pluck(),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
    };
  }

  async get(name: string): Promise<ApiUserRecord | undefined> {
    const row = this.statements.get.get(name);
    return row ? toRecord(row) : undefined;
  }

  async list(): Promise<ApiUserRecord[]> {
    return this.statements.list.all().map(toRecord);
  }

  async create(user: Omit<ApiUserRecord, 'lastLoginAt'>): Promise<boolean> {
    return this.change(() => {
      const created =
        this.statements.insert.run(user.name, user.passwordHash, JSON.stringify(user.ranges), user.createdAt)
          .changes === 1;
      if (created) this.statements.clearRemoval.run(user.name);
      return created;
    });
  }

  async remove(name: string, at: number): Promise<boolean> {
    return this.change(() => {
      const removed = this.statements.delete.run(name).changes === 1;
      if (removed) {
        this.statements.deleteThrottle.run(name);
        this.statements.deleteKnown.run(name);
        this.statements.recordRemoval.run(name, at);
      }
      return removed;
    });
  }

  async removals(): Promise<Map<string, number>> {
    return new Map(this.statements.removals.all().map((row) => [row.name, row.removed_at]));
  }

  async recordRemovals(removals: ReadonlyMap<string, number>): Promise<void> {
    this.db.transaction(() => {
      for (const [name, at] of removals) this.statements.copyRemoval.run({ name, at });
    })();
  }

  async setPasswordHash(name: string, passwordHash: string): Promise<boolean> {
    return this.change(() => this.statements.setHash.run(passwordHash, name).changes === 1);
  }

  async setRanges(name: string, ranges: string[]): Promise<boolean> {
    return this.change(() => this.statements.setRanges.run(JSON.stringify(ranges), name).changes === 1);
  }

  async recordLogin(name: string, at: number): Promise<void> {
    this.statements.login.run(at, name, at);
  }

  async credentialsVersion(): Promise<number> {
    const dataVersion = this.statements.dataVersion.get() ?? 0;
    if (dataVersion !== this.seenDataVersion) {
      // Noted as seen only once the version is read: a read that fails is made again next time.
      this.version = this.statements.version.get() ?? 0;
      this.seenDataVersion = dataVersion;
    }
    return this.version;
  }

  /**
   * Runs a write in a transaction and bumps the credentials version when it changed something.
   * The new version is read in the same transaction (our own commits do not move our
   * data_version): nothing after the commit can fail and have the write tried again.
   */
  private change(write: () => boolean): boolean {
    const { changed, version } = this.db
      .transaction(() => {
        const done = write();
        if (!done) return { changed: false, version: undefined };
        this.statements.bump.run();
        return { changed: true, version: this.statements.version.get() ?? 0 };
      })
      .immediate();
    if (version !== undefined) this.version = version;
    return changed;
  }
}

/** Failed-login counters in SQLite; each failure is counted in one IMMEDIATE transaction. */
export class SqliteLoginThrottleRepository implements LoginThrottleRepository {
  private readonly statements;

  constructor(private readonly db: SqliteDatabase) {
    this.statements = {
      get: db.prepare<[string, string, string], ThrottleRow>(
        'SELECT * FROM auth_throttle WHERE scope = ? AND user_name = ? AND address = ?',
      ),
      upsert: db.prepare(
        `INSERT INTO auth_throttle (scope, user_name, address, failures, last_failure_at, blocked_until)
         VALUES (@scope, @user_name, @address, @failures, @last_failure_at, @blocked_until)
         ON CONFLICT (scope, user_name, address) DO UPDATE SET
           failures = excluded.failures,
           last_failure_at = excluded.last_failure_at,
           blocked_until = excluded.blocked_until`,
      ),
      delete: db.prepare('DELETE FROM auth_throttle WHERE scope = ? AND user_name = ? AND address = ?'),
      deleteUser: db.prepare("DELETE FROM auth_throttle WHERE user_name = ? AND scope IN ('user', 'pair')"),
      forUser: db.prepare<[string], ThrottleRow>(
        "SELECT * FROM auth_throttle WHERE user_name = ? AND scope IN ('user', 'pair') ORDER BY scope, address",
      ),
      prune: db.prepare('DELETE FROM auth_throttle WHERE last_failure_at < ? AND blocked_until <= ?'),
      upsertKnown: db.prepare(
        `INSERT INTO auth_known_addresses (user_name, address, last_success_at)
         SELECT @user, @address, @at WHERE EXISTS (SELECT 1 FROM api_users WHERE name = @user)
         ON CONFLICT (user_name, address) DO UPDATE SET
           last_success_at = max(last_success_at, excluded.last_success_at)`,
      ),
      trimKnown: db.prepare(
        `DELETE FROM auth_known_addresses WHERE user_name = @user AND (last_success_at < @before OR address IN (
           SELECT address FROM auth_known_addresses WHERE user_name = @user
           ORDER BY last_success_at DESC, address LIMIT -1 OFFSET @keep))`,
      ),
      knownAddresses: db.prepare<[string], { address: string; last_success_at: number }>(
        `SELECT address, last_success_at FROM auth_known_addresses WHERE user_name = ?
         ORDER BY last_success_at DESC, address`,
      ),
      lastSuccess: db
        .prepare<[string, string], number>(
          'SELECT last_success_at FROM auth_known_addresses WHERE user_name = ? AND address = ?',
        )
        .pluck(),
    };
  }

  async get(keys: readonly ThrottleKey[]): Promise<ThrottleState[]> {
    const found: ThrottleState[] = [];
    for (const key of keys) {
      const row = this.statements.get.get(key.scope, key.userName, key.address);
      if (row) found.push(toState(row));
    }
    return found;
  }

  async recordFailure(
    key: ThrottleKey,
    at: number,
    forgetBefore: number,
    blockedUntil: (failures: number) => number,
  ): Promise<ThrottleState> {
    return this.db
      .transaction(() => {
        const row = this.statements.get.get(key.scope, key.userName, key.address);
        const failures = row && row.last_failure_at >= forgetBefore ? row.failures + 1 : 1;
        const next: ThrottleRow = {
          scope: key.scope,
          user_name: key.userName,
          address: key.address,
          failures,
          last_failure_at: at,
          blocked_until: blockedUntil(failures),
        };
        this.statements.upsert.run(next);
        return toState(next);
      })
      .immediate();
  }

  async reset(keys: readonly ThrottleKey[]): Promise<void> {
    this.db.transaction(() => {
      for (const key of keys) this.statements.delete.run(key.scope, key.userName, key.address);
    })();
  }

  async resetUser(userName: string): Promise<void> {
    this.statements.deleteUser.run(userName);
  }

  async forUser(userName: string): Promise<ThrottleState[]> {
    return this.statements.forUser.all(userName).map(toState);
  }

  async prune(before: number, now: number): Promise<number> {
    return this.statements.prune.run(before, now).changes;
  }

  async recordSuccess(
    userName: string,
    address: string,
    at: number,
    forgetBefore: number,
    keep: number,
  ): Promise<void> {
    this.db.transaction(() => {
      this.statements.upsertKnown.run({ user: userName, address, at });
      this.statements.trimKnown.run({ user: userName, before: forgetBefore, keep });
    })();
  }

  async lastSuccess(userName: string, address: string): Promise<number | undefined> {
    return this.statements.lastSuccess.get(userName, address);
  }

  async knownAddresses(userName: string): Promise<KnownAddress[]> {
    return this.statements.knownAddresses
      .all(userName)
      .map((row) => ({ address: row.address, lastSuccessAt: row.last_success_at }));
  }
}
