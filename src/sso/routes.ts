import type { Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { SSO_PATHS } from '../config/fixed-paths.js';
import { publicUrlOf } from '../http/public-url.js';
import { requestLog } from '../http/request-log.js';
import { ssoAuthenticateOperation } from '../legacy/sso/authenticate.js';
import { normalizeUuid } from '../lib/uuid.js';
import type { CallStats } from '../observe/observer.js';
import type { AppEnv, Services } from '../services.js';
import { SsoOidcError, type SsoOidcFailure, type SsoRelyingParty, type VerifiedIdentity } from './oidc.js';
import { securityHeaders, ssoPage } from './pages.js';
import { hashSecret, randomSecret, SSO_TOKEN_PATTERN, targetUrl, tokenId } from './tokens.js';

/** Prefix of the cookie that binds a started OIDC login to the browser that started it. */
const BINDING_COOKIE = 'idm_compat_sso_';

const FAILURE_STATUS: Record<SsoOidcFailure, 400 | 403 | 502> = {
  unavailable: 502,
  refused: 400,
  misconfigured: 502,
  invalid: 403,
};

/** The cookie of one login: named after (a prefix of) the hash of its state, so parallel tabs do not clash. */
function bindingCookieName(stateHash: string): string {
  return `${BINDING_COOKIE}${stateHash.slice(0, 16)}`;
}

/**
 * The `Path` of the binding cookie: the directory of the redirect URI, where the browser comes
 * back (`/sso` by default; `/idm-compat/sso` when `legacy.publicUrl` is
 * `https://school.example/idm-compat` behind a reverse proxy that strips the prefix). Not the
 * path this request came in on, which such a proxy has rewritten: a cookie for `/sso` would not
 * come along to `/idm-compat/sso/callback`. Set and deleted with the same path.
 */
function bindingCookiePath(redirectUri: string): string {
  const { pathname } = new URL(redirectUri);
  return pathname.slice(0, pathname.lastIndexOf('/')) || '/';
}

/**
 * The browser side of SSO, outside the legacy base path (no API-user credentials: the visitor
 * is a person following `return_to`):
 * - `GET /sso/continue?token=…` consumes the token once; without `sso.oidc` it redirects to
 *   `sso.target` with `login_hint`, with it to the provider's authorization endpoint;
 * - `GET /sso/callback` (with `sso.oidc`) finishes the OIDC login and redirects to `sso.target`
 *   only when the ID token names the user the token was issued for;
 * - `GET /sso/landing` is the default `sso.target`: a page saying who arrived.
 * Failures are small HTML pages; the token, code and state never appear in a page or a log line.
 * Hono serves HEAD with the GET handler; `headAnswer` keeps HEAD from using anything up.
 */
export function registerSso(app: Hono<AppEnv>, services: Services): void {
  const { config, logger } = services;
  const oidcSettings = config.sso.oidc;
  const party = services.sso;
  if (config.mode === 'production' && config.sso.target === undefined) {
    logger.warn(
      `sso.target is not set: SSO visitors land on the built-in page ${SSO_PATHS.landing}; set it to the portal's login URL`,
    );
  }

  const redirect = (c: Context<AppEnv>, location: string): Response => {
    for (const [name, value] of Object.entries(securityHeaders())) c.header(name, value);
    return c.redirect(location, 302);
  };

  app.get(SSO_PATHS.continue, async (c) => {
    if (c.req.method === 'HEAD') return headAnswer(c);
    const token = c.req.query('token') ?? '';
    if (!SSO_TOKEN_PATTERN.test(token)) return unknownLink(c);
    if (party) {
      // Discovery first: when the provider is down, the token is not used up.
      try {
        await party.ready();
      } catch (error) {
        return oidcFailurePage(c, error);
      }
    }
    const tokenHash = hashSecret(token);
    const now = services.clock.now();
    const outcome = await services.store.ssoTokens.consume(tokenHash, now);
    const log = requestLog(c);
    if (outcome.status === 'unknown') return unknownLink(c);
    if (outcome.status !== 'consumed') {
      log.info(
        {
          sso: { username: outcome.token.username, tokenId: tokenId(tokenHash), outcome: outcome.status },
        },
        'SSO link refused',
      );
      return ssoPage(c, 410, {
        title:
          outcome.status === 'used' ? 'This sign-in link was already used' : 'This sign-in link has expired',
        message:
          'Sign-in links work once and only for a short time. Go back to the application you came from and start the sign-in again.',
      });
    }
    const { username } = outcome.token;
    log.info({ sso: { username, tokenId: tokenId(tokenHash) } }, 'SSO token used');
    if (!party || !oidcSettings) return redirect(c, targetUrl(c, username));

    const publicUrl = publicUrlOf(c);
    const redirectUri = party.redirectUri(publicUrl, SSO_PATHS.callback);
    let started: Awaited<ReturnType<SsoRelyingParty['start']>>;
    try {
      started = await party.start(username, redirectUri);
    } catch (error) {
      return oidcFailurePage(c, error);
    }
    const binding = randomSecret();
    const stateHash = hashSecret(started.state);
    await services.store.ssoTokens.beginLogin(stateHash, {
      tokenHash,
      nonce: started.nonce,
      codeVerifier: started.codeVerifier,
      browserHash: hashSecret(binding),
      createdAt: now,
      expiresAt: now + oidcSettings.loginTtlSeconds * 1000,
    });
    setCookie(c, bindingCookieName(stateHash), binding, {
      path: bindingCookiePath(redirectUri),
      httpOnly: true,
      // Lax: the cookie comes along on the provider's top-level redirect back to the callback.
      sameSite: 'Lax',
      secure: publicUrl.startsWith('https:'),
      maxAge: oidcSettings.loginTtlSeconds,
    });
    return redirect(c, started.url.href);
  });

  app.get(SSO_PATHS.callback, async (c) => {
    if (c.req.method === 'HEAD') return headAnswer(c);
    if (!party || !oidcSettings) {
      return ssoPage(c, 400, {
        title: 'Single sign-on is not set up for this',
        message: 'This address only answers sign-ins through an identity provider, which is not configured.',
      });
    }
    const state = c.req.query('state');
    if (!state) return unknownLink(c);
    const stateHash = hashSecret(state);
    const cookieName = bindingCookieName(stateHash);
    const binding = getCookie(c, cookieName) ?? '';
    const now = services.clock.now();
    const outcome = await services.store.ssoTokens.finishLogin(stateHash, hashSecret(binding), now);
    const log = requestLog(c);
    switch (outcome.status) {
      case 'unknown':
        return unknownLink(c);
      case 'used':
      case 'expired':
        return ssoPage(c, 410, {
          title:
            outcome.status === 'used' ? 'This sign-in was already completed' : 'This sign-in took too long',
          message: 'Go back to the application you came from and start the sign-in again.',
        });
      case 'other-browser':
        log.warn(
          { sso: { tokenId: tokenId(outcome.tokenHash), outcome: 'other-browser' } },
          'SSO callback from a browser that did not start the login',
        );
        return ssoPage(c, 400, {
          title: 'This sign-in was started in another browser',
          message: 'Finish the sign-in in the browser where it started, or start it again here.',
        });
      case 'finished':
        break;
    }
    const redirectUri = party.redirectUri(publicUrlOf(c), SSO_PATHS.callback);
    deleteCookie(c, cookieName, { path: bindingCookiePath(redirectUri) });
    const { token, login } = outcome;
    const providerError = c.req.query('error');
    if (providerError !== undefined) {
      const description = c.req.query('error_description');
      log.warn(
        {
          sso: {
            username: token.username,
            tokenId: tokenId(login.tokenHash),
            error: providerError,
            errorDescription: description,
          },
        },
        'SSO login refused by the identity provider',
      );
      return ssoPage(c, 400, {
        title: 'The sign-in was refused',
        message: `The identity provider did not sign in ${token.username}.`,
        detail: `${providerError}${description ? `: ${description}` : ''}`,
      });
    }

    let identity: Awaited<ReturnType<SsoRelyingParty['finish']>>;
    try {
      identity = await party.finish(new URL(c.req.url).search, redirectUri, {
        state,
        nonce: login.nonce,
        codeVerifier: login.codeVerifier,
      });
    } catch (error) {
      return oidcFailurePage(c, error, token.username, tokenId(login.tokenHash));
    }
    const verdict = await identityVerdict(services, identity, token, c.get('calls'));
    if (verdict !== 'same') {
      const renamed = typeof verdict === 'object';
      log.warn(
        {
          sso: {
            tokenId: tokenId(login.tokenHash),
            expected: {
              username: token.username,
              uuid: token.userUuid,
              // What the successor calls the token's user now (null: it has no such user any more).
              ...(renamed ? { usernameNow: verdict.usernameNow } : {}),
            },
            received: { username: identity.username, sub: identity.sub },
            issuer: party.issuer,
          },
        },
        renamed
          ? "SSO identity mismatch: the username claim names the token's user, but sub is not its UUID and the successor's user of that UUID no longer has the username (renamed or removed since): the identity provider signed in whoever holds the name now"
          : 'SSO identity mismatch: the identity provider signed in someone else than the user the token was issued for',
      );
      return ssoPage(c, 403, {
        title: 'Signed in as someone else',
        message: `This sign-in link was issued for ${token.username}, but the identity provider signed in a different user. Sign out at the identity provider and start again.`,
      });
    }
    log.info({ sso: { username: token.username, tokenId: tokenId(login.tokenHash) } }, 'SSO login verified');
    return redirect(c, targetUrl(c, token.username));
  });

  app.get(SSO_PATHS.landing, (c) => {
    const hint = c.req.query('login_hint') ?? '';
    // Only a plausible username is shown back, so the page cannot be made to say arbitrary things.
    const who = /^[\p{L}\p{N}._@-]{1,100}$/u.test(hint) ? hint : undefined;
    return ssoPage(c, 200, {
      title: who ? `Welcome, ${who}` : 'Single sign-on',
      message: who
        ? `Single sign-on brought ${who} here (login_hint=${who}).`
        : 'Single sign-on brought you here, without a username.',
      detail:
        'This page of idm-compat stands in for the portal login (sso.target). Configure sso.target to send visitors to the real portal.',
    });
  });
}

/**
 * Whether the ID token names the user the SSO token was issued for (SPEC 3). `sub` equal to the
 * user's successor UUID (dashed or base58) is that user: a UUID is never another user's. The
 * username claim equal to the username is only a name, which another user may hold by now (the
 * token's user renamed or removed, a new user created under the name): then the successor is asked
 * (one read) whether the user with the token's UUID still has that username, and a `{usernameNow}`
 * says it does not. A successor failure rejects (the callback's 502/503/504 page).
 */
async function identityVerdict(
  services: Services,
  identity: VerifiedIdentity,
  token: { username: string; userUuid: string },
  calls: CallStats | undefined,
): Promise<'same' | 'other' | { usernameNow: string | null }> {
  if (normalizeUuid(identity.sub) === token.userUuid) return 'same';
  if (identity.username === undefined || identity.username !== token.username) return 'other';
  const now = await services.mappings
    .current()
    .readByUuid(ssoAuthenticateOperation.id, token.userUuid, ['username'], calls);
  const usernameNow = typeof now?.value.username === 'string' ? now.value.username : null;
  return usernameNow === token.username ? 'same' : { usernameNow };
}

/**
 * The answer to HEAD on `/sso/continue` and `/sso/callback`: 200 (an HTML page without its body),
 * without looking at the query, the store or the provider. HEAD must be safe, and mail and link
 * scanners send it to the links in a message before the person clicks: answered like GET, it
 * would use up the single-use token (or the OIDC login) and the click would get 410. Not 405:
 * link checkers commonly retry a HEAD refused with 405 (or 501) as GET, which would use the token
 * up all the same. Not a status per token either (400/410): that needs a read of the store per
 * scan, and says nothing a scanner needs. So HEAD tells that the address exists, nothing more.
 */
function headAnswer(c: Context<AppEnv>): Response {
  return ssoPage(c, 200, {
    title: 'Single sign-on',
    message: 'Open this link in a browser to sign in.',
  });
}

function unknownLink(c: Context<AppEnv>): Response {
  return ssoPage(c, 400, {
    title: 'This sign-in link is not valid',
    message:
      'The link is incomplete or unknown. Go back to the application you came from and start the sign-in again.',
  });
}

function oidcFailurePage(c: Context<AppEnv>, error: unknown, username?: string, token?: string): Response {
  const failure =
    error instanceof SsoOidcError
      ? error
      : new SsoOidcError('unavailable', error instanceof Error ? error.message : String(error));
  requestLog(c).warn(
    { sso: { username, tokenId: token, failure: failure.kind, reason: failure.message } },
    'SSO login failed at the identity provider',
  );
  const page =
    failure.kind === 'refused' && failure.providerError === 'invalid_grant'
      ? CODE_REFUSED
      : FAILURE_PAGE[failure.kind];
  return ssoPage(c, FAILURE_STATUS[failure.kind], page);
}

/** The page of a code the provider refused (`invalid_grant`): used already, or its session replaced. */
const CODE_REFUSED = {
  title: 'The identity provider refused the sign-in',
  message:
    'It did not accept this sign-in: it may have been finished already, or a later sign-in of another user in this browser took its place. Start the sign-in again.',
};

/** What each failure's page says: a refusal is not a failed check, nor the proxy's own set-up. */
const FAILURE_PAGE: Record<SsoOidcFailure, { title: string; message: string }> = {
  unavailable: {
    title: 'The identity provider is not reachable',
    message: 'Please try again in a moment; if it keeps failing, tell the administrator.',
  },
  refused: {
    title: 'The identity provider refused the sign-in',
    message: 'Start the sign-in again; if it keeps failing, tell the administrator.',
  },
  misconfigured: {
    title: 'Single sign-on is not set up correctly',
    message:
      "The identity provider refused this server's own access. Tell the administrator (the server's log says what it refused).",
  },
  invalid: {
    title: 'The sign-in could not be verified',
    message: 'The answer of the identity provider did not pass the checks. Start the sign-in again.',
  },
};
