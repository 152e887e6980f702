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
export type SsoPageStatus = 200 | 400 | 403 | 410 | 502;

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
