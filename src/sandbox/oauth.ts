import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, {
  type AccountClaims,
  type ClientMetadata,
  type Configuration,
  errors,
  type Interaction,
  interactionPolicy,
} from 'oidc-provider';
import type { Logger } from '../lib/logger.js';
import { createOAuthStore } from './oauth-store.js';

/** The scope every read needs. */
export const READ_SCOPE = 'iserv:idm:api-read';
/** The scope every write needs. */
export const WRITE_SCOPE = 'iserv:idm:api-write';

/** Where oidc-provider is mounted on the sandbox's HTTP server (the issuer's path). */
export const AUTH_PREFIX = '/iserv/auth';
/** The token endpoint below the issuer, as on the real server (`/iserv/auth/public/token`). */
export const TOKEN_ROUTE = '/public/token';

/** How a client authenticates at the token endpoint. */
export type ClientAuthMethod = 'client_secret_post' | 'client_secret_basic';

/** The token endpoint authentication methods the sandbox offers by default (both). */
export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post'];

/** One OAuth client the sandbox's authorization server knows. */
export interface SandboxClientConfig {
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /**
   * Registered method (default `client_secret_post`, or the only one advertised); oidc-provider
   * accepts every advertised secret method for a secret client either way.
   */
  authMethod?: ClientAuthMethod;
  /**
   * Redirect URIs for the authorization-code flow (with `interactiveLogin`); such a client also
   * gets the scopes `openid profile email`.
   */
  redirectUris?: string[];
  /**
   * `native` (RFC 8252): an http loopback redirect URI matches on any port, for a relying party
   * whose port is only known once it listens. Default `web` (exact match).
   */
  applicationType?: 'web' | 'native';
}

/** How the interactive (SSO) login treats the `login_hint` of an authorization request. */
export type InteractiveLogin = 'auto-approve';

/** The identity of a sandbox user, as ID tokens and userinfo carry it. */
export interface LoginAccount {
  /** Dashed UUID: the `sub`. */
  id: string;
  account: string;
  firstname: string;
  lastname: string;
  email: string | null;
}

/** Where the interactive login finds users: by id (`sub`) and by `login_hint`. */
export interface LoginAccounts {
  /** The user with this id (`sub`), unless deleted or locked: who may hold a session and get tokens. */
  find(id: string): LoginAccount | undefined;
  /** The user a `login_hint` names (account or UUID), or why nobody may log in with it. */
  byLoginHint(hint: string | undefined): LoginAccount | { error: string };
}

/** The OIDC scopes an SSO client may ask for. */
export const SSO_SCOPES = ['openid', 'profile', 'email'] as const;

/** The fixed, documented default clients. */
export const DEFAULT_CLIENTS: readonly SandboxClientConfig[] = [
  {
    clientId: 'idm-compat',
    clientSecret: 'sandbox-secret',
    scopes: [READ_SCOPE, WRITE_SCOPE],
  },
  {
    clientId: 'idm-compat-readonly',
    clientSecret: 'sandbox-readonly-secret',
    scopes: [READ_SCOPE],
  },
];

export interface OAuthServerOptions {
  /** `${url}/iserv/auth` */
  issuer: string;
  /** The API's resource indicator and the `aud` of every access token. */
  audience: string;
  clients: readonly SandboxClientConfig[];
  /**
   * Token endpoint authentication methods advertised in discovery and accepted (default both);
   * a request using another one is refused with `invalid_client`.
   */
  clientAuthMethods?: readonly ClientAuthMethod[];
  tokenTtlSeconds: number;
  logger: Logger;
  /** Enables the authorization-code + PKCE flow, logging in the `login_hint` user without a form. */
  interactiveLogin?: InteractiveLogin;
  /** Required with `interactiveLogin`. */
  accounts?: LoginAccounts;
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

/** Checks the advertised methods and that every client's registered method is among them. */
function authMethods(options: Pick<OAuthServerOptions, 'clientAuthMethods' | 'clients'>): ClientAuthMethod[] {
  const methods = [...new Set(options.clientAuthMethods ?? CLIENT_AUTH_METHODS)];
  if (methods.length === 0) throw new TypeError('sandbox option clientAuthMethods must not be empty');
  for (const method of methods) {
    if (!CLIENT_AUTH_METHODS.includes(method)) {
      throw new TypeError(
        `sandbox option clientAuthMethods: unknown method ${JSON.stringify(method)} (client_secret_post or client_secret_basic)`,
      );
    }
  }
  for (const client of options.clients) {
    if (client.authMethod !== undefined && !methods.includes(client.authMethod)) {
      throw new TypeError(
        `sandbox client ${client.clientId} registers ${client.authMethod}, which clientAuthMethods (${methods.join(', ')}) leaves out`,
      );
    }
  }
  return methods;
}

function clientMetadata(
  client: SandboxClientConfig,
  interactive: boolean,
  methods: readonly ClientAuthMethod[],
): ClientMetadata {
  const sso = interactive && (client.redirectUris?.length ?? 0) > 0;
  const fallback: ClientAuthMethod = methods.includes('client_secret_post')
    ? 'client_secret_post'
    : 'client_secret_basic';
  return {
    client_id: client.clientId,
    client_secret: client.clientSecret,
    grant_types: sso ? ['client_credentials', 'authorization_code'] : ['client_credentials'],
    response_types: sso ? ['code'] : [],
    redirect_uris: sso ? [...(client.redirectUris ?? [])] : [],
    scope: [...new Set([...client.scopes, ...(sso ? SSO_SCOPES : [])])].join(' '),
    token_endpoint_auth_method: client.authMethod ?? fallback,
    ...(client.applicationType === undefined ? {} : { application_type: client.applicationType }),
  };
}

function accountClaims(account: LoginAccount): AccountClaims {
  return {
    sub: account.id,
    preferred_username: account.account,
    name: `${account.firstname} ${account.lastname}`,
    given_name: account.firstname,
    family_name: account.lastname,
    ...(account.email ? { email: account.email } : {}),
  };
}

/**
 * oidc-provider's default prompts, its login prompt with one more check: the browser's session
 * at the provider answers an authorization request only when it is the `login_hint` user's (as
 * `byLoginHint` resolves it) and that user may still log in (`findAccount` refuses deleted and
 * locked users). Otherwise the login interaction runs again, which logs in the hint or refuses
 * it: one SSO must not sign the next one in as its user, nor keep a user locked since.
 */
function loginPolicy(accounts: LoginAccounts | undefined): interactionPolicy.DefaultPolicy {
  const { Check } = interactionPolicy;
  const policy = interactionPolicy.base();
  policy.get('login')?.checks.add(
    new Check('session_not_login_hint', 'the session is not of the login_hint user', (ctx) => {
      const { oidc } = ctx;
      const sessionAccount = oidc.session?.accountId;
      // No session: the check no_session asks for the login. A login this very request made
      // (the resumed interaction) stands; asking again would loop.
      if (sessionAccount === undefined || oidc.result?.login) return Check.NO_NEED_TO_PROMPT;
      if (oidc.account === undefined) return Check.REQUEST_PROMPT;
      const hint = oidc.params?.login_hint;
      const found = accounts?.byLoginHint(typeof hint === 'string' ? hint : undefined);
      return found === undefined || 'error' in found || found.id !== sessionAccount
        ? Check.REQUEST_PROMPT
        : Check.NO_NEED_TO_PROMPT;
    }),
  );
  return policy;
}

/**
 * The parts of the configuration for the authorization-code + PKCE flow with automatic
 * approval: the interaction URL (served by `handle`), the login policy above, accounts from the
 * sandbox data (deleted and locked users are not found), consent granted for the requested OIDC
 * scopes, PKCE required.
 */
function interactiveConfiguration(accounts: LoginAccounts | undefined): Partial<Configuration> {
  return {
    interactions: {
      url: (_ctx, interaction) => `${AUTH_PREFIX}/interaction/${interaction.uid}`,
      policy: loginPolicy(accounts),
    },
    pkce: { required: () => true },
    // Claims of the granted scopes go into the ID token too, so an RP needs no userinfo call.
    conformIdTokenClaims: false,
    findAccount: (_ctx, sub) => {
      const account = accounts?.find(sub);
      return account ? { accountId: account.id, claims: () => accountClaims(account) } : undefined;
    },
    loadExistingGrant: async (ctx) => {
      const { oidc } = ctx;
      const existing = oidc.result?.consent?.grantId ?? oidc.session?.grantIdFor(oidc.client?.clientId ?? '');
      if (existing) return oidc.provider.Grant.find(existing);
      if (!oidc.session?.accountId || !oidc.client) return undefined;
      // Auto-approval: every requested OIDC scope is consented to without asking.
      const grant = new oidc.provider.Grant({
        clientId: oidc.client.clientId,
        accountId: oidc.session.accountId,
      });
      grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
      await grant.save();
      return grant;
    },
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
  const methods = authMethods(options);
  return {
    adapter: createOAuthStore(),
    clients: options.clients.map((c) => clientMetadata(c, options.interactiveLogin !== undefined, methods)),
    jwks: { keys: [privateJwk] },
    // Advertised in discovery (token_endpoint_auth_methods_supported); a method left out is refused.
    clientAuthMethods: methods,
    clientDefaults: { id_token_signed_response_alg: SIGNING_ALG },
    // Listing the API scopes here makes oidc-provider refuse them (invalid_scope) for a client
    // whose registered `scope` does not include them.
    scopes: ['openid', 'profile', 'email', ...allScopes],
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', 'given_name', 'family_name'],
      email: ['email'],
    },
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
          const params = ctx.oidc.params;
          // Authorization-code (SSO) tokens are for the OP itself (userinfo), not for the API.
          if (params?.grant_type !== 'client_credentials') return undefined;
          // RFC 6749 3.3 lets the server apply a default when the client sends no scope: grant
          // everything the client is registered for, so `curl` users get a working token.
          if (!params.scope && client.scope) {
            params.scope = client.scope
              .split(' ')
              .filter((scope) => !(SSO_SCOPES as readonly string[]).includes(scope))
              .join(' ');
          }
          return options.audience;
        },
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator) => {
          if (resourceIndicator !== options.audience) {
            throw new errors.InvalidTarget('unknown resource indicator');
          }
          // oidc-provider drops a scope that no resource server offers without a word, so a
          // mistyped scope (`iserv:idm:api-raed`) got a token without it and a 403 on the first
          // call. A client-credentials request for one is refused instead (RFC 6749 5.2: "invalid,
          // unknown, malformed"); the SSO flows keep OpenID Connect's rule of ignoring them.
          const params = ctx.oidc.params;
          if (params?.grant_type === 'client_credentials' && typeof params.scope === 'string') {
            const unknown = params.scope.split(' ').find((scope) => scope !== '' && !allScopes.has(scope));
            if (unknown !== undefined)
              throw new errors.InvalidScope(
                `requested scope ${JSON.stringify(unknown)} is not known`,
                unknown,
              );
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
    ...(options.interactiveLogin ? interactiveConfiguration(options.accounts) : {}),
  };
}

/** Creates the authorization server: oidc-provider with fresh keys, mounted under AUTH_PREFIX. */
export async function createOAuthServer(options: OAuthServerOptions): Promise<OAuthServer> {
  if (options.interactiveLogin && !options.accounts) throw new TypeError('interactiveLogin needs accounts');
  const basicAllowed = authMethods(options).includes('client_secret_basic');
  const { privateJwk, publicJwk } = await signingKeys();
  const provider = new Provider(options.issuer, providerConfiguration(options, privateJwk));
  const log = options.logger.child({ sandbox: 'oauth' });
  provider.on('server_error', (_ctx, err) => log.error({ err }, 'authorization server error'));
  provider.on('grant.error', (_ctx, err) => log.debug({ error: err.message }, 'token request refused'));
  const callback = provider.callback();

  /**
   * Ends the browser's session at the provider (another user's, or one whose user may no longer
   * log in) and unties the interaction from it, so the login this interaction gives starts a
   * fresh session: resumed with a login for another account, oidc-provider would answer with its
   * logout confirmation form instead.
   */
  async function endSession(interaction: Interaction): Promise<void> {
    const cookie = interaction.session?.cookie;
    if (cookie !== undefined) await (await provider.Session.find(cookie))?.destroy();
    interaction.session = undefined;
    await interaction.persist();
  }

  /**
   * The login "page": logs in the `login_hint` user at once (ending a session of anyone else
   * first), or ends the flow with access_denied.
   */
  async function interact(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const details = await provider.interactionDetails(req, res);
      if (details.prompt.name === 'consent' && details.session?.accountId) {
        // Native clients (RFC 8252) are always asked for consent; auto-approval gives it.
        const grant =
          (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
          new provider.Grant({
            accountId: details.session.accountId,
            clientId: String(details.params.client_id),
          });
        grant.addOIDCScope(typeof details.params.scope === 'string' ? details.params.scope : 'openid');
        const grantId = await grant.save();
        await provider.interactionFinished(
          req,
          res,
          { consent: { grantId } },
          { mergeWithLastSubmission: true },
        );
        return;
      }
      const hint = typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined;
      const found = options.accounts?.byLoginHint(hint) ?? { error: 'no accounts' };
      if (details.session !== undefined && ('error' in found || details.session.accountId !== found.id)) {
        await endSession(details);
      }
      const result =
        'error' in found
          ? { error: 'access_denied', error_description: found.error }
          : { login: { accountId: found.id } };
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
    } catch (error) {
      log.debug({ error: error instanceof Error ? error.message : String(error) }, 'interaction failed');
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: 'invalid_request', error_description: 'unknown or expired interaction' }),
      );
    }
  }

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
      if (
        !basicAllowed &&
        req.method === 'POST' &&
        req.url.split('?')[0] === TOKEN_ROUTE &&
        /^\s*basic\s/i.test(req.headers.authorization ?? '')
      ) {
        // oidc-provider lets a client registered for client_secret_post use Basic as well; a
        // server that does not advertise client_secret_basic refuses it, as a strict one would.
        res.writeHead(401, {
          'content-type': 'application/json',
          'cache-control': 'no-store',
          'www-authenticate': `Basic realm="${options.issuer}", error="invalid_client"`,
        });
        res.end(
          JSON.stringify({
            error: 'invalid_client',
            error_description: 'client_secret_basic is not supported here; use client_secret_post',
          }),
        );
        return;
      }
      if (options.interactiveLogin && req.url.startsWith('/interaction/') && req.method === 'GET') {
        void interact(req, res);
        return;
      }
      void callback(req, res);
    },
  };
}
