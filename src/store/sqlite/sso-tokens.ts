import {
  loginRowValues,
  type SsoLoginFinishResult,
  type SsoLoginRecord,
  type SsoTokenConsumeResult,
  type SsoTokenRecord,
  type SsoTokenRepository,
} from '../sso-tokens.js';
import type { Migration } from '../types.js';
import type { SqliteDatabase, SqliteStatement } from './connection.js';

/** Schema of SSO tokens and OIDC logins: hashes only, never a token or a state in plain text. */
export const SSO_TOKENS_MIGRATION: Migration = {
  id: 'sso-001-tokens',
  sql: `
    CREATE TABLE sso_tokens (
      token_hash TEXT PRIMARY KEY,
      username TEXT NOT NULL,
      user_uuid TEXT NOT NULL,
      api_user TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      consumed_at INTEGER
    ) WITHOUT ROWID;
    CREATE INDEX sso_tokens_expires ON sso_tokens (expires_at);
    CREATE TABLE sso_logins (
      state_hash TEXT PRIMARY KEY,
      token_hash TEXT NOT NULL REFERENCES sso_tokens (token_hash) ON DELETE CASCADE,
      nonce TEXT NOT NULL,
      code_verifier TEXT NOT NULL,
      browser_hash TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      consumed_at INTEGER
    ) WITHOUT ROWID;
    CREATE INDEX sso_logins_token ON sso_logins (token_hash);
  `,
};

interface TokenRow {
  token_hash: string;
  username: string;
  user_uuid: string;
  api_user: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

interface LoginRow {
  state_hash: string;
  token_hash: string;
  nonce: string;
  code_verifier: string;
  browser_hash: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

const toToken = (row: TokenRow): SsoTokenRecord => ({
  username: row.username,
  userUuid: row.user_uuid,
  apiUser: row.api_user,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  consumedAt: row.consumed_at,
});

const toLogin = (row: LoginRow): SsoLoginRecord => ({
  tokenHash: row.token_hash,
  nonce: row.nonce,
  codeVerifier: row.code_verifier,
  browserHash: row.browser_hash,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  consumedAt: row.consumed_at,
});

/**
 * SSO tokens in SQLite. A consume is one conditional `UPDATE … RETURNING`, so two concurrent
 * uses of a token (even from two processes on the same file) cannot both succeed. The statements
 * and transactions are prepared once, with the repository (the schema is in place by then): an
 * SSO call used to prepare its INSERT, and the purge's, anew each time.
 */
export class SqliteSsoTokenRepository implements SsoTokenRepository {
  readonly #insertToken: SqliteStatement;
  readonly #insertLogin: SqliteStatement;
  readonly #consume: (tokenHash: string, now: number) => SsoTokenConsumeResult;
  readonly #finishLogin: (stateHash: string, browserHash: string, now: number) => SsoLoginFinishResult;
  readonly #purge: (before: number) => number;

  constructor(db: SqliteDatabase) {
    this.#insertToken = db.prepare(
      `INSERT INTO sso_tokens (token_hash, username, user_uuid, api_user, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.#insertLogin = db.prepare(
      `INSERT INTO sso_logins
         (state_hash, token_hash, nonce, code_verifier, browser_hash, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    const tokenByHash = db.prepare('SELECT * FROM sso_tokens WHERE token_hash = ?');
    const takeToken = db.prepare(
      `UPDATE sso_tokens SET consumed_at = ?
       WHERE token_hash = ? AND consumed_at IS NULL AND expires_at > ?
       RETURNING *`,
    );
    this.#consume = db.transaction((tokenHash: string, now: number): SsoTokenConsumeResult => {
      const taken = takeToken.get(now, tokenHash, now) as TokenRow | undefined;
      if (taken) return { status: 'consumed', token: toToken(taken) };
      const row = tokenByHash.get(tokenHash) as TokenRow | undefined;
      if (!row) return { status: 'unknown' };
      return { status: row.consumed_at === null ? 'expired' : 'used', token: toToken(row) };
    });
    const takeLogin = db.prepare(
      `UPDATE sso_logins SET consumed_at = ?
       WHERE state_hash = ? AND browser_hash = ? AND consumed_at IS NULL AND expires_at > ?
       RETURNING *`,
    );
    const loginByHash = db.prepare('SELECT * FROM sso_logins WHERE state_hash = ?');
    this.#finishLogin = db.transaction(
      (stateHash: string, browserHash: string, now: number): SsoLoginFinishResult => {
        const taken = takeLogin.get(now, stateHash, browserHash, now) as LoginRow | undefined;
        if (taken) {
          const token = tokenByHash.get(taken.token_hash) as TokenRow | undefined;
          // The foreign key keeps the token while its login exists; purge removes both together.
          if (token) return { status: 'finished', login: toLogin(taken), token: toToken(token) };
          return { status: 'unknown' };
        }
        const row = loginByHash.get(stateHash) as LoginRow | undefined;
        if (!row) return { status: 'unknown' };
        if (row.consumed_at !== null) return { status: 'used' };
        if (row.expires_at <= now) return { status: 'expired' };
        return { status: 'other-browser', tokenHash: row.token_hash };
      },
    );
    const purgeLogins = db.prepare('DELETE FROM sso_logins WHERE expires_at < ?');
    const purgeTokens = db.prepare(
      `DELETE FROM sso_tokens WHERE expires_at < ?
       AND NOT EXISTS (SELECT 1 FROM sso_logins l WHERE l.token_hash = sso_tokens.token_hash)`,
    );
    this.#purge = db.transaction((before: number): number => {
      purgeLogins.run(before);
      return purgeTokens.run(before).changes;
    });
  }

  async issue(tokenHash: string, token: Omit<SsoTokenRecord, 'consumedAt'>): Promise<void> {
    this.#insertToken.run(
      tokenHash,
      token.username,
      token.userUuid,
      token.apiUser,
      token.createdAt,
      token.expiresAt,
    );
  }

  async consume(tokenHash: string, now: number): Promise<SsoTokenConsumeResult> {
    return this.#consume(tokenHash, now);
  }

  async beginLogin(stateHash: string, login: Omit<SsoLoginRecord, 'consumedAt'>): Promise<void> {
    this.#insertLogin.run(...loginRowValues(stateHash, login));
  }

  async finishLogin(stateHash: string, browserHash: string, now: number): Promise<SsoLoginFinishResult> {
    return this.#finishLogin(stateHash, browserHash, now);
  }

  async purge(before: number): Promise<number> {
    return this.#purge(before);
  }
}
