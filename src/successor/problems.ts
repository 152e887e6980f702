import { redactText } from '../lib/redact.js';
import { isReadMethod, UpstreamError, type UpstreamViolation } from './errors.js';
import type { HeaderLookup } from './http.js';

/** How the failed call was authenticated, so 401/403 messages can say what to fix. */
export type AuthContext =
  | { type: 'oauth2'; issuer: string; clientId: string; access: 'read' | 'write'; scopes: readonly string[] }
  | { type: 'apiKey'; header: string };

/** A non-2xx answer of the successor API, body already read. */
export interface FailedResponse {
  method: string;
  /** URL path of the call (no query), for messages. */
  path: string;
  status: number;
  headers: HeaderLookup;
  text: string;
}

/** Translates a non-2xx successor response into the UpstreamError the rest of the proxy handles. */
export function responseError(response: FailedResponse, auth: AuthContext): UpstreamError {
  const { method, path, status } = response;
  const where = `${method} ${path}`;
  const problem = parseProblem(response.text);
  const said = problem.detail === undefined ? '' : `: ${problem.detail}`;
  const base = { source: 'api' as const, status, method, path };

  if (status === 400 || status === 422) {
    const listed = problem.violations
      .map((v) => (v.path === '' ? v.message : `${v.path}: ${v.message}`))
      .join('; ');
    const reason = listed === '' ? said : `: ${listed}`;
    return new UpstreamError('validation', `the successor rejected ${where} (${status})${reason}`, {
      ...base,
      violations: problem.violations,
      ...(problem.detail === undefined ? {} : { detail: problem.detail }),
    });
  }
  if (status === 404 || status === 410) {
    return new UpstreamError('not_found', `the successor has no ${path} (${where} → ${status})${said}`, base);
  }
  if (status === 409) {
    return new UpstreamError('conflict', `the successor refused ${where} with a conflict (409)${said}`, {
      ...base,
      violations: problem.violations,
      ...(problem.detail === undefined ? {} : { detail: problem.detail }),
    });
  }
  if (status === 401) {
    const message =
      auth.type === 'oauth2'
        ? `the successor rejected the access token of client ${auth.clientId} (${where} → 401, also with a newly issued token)${said}; check the client credentials and that the IDM API trusts tokens from ${auth.issuer}`
        : `the successor rejected the API key sent in header ${auth.header} (${where} → 401)${said}; check successor.auth.key`;
    return new UpstreamError('unauthorized', message, base);
  }
  if (status === 403) return forbidden(response, auth, problem);
  if (status === 408) {
    return new UpstreamError('timeout', `the successor timed out ${where} (408)${said}`, base);
  }
  if (status === 429 || status >= 500) {
    const retryAfter = response.headers.get('retry-after');
    const hint = retryAfter === null ? '' : ` (retry after ${retryAfter})`;
    if (status === 429) {
      // A refusal for now, not a failure: the legacy 503 passes on when to try again.
      return new UpstreamError(
        'unavailable',
        `the successor refused ${where} for now: too many requests (429)${said}${hint}`,
        { ...base, ...(retryAfter === null ? {} : { retryAfter }) },
      );
    }
    return new UpstreamError(
      'unavailable',
      `the successor failed ${where} with ${status}${said}${hint}`,
      base,
    );
  }
  if (status >= 300 && status < 400) {
    const location = response.headers.get('location');
    return new UpstreamError(
      'bad_response',
      `the successor redirected ${where} (${status}${location === null ? '' : ` to ${location}`}); check successor.baseUrl (scheme, host and path)`,
      base,
    );
  }
  if (status === 414 || status === 431) {
    return new UpstreamError(
      'bad_response',
      `the successor refused ${where}: its URL or headers are too long (${status}); for the ID filter queries of link bodies lower successor.maxIdBytesPerQuery in the mapping profile's profile.json`,
      base,
    );
  }
  // 405, 406, 415 and friends: the request does not fit this successor, a mapping or
  // configuration problem rather than bad input from the legacy client.
  return new UpstreamError(
    'bad_response',
    `the successor does not accept ${where} (${status})${said}; check the mapping tables against the successor's API`,
    base,
  );
}

function forbidden(response: FailedResponse, auth: AuthContext, problem: Problem): UpstreamError {
  const { method, path, status } = response;
  const where = `${method} ${path}`;
  const said = problem.detail === undefined ? '' : `: ${problem.detail}`;
  const base = { source: 'api' as const, status, method, path };
  const challenge = parseBearerChallenge(response.headers.get('www-authenticate'));
  // A Bearer challenge, a bare 403 without a problem body, or a refused read is about the
  // client's permissions; a problem document without a challenge refusing a write is the
  // successor refusing the operation itself (protected entities), which the legacy API answers
  // with its own 403 ("may not be deleted / updated": never a read).
  const permission = challenge !== undefined || problem.detail === undefined || isReadMethod(method);
  if (auth.type === 'apiKey' || !permission) {
    const who = auth.type === 'apiKey' ? ' for the API key' : '';
    return new UpstreamError('forbidden', `the successor refused ${where} (403)${who}${said}`, base);
  }
  const scope = challenge?.scope ?? auth.scopes.join(' ');
  return new UpstreamError(
    'forbidden',
    `the successor refused ${where} (403): the client lacks scope ${scope}; grant it to client ${auth.clientId} at ${auth.issuer} or configure successor.auth.scopes.${auth.access}`,
    { ...base, scope },
  );
}

interface Problem {
  detail: string | undefined;
  violations: UpstreamViolation[];
}

/** Reads an RFC 7807 / API Platform error body; anything unparseable yields no detail. */
export function parseProblem(text: string): Problem {
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    return { detail: undefined, violations: [] };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { detail: undefined, violations: [] };
  const record = body as Record<string, unknown>;
  const detail = firstString(record, [
    'detail',
    'hydra:description',
    'description',
    'title',
    'hydra:title',
    'message',
  ]);
  const violations: UpstreamViolation[] = [];
  if (Array.isArray(record.violations)) {
    for (const item of record.violations) {
      if (typeof item !== 'object' || item === null) continue;
      const entry = item as Record<string, unknown>;
      const message = typeof entry.message === 'string' ? entry.message : undefined;
      if (message === undefined) continue;
      const path = typeof entry.propertyPath === 'string' ? entry.propertyPath : '';
      violations.push({ path, message });
    }
  }
  // Redacted before it is cut: a secret cut in two (a URL's password without its `@`) would no
  // longer be recognised.
  return { detail: detail === undefined ? undefined : truncate(redactText(detail), 500), violations };
}

function firstString(record: Record<string, unknown>, keys: string[]): string | undefined {
  for (const key of keys) {
    const value = record[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** The `error` and `scope` parameters of a `WWW-Authenticate: Bearer …` header, if it is one. */
export function parseBearerChallenge(header: string | null): { error?: string; scope?: string } | undefined {
  if (header === null || !/^\s*Bearer\b/i.test(header)) return undefined;
  const param = (name: string) => new RegExp(`\\b${name}="([^"]*)"`, 'i').exec(header)?.[1];
  const error = param('error');
  const scope = param('scope');
  return {
    ...(error === undefined ? {} : { error }),
    ...(scope === undefined || scope === '' ? {} : { scope }),
  };
}
