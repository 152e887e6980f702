import { isUtf8 } from 'node:buffer';
import { MIMEType } from 'node:util';
import { decodedSegment } from '../lib/path-segment.js';
import { isSecretKey, REDACTED, secretStrings } from '../lib/redact.js';
import { decodedAnswer } from './answer-decoding.js';
import type { RecordedExchange } from './recording.js';

/** The request half of a recorded exchange, as derived from what arrived on the wire. */
export type RecordedRequest = Pick<
  RecordedExchange,
  'path' | 'query' | 'requestFormat' | 'requestBody' | 'requestBodyOmitted'
>;

/** What the recording keeps of a request's body. */
type RecordedBody = Pick<RecordedExchange, 'requestFormat' | 'requestBody' | 'requestBodyOmitted'>;

const FORM = /^(application\/x-www-form-urlencoded|multipart\/form-data)/i;

/**
 * Splits a request URL into the recorded `path` (below `basePath`) and raw `query`. A path
 * outside the base path is kept whole. The base path is matched as the request matched it,
 * segment by segment decoded (`/iserv/%61pi` is `/iserv/api`): kept whole, a replay sent such a
 * path below the target's base path again and got a 404.
 */
export function recordedLocation(url: string, basePath: string): Pick<RecordedExchange, 'path' | 'query'> {
  const parsed = new URL(url, 'http://localhost');
  const base = basePath.replace(/\/+$/, '').split('/').slice(1);
  const segments = parsed.pathname.split('/').slice(1);
  const under =
    base.length > 0 &&
    base.length <= segments.length &&
    base.every((segment, index) => decodedSegment(segments[index] ?? '') === segment);
  const below = under ? `/${segments.slice(base.length).join('/')}` : parsed.pathname;
  return { path: below, query: parsed.search.replace(/^\?/, '') };
}

const MULTIPART = /^multipart\/form-data/i;

function parseJson(text: string): Pick<RecordedExchange, 'requestFormat' | 'requestBody'> | undefined {
  try {
    return { requestBody: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

async function parseForm(
  contentType: string,
  body: string | Uint8Array,
): Promise<Pick<RecordedExchange, 'requestFormat' | 'requestBody'>> {
  try {
    const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
    // A Map, then data properties: on a plain object `name in fields` is true for `toString` or
    // `__proto__` (inherited), and assigning `__proto__` sets the prototype; both lost the field.
    const fields = new Map<string, string>();
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string' && !fields.has(name)) fields.set(name, value);
    }
    return { requestFormat: 'form', requestBody: Object.fromEntries(fields) };
  } catch {
    return { requestFormat: 'form', requestBody: null };
  }
}

/**
 * The recorded body of a request (not yet redacted): the JSON it parses to, or its form fields
 * as an object (string fields only, the first of a repeated name), else null: with
 * `requestBodyOmitted: "unreadable"` when there was a body, not blank, that is none of these
 * (bytes that are not UTF-8 included, which the proxy refuses with 400), so that `replay` does not
 * send the request without it. `kind` is what the operation reads; without it, multipart is a
 * form, a URL-encoded body that is valid JSON is JSON (legacy clients such as `curl -d` send JSON
 * under the form content type), else a form.
 */
export async function recordedBody(
  contentType: string | undefined,
  body: string | Uint8Array | undefined,
  kind?: 'json' | 'form',
): Promise<RecordedBody> {
  if (body === undefined || body.length === 0) return { requestBody: null };
  // Decoded leniently, a Latin-1 `ü` became U+FFFD and `replay --writes` sent a write the
  // proxy had refused.
  if (typeof body !== 'string' && !isUtf8(body))
    return {
      ...(kind === 'form' ? { requestFormat: 'form' } : {}),
      requestBody: null,
      requestBodyOmitted: 'unreadable',
    };
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  if (text.trim() === '') return { requestBody: null };
  const parsed = await parsedBody(contentType ?? '', text, body, kind);
  return parsed.requestBody === null ? { ...parsed, requestBodyOmitted: 'unreadable' } : parsed;
}

async function parsedBody(
  type: string,
  text: string,
  body: string | Uint8Array,
  kind: 'json' | 'form' | undefined,
): Promise<RecordedBody> {
  if (kind === 'json') return parseJson(text) ?? { requestBody: null };
  if (kind === 'form')
    return FORM.test(type) ? parseForm(type, body) : { requestFormat: 'form', requestBody: null };
  if (MULTIPART.test(type)) return parseForm(type, body);
  const json = parseJson(text);
  if (json) return json;
  return FORM.test(type) ? parseForm(type, body) : { requestBody: null };
}

/** Parses an answer body for a recording: its JSON, or null (empty or not JSON). */
export function recordedAnswer(text: string): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** Answers larger than this are recorded without their body (`responseBody: null`, `responseBodyOmitted: "too-large"`). */
export const RECORDED_ANSWER_MAX_BYTES = 8 * 1024 * 1024;

/**
 * An answer's body parsed for a recording: its JSON, or null when it is empty or not JSON. Past
 * `cap` bytes reading stops and the body is cancelled (a web stream) or destroyed (a Node stream)
 * instead of held; the body is then null with `responseBodyOmitted: "too-large"`, so that
 * `compare` does not take two answers too large to keep for two equal empty ones. A body with a
 * `contentEncoding` (an old server that gzips though asked not to) is read decoded, the cap
 * counting the decoded bytes too; one that does not decode is null with `"undecodable"`.
 */
export async function cappedAnswer(
  body: AsyncIterable<Uint8Array> | null,
  contentEncoding?: string,
  cap = RECORDED_ANSWER_MAX_BYTES,
): Promise<Pick<RecordedExchange, 'responseBody' | 'responseBodyOmitted'>> {
  if (!body) return { responseBody: null };
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    // Leaving the loop cancels or destroys the body.
    if (size > cap) return { responseBody: null, responseBodyOmitted: 'too-large' };
    chunks.push(chunk);
  }
  return answerBody(Buffer.concat(chunks), contentEncoding, cap);
}

/**
 * A whole answer's bytes as recorded or compared: decoded by its Content-Encoding (at most `cap`
 * bytes of it), then parsed as {@link recordedAnswer} does.
 */
export async function answerBody(
  bytes: Buffer,
  contentEncoding: string | undefined,
  cap = RECORDED_ANSWER_MAX_BYTES,
): Promise<Pick<RecordedExchange, 'responseBody' | 'responseBodyOmitted'>> {
  const decoded = await decodedAnswer(bytes, contentEncoding, cap);
  if (typeof decoded === 'string') return { responseBody: null, responseBodyOmitted: decoded };
  return { responseBody: recordedAnswer(decoded.toString('utf8')) };
}

/** What {@link recordedRequest} needs of a legacy operation: how it reads its body, and whether the body is a secret. */
export interface RecordedOperation {
  body?: { kind: 'json' | 'form'; secret?: boolean } | undefined;
}

/** A request body as recorded, and the secrets it carried (never recorded). */
export interface RecordedRequestParts {
  recorded: RecordedBody;
  /**
   * The body's secrets (`secretStrings`: every string of a password operation's body, else those
   * under a secret's key), to be left out of its recorded or compared answer (`withoutSecrets`):
   * a refusal may repeat the new password.
   */
  secrets: string[];
}

/**
 * The request body as the recording and shadow mode's samples keep it (not yet redacted by key
 * name), and its secrets, from one parse: for an operation whose body is a secret (`body.secret`:
 * the password operations) a non-empty body is a whole `"[redacted]"`, whatever its shape, since a
 * misspelt key (`{"pass": …}`) or a bare string (`["…"]`) would slip past redaction by key name;
 * else {@link recordedBody} with the operation's body kind. `operation` is undefined for a request
 * that matched none.
 */
export async function recordedRequest(
  operation: RecordedOperation | undefined,
  contentType: string | undefined,
  body: string | Uint8Array | undefined,
): Promise<RecordedRequestParts> {
  const parsed = await recordedBody(contentType, body, operation?.body?.kind);
  const whole = operation?.body?.secret === true;
  const secrets =
    parsed.requestBody === null && body !== undefined && body.length > 0
      ? await rawBodySecrets(contentType, body, whole)
      : secretStrings(parsed.requestBody, whole);
  if (!whole || body === undefined || body.length === 0) return { recorded: parsed, secrets };
  return { recorded: { requestBody: REDACTED }, secrets };
}

/**
 * The secrets of a body the operation could not read (not JSON where it reads JSON, or not UTF-8),
 * which an old server in passthrough may have read all the same and repeat in its refusal: PHP
 * reads a form as well as JSON (`password=…`, what `curl -d` sends), in the charset the request
 * declares (Latin-1), and a multipart form (`curl -F`) by its parts. Each reading of the bytes
 * (UTF-8, the declared charset, Latin-1) as JSON, or else as a form, and a multipart body's text
 * parts, give the values under a secret's key; `whole` (a password operation's body): every value,
 * and the whole text, since the password may be all of it.
 */
async function rawBodySecrets(
  contentType: string | undefined,
  body: string | Uint8Array,
  whole: boolean,
): Promise<string[]> {
  const found = new Set<string>();
  if (contentType !== undefined && MULTIPART.test(contentType)) {
    for (const secret of secretStrings(await multipartValues(contentType, body, whole), true))
      found.add(secret);
  }
  for (const reading of readings(contentType, body)) {
    const text = reading.trim();
    const values: string[] = whole ? [text] : [];
    const json = parseJson(text);
    if (json) for (const secret of secretStrings(json.requestBody, whole)) found.add(secret);
    else if (text.includes('='))
      for (const [name, value] of new URLSearchParams(text))
        if (whole || isSecretKey(name)) values.push(value);
    for (const secret of secretStrings(values, true)) found.add(secret);
  }
  return [...found];
}

/**
 * The values of a multipart body's parts under a secret's name (`whole`: of every part), a file's
 * text too (`curl -F password=@file`, which keeps a password off the command line) up to
 * MAX_SECRET_FILE_BYTES, as sent and without its last line break; none when it does not parse.
 */
async function multipartValues(
  contentType: string,
  body: string | Uint8Array,
  whole: boolean,
): Promise<string[]> {
  let form: FormData;
  try {
    form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  } catch {
    return [];
  }
  const values: string[] = [];
  for (const [name, value] of form.entries()) {
    if (!whole && !isSecretKey(name)) continue;
    if (typeof value === 'string') values.push(value);
    else if (value.size <= MAX_SECRET_FILE_BYTES) {
      const text = await value.text();
      values.push(text, text.replace(/\r?\n$/, ''));
    }
  }
  return values;
}

/** A file part larger than this is no password: not looked for in the answer. */
const MAX_SECRET_FILE_BYTES = 4096;

/** A body's texts as a server may have read it: UTF-8, and bytes that are not in the charset the request names and in Latin-1. */
function readings(contentType: string | undefined, body: string | Uint8Array): string[] {
  if (typeof body === 'string') return [body];
  const texts = new Set([new TextDecoder().decode(body)]);
  if (!isUtf8(body)) {
    texts.add(Buffer.from(body).toString('latin1'));
    const charset = declaredCharset(contentType);
    if (charset !== undefined) {
      try {
        texts.add(new TextDecoder(charset).decode(body));
      } catch {
        // A charset TextDecoder does not know: the readings above.
      }
    }
  }
  return [...texts];
}

/** The `charset` parameter of a Content-Type, if it has one that parses. */
function declaredCharset(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  try {
    return new MIMEType(contentType).params.get('charset') ?? undefined;
  } catch {
    return undefined;
  }
}

/** {@link recordedRequest}'s body alone. */
export async function recordedRequestBody(
  operation: RecordedOperation | undefined,
  contentType: string | undefined,
  body: string | Uint8Array | undefined,
): Promise<RecordedBody> {
  return (await recordedRequest(operation, contentType, body)).recorded;
}
