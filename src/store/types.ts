import type { ApiUserRepository, LoginThrottleRepository } from './api-users.js';
import type { IdMapRepository } from './id-map.js';
import type { ShadowRepository } from './shadow.js';
import type { SsoTokenRepository } from './sso-tokens.js';
import type { UsageRepository } from './usage.js';

/**
 * The store: everything idm-compat persists (API users, login throttling, ID mapping tables,
 * SSO tokens, the usage inventory). Every method is async so that a networked implementation
 * (PostgreSQL, for several replicas) can stand behind the same interface as SQLite.
 */
export interface Store {
  /** Which implementation this is: one SQLite file, or PostgreSQL shared by several replicas. */
  readonly kind: 'sqlite' | 'postgres';
  /** API users (SPEC 4). */
  readonly apiUsers: ApiUserRepository;
  /** Failed-login counters of the API-user authentication. */
  readonly loginThrottle: LoginThrottleRepository;
  /** ID mapping tables (legacy ID ↔ successor UUID) of the `table` ID strategy. */
  readonly idMap: IdMapRepository;
  /** SSO tokens and the OIDC logins started with them (hashes only). */
  readonly ssoTokens: SsoTokenRepository;
  /** The usage inventory: calls per (API user, legacy operation, outcome class). */
  readonly usage: UsageRepository;
  /** Outcomes of shadow comparisons (migration shadow mode). */
  readonly shadow: ShadowRepository;
  /** Resolves when the store answers a trivial query; used by /readyz. */
  ping(): Promise<void>;
  /** Flushes and closes; the store is unusable afterwards. */
  close(): Promise<void>;
}

/** One schema step. Ids are names, applied once each in list order and recorded in `schema_migrations`. */
export interface Migration {
  id: string;
  sql: string;
}
