import type { Context } from 'hono';
import type { AppEnv } from '../services.js';

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** Statuses the browser-facing SSO pages answer with. */
export type SsoPageStatus = 200 | 400 | 403 | 410 | 500 | 502 | 503 | 504;

/** The server errors a failure of an SSO page may carry (the legacy statuses of the proxy's own failures). */
const SERVER_ERRORS = new Set<number>([500, 502, 503, 504]);

/**
 * The page of a failure no SSO handler answered itself (the store unreachable while a token is
 * used, an unexpected error): the visitor is a browser, so the SSO page with its headers instead
 * of the legacy JSON body, with the status (and `Retry-After`) the failure has. Undefined for a
 * status that is no server error (the JSON answer stands).
 */
export function ssoServerErrorPage(
  c: Context<AppEnv>,
  status: number,
  headers: Record<string, string> | undefined,
): Response | undefined {
  if (!SERVER_ERRORS.has(status)) return undefined;
  const page = ssoPage(c, status as SsoPageStatus, {
    title: 'Sign-in is not available right now',
    message: 'Please try again in a moment; if it keeps failing, tell the administrator.',
  });
  for (const [name, value] of Object.entries(headers ?? {})) page.headers.set(name, value);
  return page;
}

/**
 * A small self-contained HTML page for the browser that follows an SSO link: no scripts, no
 * external assets, never cached, no referrer, and no secret (token, code, state) in it.
 */
export function ssoPage(
  c: Context<AppEnv>,
  status: SsoPageStatus,
  page: { title: string; message: string; detail?: string },
): Response {
  const detail = page.detail === undefined ? '' : `\n<p class="detail">${escapeHtml(page.detail)}</p>`;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(page.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}.detail{color:#666;font-size:.9rem}</style>
</head>
<body>
<h1>${escapeHtml(page.title)}</h1>
<p>${escapeHtml(page.message)}</p>${detail}
</body>
</html>
`;
  return c.html(html, status, securityHeaders());
}

/** Headers of every SSO response: the URLs carry single-use secrets, so nothing is cached or leaked. */
export function securityHeaders(): Record<string, string> {
  return {
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  };
}
