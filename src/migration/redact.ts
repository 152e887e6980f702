/**
 * Redaction of recorded exchanges and compare reports: no credentials, passwords or SSO tokens
 * ever reach a file. Applied to whole values, at any nesting depth.
 */

/** What every secret is replaced with. */
export const REDACTED = '[redacted]';

// Keys whose values are secrets wherever they occur: passwords (request bodies and the temporary
// passwords in answers), SSO and OAuth tokens, Authorization headers, client secrets, API keys.
const SECRET_KEY = /pass(word|wd)|secret|token|authori[sz]ation|api[-_]?key/i;
// Credentials that show up as string values: `Basic …`/`Bearer …` header values, and tokens in
// URLs such as the SSO `return_to` (`…/sso/continue?token=…`).
const AUTH_VALUE = /^\s*(basic|bearer)\s+\S+/i;
const URL_SECRET = /([?&#;](?:[\w-]*(?:token|password|passwd|secret)[\w-]*)=)[^&#\s"]*/gi;

/** Whether values under `key` are secrets. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** Redacts secrets inside one string: credentials and token-like URL parameters. */
export function redactString(value: string): string {
  if (AUTH_VALUE.test(value)) return REDACTED;
  return value.replace(URL_SECRET, `$1${REDACTED}`);
}

/** Redacts a raw query string (`a=1&token=…`): values of secret parameters. */
export function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      let key = pair.slice(0, eq);
      try {
        key = decodeURIComponent(key.replace(/\+/g, ' '));
      } catch {
        // A malformed escape: judge the key as written.
      }
      return isSecretKey(key) ? `${pair.slice(0, eq)}=${REDACTED}` : redactString(pair);
    })
    .join('&');
}

/** A copy of a JSON-like value with every secret replaced by {@link REDACTED}. */
export function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redactString(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] = isSecretKey(key) && inner !== null && inner !== undefined ? REDACTED : redactValue(inner);
    }
    return out;
  }
  return value;
}
