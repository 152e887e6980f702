import { createHash, timingSafeEqual } from 'node:crypto';
import { createLocalJWKSet, type JWK, errors as joseErrors, jwtVerify } from 'jose';
import { ProblemError } from './problems.js';

/** The header carrying an API key, as on the real server. */
export const API_KEY_HEADER = 'x-iserv-authentication';

/** Who made an authorised request. */
export type Principal = { kind: 'token'; clientId: string; scopes: Set<string> } | { kind: 'api-key' };

export interface TokenGuardOptions {
  issuer: string;
  audience: string;
  /** The provider's public keys; verification never goes over the network. */
  jwks: { keys: JWK[] };
  apiKeys: readonly string[];
}

/** A verifier for one request's credentials against the scope the route needs. */
export type TokenGuard = (headers: Headers, scope: string) => Promise<Principal>;

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function unauthorized(detail: string, error?: string): ProblemError {
  const challenge = error
    ? `Bearer error="${error}", error_description="${detail.replaceAll('"', "'")}"`
    : 'Bearer';
  return new ProblemError(401, detail, { headers: { 'www-authenticate': challenge } });
}

function describeJoseError(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'The access token has expired.';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    return `The access token is not valid here: claim "${error.claim}" ${error.reason === 'check_failed' ? 'does not match' : 'is missing'}.`;
  }
  if (
    error instanceof joseErrors.JWSSignatureVerificationFailed ||
    error instanceof joseErrors.JWKSNoMatchingKey
  ) {
    return 'The access token signature is not valid.';
  }
  return 'The access token is malformed.';
}

/**
 * Builds the guard every API route runs: an `X-IServ-Authentication` API key grants read and
 * write; otherwise a Bearer JWT must verify against the provider's key set (signature, issuer,
 * audience, expiry, `at+jwt` type) and carry the route's scope.
 */
export function createTokenGuard(options: TokenGuardOptions): TokenGuard {
  const keySet = createLocalJWKSet(options.jwks);
  const apiKeys = options.apiKeys.map(digest);
  return async function tokenGuard(headers, scope) {
    const apiKey = headers.get(API_KEY_HEADER);
    if (apiKey !== null) {
      const given = digest(apiKey);
      if (apiKeys.some((key) => timingSafeEqual(key, given))) return { kind: 'api-key' };
      throw unauthorized('The API key is not valid.');
    }
    const authorization = headers.get('authorization');
    if (authorization === null) throw unauthorized('Authentication required: send a Bearer access token.');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match?.[1])
      throw unauthorized('The Authorization header must be "Bearer <access token>".', 'invalid_request');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(match[1], keySet, {
        issuer: options.issuer,
        audience: options.audience,
        typ: 'at+jwt',
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw unauthorized(describeJoseError(error), 'invalid_token');
    }
    const scopes = new Set(typeof payload.scope === 'string' ? payload.scope.split(' ') : []);
    if (!scopes.has(scope)) {
      throw new ProblemError(403, `The access token lacks the scope "${scope}" that this request requires.`, {
        headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
      });
    }
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : String(payload.sub ?? '');
    return { kind: 'token', clientId, scopes };
  };
}
