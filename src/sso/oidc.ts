import * as oidc from 'openid-client';
import type { ResolvedSsoConfig } from '../config/load.js';
import { withoutParsedText } from '../lib/json-syntax.js';
import type { Logger } from '../lib/logger.js';
import { quoteInput } from '../lib/quote.js';
import { credentialSpellings, redactText, withoutSecrets } from '../lib/redact.js';
import { discoverIssuer } from '../oauth/discovery.js';

/** The `sso.oidc` block with its secret resolved. */
export type SsoOidcSettings = NonNullable<ResolvedSsoConfig['oidc']>;

/** What went wrong talking to the OpenID Provider, for the page the browser gets. */
export type SsoOidcFailure =
  /** The provider cannot be reached or failed (5xx, timeout): 502. */
  | 'unavailable'
  /** The provider refused (e.g. `invalid_grant` for a used or foreign code): 400. */
  | 'refused'
  /**
   * The provider refused the proxy itself (`invalid_client`: a wrong `sso.oidc.clientSecret`;
   * `unauthorized_client`, `unsupported_grant_type`): every sign-in fails until the operator
   * mends `sso.oidc` or the provider's client: 502.
   */
  | 'misconfigured'
  /** The provider's answer failed a check (signature, issuer, audience, nonce, state, PKCE): 403. */
  | 'invalid';

/** The token endpoint's errors that refuse the proxy's client itself, not one sign-in (RFC 6749 5.2). */
const PROXY_REFUSED = new Set(['invalid_client', 'unauthorized_client', 'unsupported_grant_type']);

/** A failure of the relying party; `message` is for the log and names no secret. */
export class SsoOidcError extends Error {
  override readonly name = 'SsoOidcError';
  /** The provider's OAuth2 error code when it refused (`invalid_grant`, …). */
  readonly providerError: string | undefined;
  constructor(
    readonly kind: SsoOidcFailure,
    message: string,
    options?: { cause?: unknown; providerError?: string },
  ) {
    // The cause without a parser's quote of the provider's answer (which may hold a token), and
    // the message redacted: it quotes the provider's `error_description`, which may repeat what
    // it was sent (the client secret, the authorization code), and is logged as `sso.reason`.
    super(redactText(message), options && { cause: withoutParsedText(options.cause) });
    this.providerError = options?.providerError;
  }
}

/** The server-side half of a started login: kept in the store, never sent to the browser. */
export interface StartedLogin {
  /** Where to send the browser (the provider's authorization endpoint with every parameter). */
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The ID token claims the proxy compares with the user an SSO token was issued for. */
export interface VerifiedIdentity {
  sub: string;
  /** The configured username claim, when the ID token has it as a string. */
  username: string | undefined;
}

/**
 * The proxy as OpenID Connect relying party of the portal's provider (openid-client):
 * authorization code with PKCE (S256), `state` and `nonce`, `login_hint` naming the user.
 * Discovery runs on first use and is cached; a failed discovery is retried on the next use.
 */
export class SsoRelyingParty {
  #configuration: Promise<oidc.Configuration> | undefined;

  constructor(
    private readonly settings: SsoOidcSettings,
    private readonly options: { timeoutMs: number; logger: Logger },
  ) {}

  /** The issuer this party trusts. */
  get issuer(): string {
    return this.settings.issuer;
  }

  /** The redirect URI: configured, else `{publicUrl}/sso/callback`. */
  redirectUri(publicUrl: string, callbackPath: string): string {
    return this.settings.redirectUri ?? `${publicUrl}${callbackPath}`;
  }

  /** Runs discovery (cached), so a provider that is down fails before an SSO token is used up. */
  async ready(): Promise<void> {
    await this.#discover();
  }

  /** Starts a login for `loginHint`: fresh state, nonce and PKCE verifier, and the authorization URL. */
  async start(loginHint: string, redirectUri: string): Promise<StartedLogin> {
    const configuration = await this.#discover();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: this.settings.scopes.join(' '),
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      login_hint: loginHint,
    });
    return { url, state, nonce, codeVerifier };
  }

  /**
   * Finishes a login: exchanges the code of the callback (its query, as received) at the token
   * endpoint and validates the answer — `state`, `iss`, PKCE, the ID token's signature, issuer,
   * audience, expiry and `nonce`. Throws SsoOidcError.
   */
  async finish(
    callbackQuery: string,
    redirectUri: string,
    login: { state: string; nonce: string; codeVerifier: string },
  ): Promise<VerifiedIdentity> {
    const configuration = await this.#discover();
    // The callback URL as registered (not as this request saw it, which a reverse proxy may
    // have rewritten): openid-client sends it as redirect_uri.
    const current = new URL(redirectUri);
    current.search = callbackQuery;
    let claims: oidc.IDToken | undefined;
    try {
      const tokens = await oidc.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: login.codeVerifier,
        expectedState: login.state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (error) {
      // The provider may repeat what it was sent: the code and the PKCE verifier too.
      const code = new URLSearchParams(callbackQuery).get('code') ?? '';
      throw this.#withoutOwnSecrets(this.#failure(error, 'the code exchange'), [code, login.codeVerifier]);
    }
    if (!claims) throw new SsoOidcError('invalid', 'the token endpoint answered without an ID token');
    const username = claims[this.settings.usernameClaim];
    return { sub: claims.sub, username: typeof username === 'string' ? username : undefined };
  }

  #discover(): Promise<oidc.Configuration> {
    this.#configuration ??= this.#runDiscovery().catch((error: unknown) => {
      this.#configuration = undefined;
      throw error;
    });
    return this.#configuration;
  }

  async #runDiscovery(): Promise<oidc.Configuration> {
    const { issuer, clientId, clientSecret } = this.settings;
    try {
      const discovered = await discoverIssuer({
        issuer,
        clientId,
        clientSecret,
        authMethod: 'auto',
        prefer: 'client_secret_basic',
        timeoutMs: this.options.timeoutMs,
        logger: this.options.logger,
        logKey: 'sso',
        exposes: 'every authorization code and token',
      });
      return discovered.configuration;
    } catch (error) {
      // Whatever the provider got wrong here, no sign-in can pass until it (or sso.oidc) is
      // mended: the provider is unusable (502), not one login's answer failing the checks.
      const failure = this.#withoutOwnSecrets(this.#failure(error, `discovery of ${issuer}`), []);
      throw failure.kind === 'unavailable'
        ? failure
        : new SsoOidcError('unavailable', failure.message, { cause: error });
    }
  }

  /**
   * `failure` without the client's credentials in any spelling a provider may repeat them
   * (`credentialSpellings`), nor `more` (the code and verifier of the exchange): its message is
   * logged (`sso.reason`).
   */
  #withoutOwnSecrets(failure: SsoOidcError, more: string[]): SsoOidcError {
    const { clientId, clientSecret } = this.settings;
    const message = withoutSecrets(failure.message, [
      ...credentialSpellings(clientId, clientSecret),
      ...more,
    ]);
    if (message === failure.message) return failure;
    return new SsoOidcError(failure.kind, message, {
      cause: failure.cause,
      ...(failure.providerError === undefined ? {} : { providerError: failure.providerError }),
    });
  }

  /** Sorts openid-client's errors into what the browser is told; messages carry no secret. */
  #failure(error: unknown, what: string): SsoOidcError {
    if (error instanceof SsoOidcError) return error;
    if (error instanceof oidc.ResponseBodyError) {
      const said = `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
      return new SsoOidcError(
        error.status >= 500 ? 'unavailable' : PROXY_REFUSED.has(error.error) ? 'misconfigured' : 'refused',
        `${what} failed with ${error.status} (${said})`,
        { cause: error, providerError: error.error },
      );
    }
    // An answer with a challenge. A 401, or a refusal of the client itself: the provider refused
    // the client's own authentication (a wrong sso.oidc.clientSecret), which fails every sign-in.
    if (error instanceof oidc.WWWAuthenticateChallengeError) {
      const said = error.cause[0]?.parameters.error;
      if (error.status >= 500)
        return new SsoOidcError('unavailable', `${what} failed with ${error.status}`, { cause: error });
      if (error.status === 401 || (said !== undefined && PROXY_REFUSED.has(said)))
        return new SsoOidcError(
          'misconfigured',
          `${what} failed with ${error.status}: the provider refused the client's authentication${said ? ` (${said})` : ''}; check sso.oidc.clientId and clientSecret`,
          { cause: error, providerError: said ?? 'invalid_client' },
        );
      return new SsoOidcError('refused', `${what} failed with ${error.status}${said ? ` (${said})` : ''}`, {
        cause: error,
        ...(said === undefined ? {} : { providerError: said }),
      });
    }
    if (error instanceof oidc.AuthorizationResponseError) {
      return new SsoOidcError('refused', `${what}: the provider answered ${error.error}`, { cause: error });
    }
    if (error instanceof oidc.ClientError) {
      if (error.code === 'OAUTH_TIMEOUT' || error.code === undefined || error.cause instanceof TypeError) {
        return new SsoOidcError('unavailable', `${what} failed: ${error.message}`, { cause: error });
      }
      const detail = `${clientErrorDetail(error)} (${error.code})`;
      const status = answerOf(error)?.status;
      if (status !== undefined && status >= 500) {
        return new SsoOidcError('unavailable', `${what} failed: ${detail}`, { cause: error });
      }
      return new SsoOidcError('invalid', `${what}: ${detail}`, { cause: error });
    }
    const reason = error instanceof Error ? error.message : String(error);
    return new SsoOidcError('unavailable', `${what} failed: ${reason}`, { cause: error });
  }
}

/**
 * What an openid-client ClientError says failed, for the log. Its message alone is generic
 * ("unexpected HTTP response status code", "invalid response encountered"): so the answer it is
 * about, by address and status (a discovery document that is not there: which URL answered 404),
 * or the check of oauth4webapi that failed, whose message names the parameter or claim (`"iss"`,
 * a parameter given twice, the nonce) and no value. Nothing deeper: those causes hold the
 * callback's parameters (the code), the expected state or nonce, or a parser's quote of an answer.
 */
function clientErrorDetail(error: oidc.ClientError): string {
  const answer = answerOf(error);
  if (answer) {
    const type =
      error.code === 'OAUTH_RESPONSE_IS_NOT_JSON'
        ? ` with content-type ${quoteInput(answer.contentType ?? '')}`
        : '';
    return `${answer.url || 'the provider'} answered ${answer.status}${type}: ${error.message}`;
  }
  const check = error.cause;
  if (check instanceof Error && check.name === 'OperationProcessingError' && check.message !== error.message)
    return `${error.message}: ${check.message}${announcedIssuer(check.cause)}`;
  return `${error.message}${announcedIssuer(check)}`;
}

/**
 * For a discovery document naming another issuer than `sso.oidc.issuer` (the details of the failed
 * comparison, openid-client's or oauth4webapi's): the one it names (public metadata, bounded), so
 * that the operator can copy it. Empty for any other failure.
 */
function announcedIssuer(details: unknown): string {
  if (typeof details !== 'object' || details === null) return '';
  const { attribute, body } = details as { attribute?: unknown; body?: unknown };
  if (attribute !== 'issuer' || typeof body !== 'object' || body === null) return '';
  const named: unknown = (body as { issuer?: unknown }).issuer;
  return typeof named === 'string'
    ? ` (the document names ${quoteInput(named)}; set sso.oidc.issuer to it)`
    : '';
}

/** The answer an openid-client error is about (its cause, a fetch Response of any undici copy), if any. */
function answerOf(
  error: oidc.ClientError,
): { status: number; url: string; contentType: string | undefined } | undefined {
  const response: unknown = error.cause;
  if (Object.prototype.toString.call(response) !== '[object Response]') return undefined;
  const { status, url, headers } = response as Response;
  // Without its query: a gateway may put a key there (`?subscription-key=…`), which the provider's
  // discovery document hands on, and the log is no place for it.
  return { status, url: withoutQuery(url), contentType: headers.get('content-type') ?? undefined };
}

/** A URL's origin and path alone; '' for none (a Response made without one). */
function withoutQuery(url: string): string {
  if (!URL.canParse(url)) return '';
  const { origin, pathname } = new URL(url);
  return `${origin}${pathname}`;
}
