// Generators for the fuzz suite: values from the JSON Schemas of the OpenAPI document the proxy
// serves, and hostile input (wrong types, deep nesting, huge strings, control characters, lone
// surrogates, long, encoded, duplicate and many IDs, odd methods and content types).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Agent, fetch } from 'undici';
import { type ErrorBody, snapshot } from './relation-helpers.js';
import type { UserProxy } from './user-helpers.js';

/** The part of a JSON Schema the generators read. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  maxLength?: number;
  maxItems?: number;
}

/** One operation of the OpenAPI document. */
export interface FuzzOperation {
  method: string;
  /** OpenAPI path below the server URL, e.g. `/Core/Entity/User/{id}`. */
  path: string;
  body?: { mediaType: string; schema: JsonSchema };
}

/** IDs that exist in the sandbox's demo data, so that some requests reach the successor. */
export const KNOWN_IDS = [
  'lena.mueller',
  'jonas.schmidt',
  'thomas.becker',
  'admin',
  'ben.krause',
  'lehrer',
  'schueler',
  'klasse.5a',
  'admins',
  'ROLE_TEACHER',
  'ROLE_ADMIN',
  'core_manage_users',
  'mail_external',
  'has_home',
];

/** Strings a careless or hostile client sends. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0007b',
    '\uD800',
    'x\uDFFFy',
    '\u202Eadmin',
    '../../etc/passwd',
    '%00',
    '%2F..%2F',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4shell-style probe, meant literally
    '${jndi:ldap://x}',
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    'ROLE_ADMIN',
    'a'.repeat(256),
    'é'.repeat(200),
  ),
  fc.integer({ min: 1_000, max: 70_000 }).map((n) => 'x'.repeat(n)),
  fc.constantFrom(...KNOWN_IDS),
);

/** Any JSON value (shallow; {@link deepJson} is deep nesting as text). */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.array(hostileString, { maxLength: 5 }),
  fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 8 }),
);

/** Deeply nested JSON as a body text (as text, so that no generator or printer recurses into it). */
export const deepJson: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom('[', '{"a":'))
  .map(([depth, open]) => `${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}`);

/** A string safe for encodeURIComponent: lone surrogates become U+FFFD (raw bad bytes come from {@link pathId}'s constants). */
function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** Valid-looking values for a schema, with hostile ones mixed in. */
export function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return hostileJson;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return fc.oneof(...variants.map((s) => fromSchema(s, depth + 1)));
  if (schema.enum) return fc.oneof(fc.constantFrom(...schema.enum), hostileString);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const one = (type: string): fc.Arbitrary<unknown> => {
    switch (type) {
      case 'string':
        return fc.oneof(fc.string({ minLength: 1, maxLength: schema.maxLength ?? 40 }), hostileString);
      case 'boolean':
        return fc.oneof(fc.boolean(), fc.constantFrom('true', 1, null));
      case 'integer':
      case 'number':
        return fc.oneof(fc.integer(), fc.double(), fc.constant('1'));
      case 'null':
        return fc.constant(null);
      case 'array':
        return fc.oneof(
          fc.array(fromSchema(schema.items, depth + 1), { maxLength: 12 }),
          manyIds,
          fc.array(fc.constantFrom(...KNOWN_IDS), { maxLength: 6 }),
        );
      case 'object': {
        const properties = schema.properties ?? {};
        const required = new Set(schema.required ?? []);
        return fc.oneof(
          fc.record(
            Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, fromSchema(s, depth + 1)])),
            { requiredKeys: [...required].filter((k) => k in properties) },
          ),
          hostileJson,
        );
      }
      default:
        return hostileJson;
    }
  };
  return types.length === 0 ? hostileJson : fc.oneof(...types.map(one), hostileJson);
}

/** Many IDs, duplicates included (up to past the 1,000 a link body may carry). */
export const manyIds: fc.Arbitrary<string[]> = fc.oneof(
  fc.integer({ min: 900, max: 1_200 }).map((n) => Array.from({ length: n }, (_, i) => `id-${i % 700}`)),
  fc.array(fc.constantFrom('lehrer', 'lehrer', 'schueler'), { minLength: 2, maxLength: 50 }),
);

/** A path parameter value and how it is put into the URL. */
export const pathId: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...KNOWN_IDS).map(encodeURIComponent),
  hostileString.map((s) => encodeURIComponent(wellFormed(s.slice(0, 3_000)))),
  fc.constantFrom('%', '%zz', '%C0%AF', '%ED%A0%80', '%00', '..', '.', '%2e%2e', 'a%2Fb', '%20', '~'),
);

export const oddMethod = fc.constantFrom('PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'PURGE');

export const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=latin1',
  '',
);

/** One request the fuzz suite sends. */
export interface FuzzRequest {
  method: string;
  /** Below the server URL `/iserv/api/Service`. */
  path: string;
  body?: string;
  contentType?: string;
}

/** Encodes a body as the content type says (JSON, form data, or as is). */
export function encodeBody(value: unknown, type: string): string {
  if (typeof value === 'string' && !type.includes('json')) return value;
  if (type.startsWith('application/x-www-form-urlencoded') && value && typeof value === 'object') {
    const pairs: [string, string][] = Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      typeof v === 'string' ? v : (JSON.stringify(v) ?? ''),
    ]);
    return new URLSearchParams(pairs).toString();
  }
  return JSON.stringify(value) ?? 'null';
}

let previous = '';
// A keep-alive client like an integration's: a request refused before its body was read must come
// with `Connection: close`, or the next request on that connection meets a dropped socket.
const agent = new Agent();

/** How long one answer may take before the suite calls it a hang. */
export const ANSWER_BOUND_MS = 20_000;

/**
 * Sends one request and asserts what every answer must be: a 2xx or 4xx within the bound, never
 * a 5xx; a JSON body (the legacy error shape for a 4xx); and for a refused request (4xx) the
 * successor's whole state unchanged.
 */
export async function sendAndCheck(proxy: UserProxy, request: FuzzRequest): Promise<number> {
  const before = snapshot(proxy);
  const headers: Record<string, string> = { authorization: proxy.authorization };
  if (request.contentType !== undefined && request.contentType !== '')
    headers['content-type'] = request.contentType;
  const label = `${request.method} ${request.path.slice(0, 200)} ${request.contentType ?? ''} ${(request.body ?? '').slice(0, 200)}`;
  let response: Response;
  const before_ = previous;
  previous = label;
  try {
    response = await fetch(`${proxy.url}/iserv/api/Service${request.path}`, {
      dispatcher: agent,
      method: request.method,
      headers,
      ...(request.body === undefined || ['GET', 'HEAD'].includes(request.method)
        ? {}
        : { body: request.body }),
      signal: AbortSignal.timeout(ANSWER_BOUND_MS),
    });
  } catch (error) {
    const cause = error instanceof Error ? String(error.cause) : '';
    assert.fail(
      `${label}: no answer within ${ANSWER_BOUND_MS} ms (${String(error)} ${cause}); the request before: ${before_}`,
    );
  }
  const text = await response.text();
  const status = response.status;
  previous = `${label.slice(0, 120)} → ${status} (${(request.body ?? '').length} bytes sent, connection: ${response.headers.get('connection')})`;
  assert.ok(status >= 200 && status < 500, `${label}: ${status} ${text.slice(0, 500)}`);
  if (request.method !== 'HEAD' && status !== 204) {
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/, `${label}: ${status}`);
    const body = JSON.parse(text) as unknown;
    if (status >= 400) {
      const error = body as ErrorBody;
      assert.equal(error.code, status, label);
      assert.equal(typeof error.message, 'string', label);
      assert.ok(text.length < 20_000, `${label}: a ${text.length}-byte error body`);
    }
  }
  if (status >= 400)
    assert.equal(snapshot(proxy), before, `${label}: a refused request changed the successor`);
  return status;
}
