import {
  loginRowValues,
  type SsoLoginFinishResult,
  type SsoLoginRecord,
  type SsoTokenConsumeResult,
  type SsoTokenRecord,
  type SsoTokenRepository,
} from '../sso-tokens.js';
import type { Migration } from '../types.js';
import type { PostgresDatabase } from './database.js';

/** Schema of SSO tokens and OIDC logins: hashes only, never a token or a state in plain text. */
export const PG_SSO_TOKENS_MIGRATION: Migration = {
  id: 'sso-001-tokens',
  sql: `
    CREATE TABLE sso_tokens (
      token_hash TEXT PRIMARY KEY,
      username TEXT NOT NULL,
      user_uuid TEXT NOT NULL,
      api_user TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      consumed_at BIGINT
    );
    CREATE INDEX sso_tokens_expires ON sso_tokens (expires_at);
    CREATE TABLE sso_logins (
      state_hash TEXT PRIMARY KEY,
      token_hash TEXT NOT NULL REFERENCES sso_tokens (token_hash) ON DELETE CASCADE,
      nonce TEXT NOT NULL,
      code_verifier TEXT NOT NULL,
      browser_hash TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      consumed_at BIGINT
    );
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
 * SSO tokens in PostgreSQL. A consume is one conditional `UPDATE … RETURNING`: when two replicas
 * consume one token at once, the second waits for the first's row lock, re-checks
 * `consumed_at IS NULL`, and finds it used.
 */
export class PostgresSsoTokenRepository implements SsoTokenRepository {
  constructor(private readonly db: PostgresDatabase) {}

  async issue(tokenHash: string, token: Omit<SsoTokenRecord, 'consumedAt'>): Promise<void> {
    await this.db.query(
      `INSERT INTO sso_tokens (token_hash, username, user_uuid, api_user, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [tokenHash, token.username, token.userUuid, token.apiUser, token.createdAt, token.expiresAt],
    );
  }

  async consume(tokenHash: string, now: number): Promise<SsoTokenConsumeResult> {
    const taken = await this.db.query<TokenRow>(
      `UPDATE sso_tokens SET consumed_at = $1
       WHERE token_hash = $2 AND consumed_at IS NULL AND expires_at > $1
       RETURNING *`,
      [now, tokenHash],
    );
    const consumed = taken.rows[0];
    if (consumed) return { status: 'consumed', token: toToken(consumed) };
    const { rows } = await this.db.query<TokenRow>('SELECT * FROM sso_tokens WHERE token_hash = $1', [
      tokenHash,
    ]);
    const row = rows[0];
    if (!row) return { status: 'unknown' };
    return { status: row.consumed_at === null ? 'expired' : 'used', token: toToken(row) };
  }

  async beginLogin(stateHash: string, login: Omit<SsoLoginRecord, 'consumedAt'>): Promise<void> {
    await this.db.query(
      `INSERT INTO sso_logins
         (state_hash, token_hash, nonce, code_verifier, browser_hash, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      loginRowValues(stateHash, login),
    );
  }

  async finishLogin(stateHash: string, browserHash: string, now: number): Promise<SsoLoginFinishResult> {
    // One statement: the login is taken and its token read in the same snapshot.
    const taken = await this.db.query<LoginRow & { token: TokenRow | null }>(
      `WITH taken AS (
         UPDATE sso_logins SET consumed_at = $1
         WHERE state_hash = $2 AND browser_hash = $3 AND consumed_at IS NULL AND expires_at > $1
         RETURNING *)
       SELECT taken.*, (SELECT to_jsonb(t) FROM sso_tokens t WHERE t.token_hash = taken.token_hash) AS token
       FROM taken`,
      [now, stateHash, browserHash],
    );
    const login = taken.rows[0];
    if (login) {
      // The foreign key keeps the token while its login exists; purge removes both together.
      if (login.token) return { status: 'finished', login: toLogin(login), token: toToken(login.token) };
      return { status: 'unknown' };
    }
    const { rows } = await this.db.query<LoginRow>('SELECT * FROM sso_logins WHERE state_hash = $1', [
      stateHash,
    ]);
    const row = rows[0];
    if (!row) return { status: 'unknown' };
    if (row.consumed_at !== null) return { status: 'used' };
    if (row.expires_at <= now) return { status: 'expired' };
    return { status: 'other-browser', tokenHash: row.token_hash };
  }

  async purge(before: number): Promise<number> {
    return this.db.transaction(async (client) => {
      await client.query('DELETE FROM sso_logins WHERE expires_at < $1', [before]);
      const result = await client.query(
        `DELETE FROM sso_tokens WHERE expires_at < $1
         AND NOT EXISTS (SELECT 1 FROM sso_logins l WHERE l.token_hash = sso_tokens.token_hash)`,
        [before],
      );
      return result.rowCount ?? 0;
    });
  }
}
