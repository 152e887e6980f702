import * as oidc from 'openid-client';
import { causeChain } from '../lib/cause-chain.js';
import type { Clock } from '../lib/clock.js';
import { withoutParsedText } from '../lib/json-syntax.js';
import type { Logger } from '../lib/logger.js';
import { credentialSpellings } from '../lib/redact.js';
import { discoverIssuer } from '../oauth/discovery.js';
import type { Observer } from '../observe/observer.js';
import { UpstreamError, withoutSecretValues } from './errors.js';

/** Which token a call needs: the read scopes or the write scopes. */
export type Access = 'read' | 'write';

/** Settings of the OAuth2 client-credentials token source, all defaults applied. */
export interface TokenSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: { read: readonly string[]; write: readonly string[] };
  authMethod: 'auto' | 'client_secret_post' | 'client_secret_basic';
  refreshMarginSeconds: number;
  /** Total timeout of one discovery or token request. */
  timeoutMs: number;
  clock: Clock;
  logger: Logger;
  /** The pooled fetch used for discovery and token calls. */
  fetch: oidc.CustomFetch;
  /** Told about every token obtained (metrics). */
  observer?: Pick<Observer, 'tokenRenewal'> | undefined;
}

interface CachedToken {
  accessToken: string;
  expiresAt: number;
  refreshAt: number;
}

/** Lifetime assumed when the token response has no `expires_in`. */
const DEFAULT_LIFETIME_SECONDS = 300;
/** After a failed early refresh the still valid token is used this long before the next try. */
const REFRESH_RETRY_MS = 5_000;

/**
 * OAuth2 client-credentials tokens for the successor: discovery through openid-client (cached,
 * redone after a failure), a token cache per (issuer, client, scope) refreshed before expiry on
 * the injected clock, and single-flight renewal so concurrent callers share one token request.
 */

/** The error codes of a token endpoint's refusal (RFC 6749 5.2), and `access_denied`, which some send too. */
const TOKEN_ERROR_CODES = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'access_denied',
]);

export class TokenSource {
  readonly #settings: TokenSettings;
  readonly #cache = new Map<string, CachedToken>();
  readonly #pending = new Map<string, Promise<CachedToken>>();
  #configuration: Promise<oidc.Configuration> | undefined;
  /** The discovery `#configuration` holds once it has finished (see `#renew`). */
  #discovered: Promise<oidc.Configuration> | undefined;

  /** Scope string and cache key of each access level, worked out once (they never change). */
  readonly #scopeStrings: Record<Access, string>;
  readonly #keys: Record<Access, string>;

  constructor(settings: TokenSettings) {
    this.#settings = settings;
    const scopeString = (access: Access) => settings.scopes[access].join(' ');
    this.#scopeStrings = { read: scopeString('read'), write: scopeString('write') };
    const key = (access: Access) =>
      JSON.stringify([settings.issuer, settings.clientId, this.#scopeStrings[access]]);
    this.#keys = { read: key('read'), write: key('write') };
  }

  /** The issuer, for messages. */
  get issuer(): string {
    return this.#settings.issuer;
  }

  /** The client id, for messages. */
  get clientId(): string {
    return this.#settings.clientId;
  }

  /** The configured scopes of an access level. */
  scopes(access: Access): readonly string[] {
    return this.#settings.scopes[access];
  }

  /**
   * The cached access token for `access` while it needs no renewal, else undefined: the hot path
   * of every call, without the promise of `token`.
   */
  fresh(access: Access): string | undefined {
    const cached = this.#cache.get(this.#key(access));
    return cached && this.#settings.clock.now() < cached.refreshAt ? cached.accessToken : undefined;
  }

  /** A valid access token for `access`, from the cache or from one shared token request. */
  async token(access: Access, signal?: AbortSignal): Promise<string> {
    const fresh = this.fresh(access);
    if (fresh !== undefined) return fresh;
    const scope = this.#scopeString(access);
    const key = this.#key(access);
    const cached = this.#cache.get(key);

    let pending = this.#pending.get(key);
    if (!pending) {
      pending = this.#renew(key, scope, access).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    try {
      return (await abortable(pending, signal)).accessToken;
    } catch (error) {
      const stillValid = cached !== undefined && this.#settings.clock.now() < cached.expiresAt;
      if (
        stillValid &&
        error instanceof UpstreamError &&
        error.code === 'unavailable' &&
        this.#cache.get(key) === cached
      ) {
        // An early refresh failed while the old token is still good: keep serving with it and
        // try again shortly instead of on every call.
        cached.refreshAt = Math.min(cached.expiresAt, this.#settings.clock.now() + REFRESH_RETRY_MS);
        this.#settings.logger.warn(
          { successor: { issuer: this.#settings.issuer, scope } },
          `token refresh failed, using the current token until it expires: ${error.message}`,
        );
        return cached.accessToken;
      }
      throw error;
    }
  }

  /**
   * Forgets `accessToken` after the API rejected it (401). Only that token: when another caller
   * already replaced it, the newer token stays.
   */
  purge(access: Access, accessToken: string): void {
    const key = this.#key(access);
    if (this.#cache.get(key)?.accessToken === accessToken) this.#cache.delete(key);
  }

  #scopeString(access: Access): string {
    return this.#scopeStrings[access];
  }

  #key(access: Access): string {
    return this.#keys[access];
  }

  /**
   * One token request. When the token endpoint of an earlier discovery answers as no token
   * endpoint does (`bad_response`: it moved, e.g. after the server was reconfigured), the endpoint
   * is looked up again and asked once more within the same call, so the call that meets the move
   * is not the one that fails for it. A fresh discovery's endpoint is not asked twice.
   */
  async #renew(key: string, scope: string, access: Access): Promise<CachedToken> {
    // A discovery still running (for the other access level's token) counts as made for this call.
    const discoveredEarlier = this.#configuration !== undefined && this.#configuration === this.#discovered;
    const requestedAt = this.#settings.clock.now();
    let response: oidc.TokenEndpointResponse;
    try {
      response = await this.#grant(scope, access);
    } catch (error) {
      if (!discoveredEarlier || !(error instanceof UpstreamError) || error.code !== 'bad_response')
        throw error;
      response = await this.#grant(scope, access);
    }
    this.#settings.observer?.tokenRenewal?.();
    const lifetimeSeconds =
      typeof response.expires_in === 'number' && response.expires_in > 0
        ? response.expires_in
        : DEFAULT_LIFETIME_SECONDS;
    const lifetimeMs = lifetimeSeconds * 1000;
    const marginMs = Math.min(this.#settings.refreshMarginSeconds * 1000, lifetimeMs / 2);
    const entry: CachedToken = {
      accessToken: response.access_token,
      expiresAt: requestedAt + lifetimeMs,
      refreshAt: requestedAt + lifetimeMs - marginMs,
    };
    this.#cache.set(key, entry);
    this.#settings.logger.debug(
      {
        successor: {
          issuer: this.#settings.issuer,
          clientId: this.#settings.clientId,
          scope,
          lifetimeSeconds,
        },
      },
      'successor token issued',
    );
    return entry;
  }

  /** The client-credentials grant at the discovered token endpoint; a failure as an UpstreamError. */
  async #grant(scope: string, access: Access): Promise<oidc.TokenEndpointResponse> {
    const configuration = await this.#discover();
    try {
      return await oidc.clientCredentialsGrant(configuration, scope === '' ? {} : { scope });
    } catch (error) {
      const mapped = this.#tokenError(error, 'token', scope, access);
      // The token endpoint may have moved or the server restarted: look it up again next time.
      if (mapped.code === 'unavailable' || mapped.code === 'bad_response') this.#configuration = undefined;
      throw mapped;
    }
  }

  #discover(): Promise<oidc.Configuration> {
    if (this.#configuration) return this.#configuration;
    const discovery: Promise<oidc.Configuration> = this.#runDiscovery().then(
      (configuration) => {
        this.#discovered = discovery;
        return configuration;
      },
      (error: unknown) => {
        if (this.#configuration === discovery) this.#configuration = undefined;
        throw error;
      },
    );
    this.#configuration = discovery;
    return discovery;
  }

  async #runDiscovery(): Promise<oidc.Configuration> {
    const { issuer, clientId, clientSecret, timeoutMs, logger, authMethod } = this.#settings;
    try {
      const discovered = await discoverIssuer({
        issuer,
        clientId,
        clientSecret,
        // Post is preferred when both are offered, as the IServ token endpoint documents it.
        authMethod,
        prefer: 'client_secret_post',
        timeoutMs,
        fetch: this.#settings.fetch,
        logger,
        logKey: 'successor',
        exposes: 'the client secret',
      });
      return discovered.configuration;
    } catch (error) {
      throw this.#tokenError(error, 'discovery', '', 'read');
    }
  }

  /**
   * The scopes most likely refused when a token request fails with invalid_scope: those of the
   * request the server's description names (`requested scope "iserv:idm:api-raed" is not known`);
   * else for a write token those beyond the read scopes (the read token usually works), otherwise
   * all of them.
   */
  #suspectScopes(access: Access, description: string | undefined): string {
    const requested = this.#settings.scopes[access];
    // Whole words of the description, quotes and trailing punctuation off: `api-read` is not
    // named by `"api-read.all" is not known`.
    const words = new Set(
      (description ?? '').split(/\s+/).map((word) => word.replace(/^["'`(]+|["'`),;:.]+$/g, '')),
    );
    const named = requested.filter((scope) => words.has(scope));
    if (named.length > 0) return named.join(' ');
    const { read, write } = this.#settings.scopes;
    const extra = access === 'write' ? write.filter((scope) => !read.includes(scope)) : [];
    return (extra.length > 0 ? extra : this.#settings.scopes[access]).join(' ');
  }

  /**
   * Translates openid-client failures into UpstreamErrors that carry no secret: what the OAuth2
   * server said is quoted without the client's credentials in any spelling it may repeat them
   * (`presented secret 'x'`, `id:secret` in base64), besides the redaction every UpstreamError has.
   */
  #tokenError(error: unknown, phase: 'discovery' | 'token', scope: string, access: Access): UpstreamError {
    const { clientId, clientSecret } = this.#settings;
    return withoutSecretValues(
      this.#describedTokenError(error, phase, scope, access),
      credentialSpellings(clientId, clientSecret),
    );
  }

  #describedTokenError(
    error: unknown,
    phase: 'discovery' | 'token',
    scope: string,
    access: Access,
  ): UpstreamError {
    if (error instanceof UpstreamError) return error;
    // An answer the transport refused to read (larger than successor.maxResponseBytes), wrapped
    // by fetch and openid-client.
    const refused = upstreamCause(error);
    if (refused !== undefined) return refused;
    const { issuer, clientId, timeoutMs } = this.#settings;
    const what = phase === 'discovery' ? `OAuth2 discovery for ${issuer}` : `the token endpoint of ${issuer}`;
    // The cause without a parser's quote of the answer (a broken token answer holds the token); none
    // for an OAuth error answer, which the message quotes (redacted): the library's error would
    // repeat its error_description whole in the log line.
    const quoted =
      error instanceof oidc.ResponseBodyError || error instanceof oidc.WWWAuthenticateChallengeError;
    const base = { source: 'token' as const, ...(quoted ? {} : { cause: withoutParsedText(error) }) };

    let oauthError: string | undefined;
    let description: string | undefined;
    let status: number | undefined;
    if (error instanceof oidc.ResponseBodyError) {
      oauthError = error.error;
      description = error.error_description;
      status = error.status;
    } else if (error instanceof oidc.WWWAuthenticateChallengeError) {
      status = error.status;
      const parameters = error.cause[0]?.parameters;
      oauthError = parameters?.error;
      description = parameters?.error_description;
    }
    const said = `${oauthError ?? ''}${description === undefined ? '' : `: ${description}`}`;
    const detail = said === '' ? '' : ` (${said})`;
    const answered = answerOf(error);
    if (answered?.status === 429) {
      // Too many token requests: no token for now, and the caller may be told when to try again.
      const retryAfter = answered.retryAfter;
      return new UpstreamError(
        'unavailable',
        `${what} refused more requests for now (429${retryAfter === undefined ? '' : `, retry after ${retryAfter}`})${detail}`,
        { ...base, status: 429, ...(retryAfter === undefined ? {} : { retryAfter }) },
      );
    }

    if (oauthError !== undefined || status !== undefined) {
      const withStatus = { ...base, ...(status === undefined ? {} : { status }) };
      if (
        (status !== undefined && status >= 500) ||
        oauthError === 'temporarily_unavailable' ||
        oauthError === 'server_error'
      ) {
        return new UpstreamError(
          'unavailable',
          `${what} failed with ${status ?? 'an error'}${detail}`,
          withStatus,
        );
      }
      // A 400 or 401 is the OAuth2 server refusing the request (RFC 6749 5.2), and so is another
      // status with one of that section's error codes (some providers answer a missing grant with
      // 403 and invalid_scope). Anything else (404, 405, 410, … , `not_found` included) is no token
      // endpoint answering, e.g. one that moved: a bad_response, after which the next token
      // request looks the endpoint up again.
      if (
        status !== undefined &&
        status !== 400 &&
        status !== 401 &&
        !(oauthError !== undefined && TOKEN_ERROR_CODES.has(oauthError))
      ) {
        return new UpstreamError(
          'bad_response',
          `${what} answered ${status}${detail}, which is no OAuth2 token answer; the endpoint may have moved (it is looked up again), else check successor.auth.issuer`,
          withStatus,
        );
      }
      if (oauthError === 'invalid_scope') {
        const suspect = this.#suspectScopes(access, description) || scope;
        const requested = suspect === scope ? '' : ` (requested: ${scope})`;
        return new UpstreamError(
          'forbidden',
          `${what} refused scope ${suspect} for client ${clientId}${requested}${detail}; grant it to client ${clientId}, or correct successor.auth.scopes.${access} if the successor has no such scope`,
          { ...withStatus, scope: suspect },
        );
      }
      if (oauthError === 'unauthorized_client' || oauthError === 'unsupported_grant_type') {
        return new UpstreamError(
          'unauthorized',
          `${what} does not let client ${clientId} use the client_credentials grant${detail}; enable it for the client`,
          withStatus,
        );
      }
      return new UpstreamError(
        'unauthorized',
        `${what} rejected client ${clientId}${detail}; check successor.auth.clientId and successor.auth.clientSecret`,
        withStatus,
      );
    }

    if (error instanceof oidc.ClientError) {
      const response = responseLike(error.cause);
      if (error.code === 'OAUTH_TIMEOUT') {
        return new UpstreamError(
          'unavailable',
          `${what} did not answer within ${timeoutMs} ms (successor.timeouts.totalMs)`,
          base,
        );
      }
      if (response && response.status >= 500) {
        return new UpstreamError('unavailable', `${what} failed with ${response.status}`, {
          ...base,
          status: response.status,
        });
      }
      if (error.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON' && phase === 'discovery') {
        return new UpstreamError(
          'bad_response',
          `${what}: the discovery document names a different issuer; set successor.auth.issuer to exactly the issuer it announces`,
          base,
        );
      }
      if (response) {
        return new UpstreamError(
          'bad_response',
          `${what} answered ${response.status} with an unexpected response (${error.message}); check successor.auth.issuer`,
          { ...base, status: response.status },
        );
      }
      if (error.code !== undefined && error.code !== 'OAUTH_ABORT' && !(error.cause instanceof TypeError)) {
        return new UpstreamError(
          'bad_response',
          `${what} failed: ${error.message}; check successor.auth.issuer`,
          base,
        );
      }
    }
    // Network failures (fetch's TypeError): the OAuth2 server is unreachable.
    return new UpstreamError(
      'unavailable',
      `could not reach ${what} (${networkReason(error)}); check successor.auth.issuer and that the OAuth2 server is up`,
      base,
    );
  }
}

/** The first UpstreamError in an error's cause chain, if any. */
function upstreamCause(error: unknown): UpstreamError | undefined {
  return causeChain(error).find((link): link is UpstreamError => link instanceof UpstreamError);
}

function networkReason(error: unknown): string {
  let reason = error instanceof Error ? error.message : String(error);
  for (const link of causeChain(error)) {
    const code: unknown = Reflect.get(link, 'code');
    if (typeof code === 'string' && !code.startsWith('OAUTH_')) reason = code;
  }
  return reason;
}

/**
 * The status and Retry-After of the answer an openid-client error is about: the `response` of an
 * OAuth2 error body or challenge, or a ClientError's cause; undefined when it has none.
 */
function answerOf(error: unknown): { status: number; retryAfter: string | undefined } | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const candidates = [Reflect.get(error, 'response'), Reflect.get(error, 'cause')];
  for (const candidate of candidates) {
    if (!responseLike(candidate)) continue;
    const response = candidate as Response;
    return { status: response.status, retryAfter: response.headers.get('retry-after') ?? undefined };
  }
  return undefined;
}

/** The cause as a fetch Response (from any undici copy, hence no instanceof), if it is one. */
function responseLike(value: unknown): { status: number } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (Object.prototype.toString.call(value) !== '[object Response]') return undefined;
  const status: unknown = Reflect.get(value, 'status');
  return typeof status === 'number' ? { status } : undefined;
}

/** Waits for a shared promise, but lets one caller stop waiting when its own signal fires. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
