import { createHash, randomBytes } from 'node:crypto';
import type { Context } from 'hono';
import { SSO_PATHS } from '../config/fixed-paths.js';
import { publicUrlOf } from '../http/public-url.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { AppEnv } from '../services.js';
import type { SsoTokenRepository } from '../store/sso-tokens.js';

/** Random bytes of an SSO token: 256 bits, twice the 128 the specification asks for. */
export const SSO_TOKEN_BYTES = 32;

/** What an SSO token looks like on the wire: 43 base64url characters (32 bytes). */
export const SSO_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Consumed and expired tokens are kept this long, so a late second use still gets 410 rather than 400. */
const KEEP_USED_MS = 24 * 3600 * 1000;

/** The SHA-256 of a secret (SSO token, OIDC state, browser binding), hex: what the store keeps. */
export function hashSecret(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/**
 * How log lines name an SSO token: the first 12 hex digits of its hash, which tie the lines of
 * one sign-in together (issued, used, the callback's) without being the token.
 */
export function tokenId(tokenHash: string): string {
  return tokenHash.slice(0, 12);
}

/** A fresh random secret, base64url (no padding). */
export function randomSecret(bytes = SSO_TOKEN_BYTES): string {
  return randomBytes(bytes).toString('base64url');
}

/** An issued SSO token: the plain value goes to the caller once and is never stored. */
export interface IssuedSsoToken {
  token: string;
  expiresAt: number;
}

/** Used and expired tokens are purged at most this often, by each process (while tokens are issued). */
const SSO_PURGE_INTERVAL_MS = 60_000;

/** What an SSO token is issued for: the user, and the API user that asked. */
export interface SsoTokenSubject {
  username: string;
  userUuid: string;
  apiUser: string;
}

/**
 * Issues single-use SSO tokens, valid `sso.ttlSeconds`; only their hashes are stored. On the way
 * it purges the tokens a day past their expiry, once the first token issued at least a minute
 * (by the injected clock) after its last purge is stored, rather than with every token: a purge is
 * two DELETEs in a transaction (on PostgreSQL four round trips), which every SSO call used to pay
 * for. The caller does not wait for it; a purge that fails is logged: it is housekeeping, and the
 * next one is due a minute later.
 */
export class SsoTokenIssuer {
  #lastPurge = Number.NEGATIVE_INFINITY;
  /**
   * The issue line, without pino's redaction pass: its fields are fixed (request id, username,
   * token id) and hold no secret, and the pass over every line was about 5 % of an SSO call's CPU.
   */
  readonly #issuedLog: Logger;

  constructor(
    private readonly deps: {
      tokens: Pick<SsoTokenRepository, 'issue' | 'purge'>;
      clock: Clock;
      ttlSeconds: number;
      logger: Logger;
    },
  ) {
    this.#issuedLog = deps.logger.child({}, { redact: [] });
  }

  /** Issues a token for `subject` and logs it (`SSO token issued`, with `requestId` as `reqId`). */
  async issue(subject: SsoTokenSubject, requestId?: string): Promise<IssuedSsoToken> {
    const { tokens, clock, ttlSeconds } = this.deps;
    const now = clock.now();
    const token = randomSecret();
    const expiresAt = now + ttlSeconds * 1000;
    const hash = hashSecret(token);
    await tokens.issue(hash, { ...subject, createdAt: now, expiresAt });
    // After the token, and not waited for: a store busy past its timeout would otherwise make the
    // caller wait for the purge and then again for the token (10 s before a 503 on a locked SQLite
    // file). A clock set back behind the last purge would otherwise hold off the next one as long.
    if (now - this.#lastPurge >= SSO_PURGE_INTERVAL_MS || now < this.#lastPurge) {
      this.#lastPurge = now;
      void this.#purge(now);
    }
    this.#issuedLog.info(
      { reqId: requestId, sso: { username: subject.username, tokenId: tokenId(hash) } },
      'SSO token issued',
    );
    return { token, expiresAt };
  }

  async #purge(now: number): Promise<void> {
    try {
      await this.deps.tokens.purge(now - KEEP_USED_MS);
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'SSO token purge failed');
    }
  }
}

/** The `return_to` of a token: `{publicUrl}/sso/continue?token=…`. */
export function continueUrl(publicUrl: string, token: string): string {
  const url = new URL(`${publicUrl}${SSO_PATHS.continue}`);
  url.searchParams.set('token', token);
  return url.href;
}

/** The portal login target (`sso.target`, default the built-in landing page) with `login_hint`. */
export function targetUrl(c: Context<AppEnv>, username: string): string {
  const configured = c.get('services').config.sso.target;
  const url = new URL(configured ?? `${publicUrlOf(c)}${SSO_PATHS.landing}`);
  url.searchParams.set('login_hint', username);
  return url.href;
}
