/**
 * SSO tokens (SPEC 3) and the OIDC logins started with them. Tokens and OIDC `state` values are
 * stored only as SHA-256 hashes; every consume is atomic, so a token or a state works once.
 * Storage-neutral; implementations: SQLite (`sqlite/sso-tokens.ts`), PostgreSQL
 * (`postgres/sso-tokens.ts`). Times are milliseconds since the epoch.
 */

/** What an SSO token was issued for. */
export interface SsoTokenRecord {
  /** The user's legacy username, as the successor spells it. */
  username: string;
  /** The user's successor UUID (dashed). */
  userUuid: string;
  /** The API user that asked for the token. */
  apiUser: string;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
}

/** Outcome of consuming an SSO token: only `consumed` may go on. */
export type SsoTokenConsumeResult =
  | { status: 'consumed'; token: SsoTokenRecord }
  | { status: 'unknown' }
  | { status: 'expired'; token: SsoTokenRecord }
  | { status: 'used'; token: SsoTokenRecord };

/** An OIDC login the proxy started for a consumed SSO token (the relying party's server-side state). */
export interface SsoLoginRecord {
  /** Hash of the SSO token the login belongs to. */
  tokenHash: string;
  nonce: string;
  codeVerifier: string;
  /** Hash of the value of the browser-binding cookie set when the login started. */
  browserHash: string;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
}

/** Outcome of finishing an OIDC login: only `finished` may go on; it carries the token's user. */
export type SsoLoginFinishResult =
  | { status: 'finished'; login: SsoLoginRecord; token: SsoTokenRecord }
  | { status: 'unknown' }
  | { status: 'expired' }
  | { status: 'used' }
  /** The login is open, but this browser did not start it; `tokenHash` names its token for the log. */
  | { status: 'other-browser'; tokenHash: string };

/**
 * The values of a new `sso_logins` row in the order both stores insert them: state_hash,
 * token_hash, nonce, code_verifier, browser_hash, created_at, expires_at.
 */
export function loginRowValues(
  stateHash: string,
  login: Omit<SsoLoginRecord, 'consumedAt'>,
): [string, string, string, string, string, number, number] {
  return [
    stateHash,
    login.tokenHash,
    login.nonce,
    login.codeVerifier,
    login.browserHash,
    login.createdAt,
    login.expiresAt,
  ];
}

/** The SSO token store. */
export interface SsoTokenRepository {
  /** Records a new token by its hash. */
  issue(tokenHash: string, token: Omit<SsoTokenRecord, 'consumedAt'>): Promise<void>;
  /** Marks the token used if it is known, unused and unexpired at `now` — atomically, so it works once. */
  consume(tokenHash: string, now: number): Promise<SsoTokenConsumeResult>;
  /** Records an OIDC login by the hash of its `state`, bound to an (already consumed) token. */
  beginLogin(stateHash: string, login: Omit<SsoLoginRecord, 'consumedAt'>): Promise<void>;
  /**
   * Marks the login finished if it is known, unfinished, unexpired at `now` and started in the
   * browser whose binding hashes to `browserHash` — atomically, so a callback works once.
   */
  finishLogin(stateHash: string, browserHash: string, now: number): Promise<SsoLoginFinishResult>;
  /** Deletes tokens (and their logins) that expired before `before`; returns how many tokens went. */
  purge(before: number): Promise<number>;
}
