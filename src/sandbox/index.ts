import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { SandboxData } from './data.js';
import type { FaultSettings } from './faults.js';
import type { SandboxFixture } from './fixture.js';
import type { ClientAuthMethod, InteractiveLogin, SandboxClientConfig } from './oauth.js';

export type { PasswordState, ResourceKind, SandboxData, UserStatus } from './data.js';
export type { FaultRule, FaultSettings } from './faults.js';
export { type SandboxFixture, sandboxUuid } from './fixture.js';
export {
  CLIENT_AUTH_METHODS,
  type ClientAuthMethod,
  type InteractiveLogin,
  READ_SCOPE,
  type SandboxClientConfig,
  WRITE_SCOPE,
} from './oauth.js';
export { API_BASE, iri } from './resources.js';
export { DEMO_ADMIN_PASSWORD, DEMO_PASSWORD } from './seed.js';
export { startSandbox } from './server.js';

/** How to start a sandbox IDM. Every field is optional. */
export interface SandboxOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 (a random free port). */
  port?: number;
  logger?: Logger;
  /** Drives `created`, `deleted` and the retention purge; token lifetimes follow the wall clock (oidc-provider). */
  clock?: Clock;
  /** Load the documented demo data (default true). */
  seed?: boolean;
  /** A JSON fixture file or object, loaded after the seed (or instead of it with `seed: false`). */
  fixture?: string | SandboxFixture;
  /** OAuth clients; default: `idm-compat` (read+write) and `idm-compat-readonly` (read). */
  clients?: SandboxClientConfig[];
  /**
   * Token endpoint authentication methods advertised in discovery and accepted; default both
   * (`client_secret_basic`, `client_secret_post`). A token request using another one gets 401
   * `invalid_client`; a client registering another one is a start-up error.
   */
  clientAuthMethods?: ClientAuthMethod[];
  /** Accepted `X-IServ-Authentication` keys (read+write); default `['sandbox-api-key']`. */
  apiKeys?: string[];
  /** Access token lifetime, default 3600. */
  tokenTtlSeconds?: number;
  /** Default page size, default 30. */
  pageSize?: number;
  /** Largest `itemsPerPage`, default 500 (larger requests are clamped). */
  maxPageSize?: number;
  /** Soft-deleted users and groups are purged this long after deletion; default 30 days. */
  retentionSeconds?: number;
  /** Hydra keys with the `hydra:` prefix (default true) or without (API Platform 4 style). */
  hydraPrefix?: boolean;
  /** Fault switches in effect from the start. */
  faults?: Partial<FaultSettings>;
  /**
   * `auto-approve`: enable the authorization-code + PKCE flow (SSO) for clients with
   * `redirectUris`; the authorization endpoint logs in the user named by `login_hint` (account
   * or UUID) without a form and consents to the requested OIDC scopes.
   */
  interactiveLogin?: InteractiveLogin;
}

/** OAuth client credentials. */
export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** A started sandbox. */
export interface RunningSandbox {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `${url}/iserv/auth`; discovery at `${issuer}/.well-known/openid-configuration`. */
  issuer: string;
  /** `${url}/iserv/idm/api/v1` */
  apiBaseUrl: string;
  /** The token endpoint, `${issuer}/public/token`. */
  tokenEndpoint: string;
  clients: { readWrite: ClientCredentials; readOnly: ClientCredentials };
  apiKey: string;
  faults: { get(): FaultSettings; set(patch: Partial<FaultSettings>): void; reset(): void };
  counters: {
    snapshot(): Record<string, number>;
    get(key: string): number;
    total(): number;
    reset(): void;
  };
  /** Direct in-memory access for tests. */
  data: SandboxData;
  close(): Promise<void>;
}
