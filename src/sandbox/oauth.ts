import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { type ClientMetadata, type Configuration, errors } from 'oidc-provider';
import type { Logger } from '../log/logger.js';
import { createOAuthStore } from './oauth-store.js';

/** The scope every read needs. */
export const READ_SCOPE = 'iserv:idm:api-read';
/** The scope every write needs. */
export const WRITE_SCOPE = 'iserv:idm:api-write';

/** Where oidc-provider is mounted on the sandbox's HTTP server (the issuer's path). */
export const AUTH_PREFIX = '/iserv/auth';
/** The token endpoint below the issuer, as on the real server (`/iserv/auth/public/token`). */
export const TOKEN_ROUTE = '/public/token';

export type ClientAuthMethod = 'client_secret_post' | 'client_secret_basic';

/** One OAuth client the sandbox's authorization server knows. */
export interface SandboxClientConfig {
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** Registered method; oidc-provider accepts both secret methods for a secret client either way. */
  authMethod?: ClientAuthMethod;
}

/** The fixed, documented default clients. */
export const DEFAULT_CLIENTS: readonly SandboxClientConfig[] = [
  {
    clientId: 'idm-compat',
    clientSecret: 'sandbox-secret',
    scopes: [READ_SCOPE, WRITE_SCOPE],
    authMethod: 'client_secret_post',
  },
  {
    clientId: 'idm-compat-readonly',
    clientSecret: 'sandbox-readonly-secret',
    scopes: [READ_SCOPE],
    authMethod: 'client_secret_post',
  },
];

export interface OAuthServerOptions {
  /** `${url}/iserv/auth` */
  issuer: string;
  /** The API's resource indicator and the `aud` of every access token. */
  audience: string;
  clients: readonly SandboxClientConfig[];
  tokenTtlSeconds: number;
  logger: Logger;
}

/** The mounted authorization server and what the API needs to verify its tokens. */
export interface OAuthServer {
  provider: Provider;
  issuer: string;
  audience: string;
  /** The public signing keys (the same set the provider serves at its `jwks_uri`). */
  publicJwks: { keys: JWK[] };
  /** Handles a request whose URL starts with AUTH_PREFIX. */
  handle(req: IncomingMessage, res: ServerResponse): void;
}

const SIGNING_ALG = 'ES256';

/** Generates a fresh signing key pair, so oidc-provider never falls back to its development keys. */
async function signingKeys(): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const kid = randomBytes(8).toString('hex');
  const meta = { kid, alg: SIGNING_ALG, use: 'sig' };
  return {
    privateJwk: { ...(await exportJWK(privateKey)), ...meta },
    publicJwk: { ...(await exportJWK(publicKey)), ...meta },
  };
}

function clientMetadata(client: SandboxClientConfig): ClientMetadata {
  return {
    client_id: client.clientId,
    client_secret: client.clientSecret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: client.scopes.join(' '),
    token_endpoint_auth_method: client.authMethod ?? 'client_secret_post',
  };
}

/**
 * Builds the oidc-provider configuration. Kept as one structured function so further grants
 * (authorization code + PKCE for SSO) can be added beside client credentials.
 */
export function providerConfiguration(
  options: Omit<OAuthServerOptions, 'issuer' | 'logger'>,
  privateJwk: JWK,
): Configuration {
  const apiScopes = [READ_SCOPE, WRITE_SCOPE];
  const allScopes = new Set<string>([...apiScopes, ...options.clients.flatMap((c) => c.scopes)]);
  const ttl = options.tokenTtlSeconds;
  return {
    adapter: createOAuthStore(),
    clients: options.clients.map(clientMetadata),
    jwks: { keys: [privateJwk] },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    clientDefaults: { id_token_signed_response_alg: SIGNING_ALG },
    // Listing the API scopes here makes oidc-provider refuse them (invalid_scope) for a client
    // whose registered `scope` does not include them.
    scopes: ['openid', ...allScopes],
    claims: { openid: ['sub'] },
    routes: { token: TOKEN_ROUTE, jwks: '/public/jwks' },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    clientBasedCORS: () => false,
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    renderError: (ctx, out) => {
      ctx.type = 'application/json';
      ctx.body = out;
    },
    ttl: {
      AccessToken: ttl,
      ClientCredentials: ttl,
      AuthorizationCode: 60,
      IdToken: ttl,
      RefreshToken: 14 * 24 * 3600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client) => {
          // RFC 6749 3.3 lets the server apply a default when the client sends no scope: grant
          // everything the client is registered for, so `curl` users get a working token.
          const params = ctx.oidc.params;
          if (params && params.grant_type === 'client_credentials' && !params.scope && client.scope) {
            params.scope = client.scope;
          }
          return options.audience;
        },
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator) => {
          if (resourceIndicator !== options.audience) {
            throw new errors.InvalidTarget('unknown resource indicator');
          }
          return {
            scope: [...allScopes].join(' '),
            audience: options.audience,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: SIGNING_ALG } },
          };
        },
      },
    },
  };
}

/** Creates the authorization server: oidc-provider with fresh keys, mounted under AUTH_PREFIX. */
export async function createOAuthServer(options: OAuthServerOptions): Promise<OAuthServer> {
  const { privateJwk, publicJwk } = await signingKeys();
  const provider = new Provider(options.issuer, providerConfiguration(options, privateJwk));
  const log = options.logger.child({ component: 'sandbox-oauth' });
  provider.on('server_error', (_ctx, err) => log.error({ err }, 'authorization server error'));
  provider.on('grant.error', (_ctx, err) => log.debug({ error: err.message }, 'token request refused'));
  const callback = provider.callback();
  return {
    provider,
    issuer: options.issuer,
    audience: options.audience,
    publicJwks: { keys: [publicJwk] },
    handle(req, res) {
      // Mounting as the oidc-provider docs show for a prefix: it derives its mount path from
      // `originalUrl` minus `url`, so the URLs it advertises keep the `/iserv/auth` prefix.
      const original = req.url ?? '/';
      const mounted = req as IncomingMessage & { originalUrl?: string };
      mounted.originalUrl = original;
      req.url = original.slice(AUTH_PREFIX.length) || '/';
      if (!req.url.startsWith('/')) req.url = `/${req.url}`;
      void callback(req, res);
    },
  };
}
