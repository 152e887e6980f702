import { createHash } from 'node:crypto';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { LegacyError } from '../http/legacy-error.js';
import { requestHeader } from '../http/request-headers.js';
import { requestLog } from '../http/request-log.js';
import type { AuthFailureReason, Observer } from '../observe/observer.js';
import type { AppEnv } from '../services.js';
import { clientAddressResolver, formatAddress, type IpAddress } from './addresses.js';
import type { Authenticator, AuthOutcome } from './authenticator.js';

/** Options of `apiUserAuth`, validated and compiled once when the middleware is built. */
export interface ApiUserAuthOptions {
  authenticator: Authenticator;
  /** `server.trustedProxies`: peers whose `X-Forwarded-For` is believed. */
  trustedProxies: readonly string[];
  /** Realm of the `WWW-Authenticate` challenge. */
  realm: string;
  /** Told why each refused authentication was refused (metrics). */
  observer?: Pick<Observer, 'authFailure'>;
}

/** Basic credentials of a request, or undefined when there are none or they are malformed. */
export function parseBasicCredentials(
  header: string | undefined,
): { name: string; password: string } | undefined {
  const match = header === undefined ? null : /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * API-user authentication for everything below the legacy base path (operations, docs, SSO).
 * Trusted proxies are compiled once here. Answers 401 (with the Basic challenge) for missing or
 * wrong credentials — the same message whether the name or the password was wrong —, 429 with
 * `Retry-After` while throttled, and 403 when the password is right but the source address is
 * outside the user's ranges. Sets `apiUser` for the request log and the handlers.
 */
export function apiUserAuth(options: ApiUserAuthOptions): MiddlewareHandler<AppEnv> {
  const resolveClient = clientAddressResolver(options.trustedProxies);
  const challenge = { 'WWW-Authenticate': `Basic realm="${options.realm}", charset="UTF-8"` };
  const { authenticator } = options;
  /** Everything but a cached success: waits for the store or the KDF, and answers refusals. */
  const settle = async (
    c: Context<AppEnv>,
    next: Next,
    credentials: { name: string; password: string },
    address: IpAddress | undefined,
    pending: AuthOutcome | Promise<AuthOutcome>,
  ): Promise<void> => {
    const outcome = await pending;
    if (outcome.kind !== 'ok') {
      const reason = outcome.kind === 'unauthorized' ? outcome.reason : outcome.kind;
      options.observer?.authFailure?.(FAILURE_REASONS[reason]);
      const fields = {
        ...attemptedApiUser(credentials.name, isKnownName(outcome)),
        address: address ? formatAddress(address) : null,
      };
      // Bounded with the completion line in a flood (a 429 costs no KDF, so they come fast).
      if (c.get('logLines')?.(REFUSAL_STATUS[outcome.kind]) ?? true)
        requestLog(c).warn({ ...fields, reason }, 'API-user authentication refused');
    }
    switch (outcome.kind) {
      case 'unauthorized':
        throw new LegacyError(401, 'Invalid API user name or password', undefined, challenge);
      case 'throttled':
        throw new LegacyError(
          429,
          `Too many failed logins; try again in ${outcome.retryAfterSeconds} second${outcome.retryAfterSeconds === 1 ? '' : 's'}`,
          undefined,
          { 'Retry-After': String(outcome.retryAfterSeconds) },
        );
      case 'forbidden':
        // The password was right: the refusal is this API user's, in the log line, the metrics
        // and the usage inventory (an integration that moved to another address shows as itself),
        // but it was not let through: not `apiUser`, which the recording takes for admitted.
        c.set('refusedApiUser', outcome.user);
        throw new LegacyError(
          403,
          `API user ${outcome.user} may not call from ${address ? formatAddress(address) : 'an unknown address'}`,
        );
      case 'ok':
        c.set('apiUser', outcome.user);
        await next();
    }
  };
  // Not an async function: a credential the cache admits goes straight on to the next handler,
  // without a promise of its own to settle first (most requests, on keep-alive connections).
  return function apiUserAuthMiddleware(c, next) {
    const credentials = parseBasicCredentials(requestHeader(c, 'authorization'));
    if (!credentials) {
      options.observer?.authFailure?.('missing');
      throw new LegacyError(
        401,
        'Authentication required: send the API user name and password with HTTP Basic authentication',
        undefined,
        challenge,
      );
    }
    const address = resolveClient(peerAddress(c), requestHeader(c, 'x-forwarded-for'));
    const outcome = authenticator.authenticate(credentials.name, credentials.password, address);
    if (!(outcome instanceof Promise) && outcome.kind === 'ok') {
      c.set('apiUser', outcome.user);
      return next();
    }
    return settle(c, next, credentials, address, outcome);
  };
}

/** Hex digits of the SHA-256 that stand for an unknown name in the log: enough to tell names apart. */
const NAME_HASH_HEX = 8;

/**
 * How a refused attempt names its API user in the log. A known API user by its name
 * (`apiUser`), which the operator needs and which is no secret. An unknown name only by
 * `apiUserHash` (the first 8 hex digits of its SHA-256) and `apiUserLength`: such a "name" is
 * often a password typed into the wrong field (`curl -u "$PASSWORD:demo"`), and the log must not
 * carry it. The hash still shows the same name coming again, across restarts and replicas; the
 * length shows a name the length of a generated password (32). Unkeyed, so a guess at a weak
 * password could be checked against it; API-user passwords are 192-bit random, which no guess
 * reaches.
 */
export function attemptedApiUser(
  name: string,
  known: boolean,
): { apiUser: string } | { apiUserHash: string; apiUserLength: number } {
  if (known) return { apiUser: name };
  return {
    apiUserHash: createHash('sha256').update(name, 'utf8').digest('hex').slice(0, NAME_HASH_HEX),
    apiUserLength: name.length,
  };
}

/** Whether a refused attempt's name is an existing API user's, as the authenticator found. */
function isKnownName(outcome: Exclude<AuthOutcome, { kind: 'ok' }>): boolean {
  switch (outcome.kind) {
    case 'forbidden':
      return true;
    case 'unauthorized':
      return outcome.reason === 'wrong password';
    case 'throttled':
      return outcome.knownUser;
  }
}

/** The status each refusal is answered with. */
const REFUSAL_STATUS: Record<Exclude<AuthOutcome['kind'], 'ok'>, number> = {
  unauthorized: 401,
  throttled: 429,
  forbidden: 403,
};

/** The metrics label of each refusal reason. */
const FAILURE_REASONS: Record<
  'unknown user' | 'wrong password' | 'forbidden' | 'throttled',
  AuthFailureReason
> = {
  'unknown user': 'unknown_user',
  'wrong password': 'wrong_password',
  forbidden: 'address',
  throttled: 'throttled',
};

/** The socket peer; undefined when the request did not come through @hono/node-server (fail closed). */
export function peerAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined;
  }
}
