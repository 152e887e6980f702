import type { RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { z } from 'zod';
import { LegacyError, type LegacyErrorItem } from '../http/legacy-error.js';
import { requestText } from '../http/request-body.js';
import { announcesBody, requestHeader } from '../http/request-headers.js';
import { jsonSyntaxMessage } from '../lib/json-syntax.js';
import { QUOTE_MAX_CHARS, quoteList, shorten } from '../lib/quote.js';
import type { ServedAnswer } from '../mapping/engine.js';
import type { AppEnv } from '../services.js';

type HttpMethod = 'get' | 'post' | 'put' | 'delete';

/** A response the operation documents: status → description and (for JSON bodies) schema. */
export type OperationResponses = Record<number, { description: string; schema?: z.ZodType }>;

/** Validated input handed to an operation's handler. */
export interface OperationInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

/**
 * One legacy operation: its contract (method, path, zod schemas, documented responses) and its
 * handler. The same object drives routing, request validation and the OpenAPI document, so an
 * operation that exists is documented and validated by construction.
 */
export interface LegacyOperation<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  /** Stable operation id, e.g. `user.list`, `group.link.users.add`: used in logs, usage inventory and mapping tables. */
  id: string;
  method: HttpMethod;
  /** Path below the namespace root in OpenAPI form, e.g. `/Core/Entity/User/{id}`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  params?: P;
  query?: Q;
  /**
   * The body: JSON (parsed whatever the content type says, as the legacy server did) or form data.
   * `secret`: it carries a password, so the recording and shadow mode's samples keep it only as
   * `[redacted]`, whatever its shape (a misspelt key or a bare string would slip past redaction by
   * key name; `recordedRequestBody` in src/migration/exchange.ts).
   * `notWritable`: fields of the resource (a GET answers them) that the body cannot set; a body
   * that sends them (a GET's answer sent back unchanged as a PUT) is refused naming them not
   * writable, not unknown ({@link fieldsNotIn}).
   */
  body?: {
    kind: 'json' | 'form';
    schema: B;
    required: boolean;
    description?: string;
    secret?: boolean;
    notWritable?: readonly string[];
  };
  /**
   * What the handler hands its mapping operation, when that is not the path's parameters and the
   * body's fields: the names `{params.…}` and `{body.…}` of the operation's steps may use (SSO
   * hands the form's `username` as a parameter, and no body).
   */
  mappingInput?: { params: readonly string[]; bodyFields: readonly string[] };
  /**
   * What the handler takes from its mapping operation (of the same id): the result type its table
   * must answer, and for an entity or list every legacy field the handler may render (all its
   * variants, `?extended` too). A profile that answers otherwise is refused when it loads
   * (`mappings check`, start-up, reload), not at the first call.
   */
  answer: ServedAnswer;
  /**
   * The legacy types of the fields in `answer`, when the operation's own answer is not that entity
   * (SSO reads the user's `deleted` and `locked` and answers a token): else its 200 or 201 answer's
   * schema says them. A profile that gives another type (a `locked` that is no boolean, which the
   * handler would take for "not locked") is refused when it loads.
   */
  answerFields?: z.ZodObject;
  /**
   * The answer carries a password (the password resets' temporary one): the migration tools keep
   * its values only as `[redacted]`, its keys and shape kept for comparison, since an answer from
   * another server could name the password otherwise (`SecretBodies` in src/migration/recording.ts).
   */
  secretAnswer?: boolean;
  responses: OperationResponses;
  handler: (
    c: Context<AppEnv>,
    input: OperationInput<z.output<P>, z.output<Q>, z.output<B>>,
  ) => Response | Promise<Response>;
}

/** Declares an operation with its types inferred from its schemas. */
export function defineOperation<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  operation: LegacyOperation<P, Q, B>,
): LegacyOperation {
  return operation as unknown as LegacyOperation;
}

/** The fields of a resource (`fields`, a GET's) that a body schema (a strict object) does not take. */
export function fieldsNotIn(fields: readonly string[], body: z.ZodObject): string[] {
  return fields.filter((field) => !Object.hasOwn(body.shape, field));
}

/** Converts `/Core/Entity/User/{id}` to Hono's `/Core/Entity/User/:id`. */
export function honoPath(openApiPath: string): string {
  return openApiPath.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}

/** The OpenAPI route config of an operation, for the documentation registry. */
export function openApiRoute(operation: LegacyOperation): RouteConfig {
  const responses: RouteConfig['responses'] = {};
  for (const [status, response] of Object.entries(operation.responses)) {
    responses[status] = response.schema
      ? { description: response.description, content: { 'application/json': { schema: response.schema } } }
      : { description: response.description };
  }
  const request: NonNullable<RouteConfig['request']> = {};
  if (operation.params) request.params = operation.params as NonNullable<typeof request.params>;
  if (operation.query) request.query = operation.query as NonNullable<typeof request.query>;
  if (operation.body) {
    // Form data comes in either encoding (see `readBody`).
    const mediaTypes =
      operation.body.kind === 'json'
        ? ['application/json']
        : ['application/x-www-form-urlencoded', 'multipart/form-data'];
    const schema = operation.body.schema;
    request.body = {
      required: operation.body.required,
      ...(operation.body.description === undefined ? {} : { description: operation.body.description }),
      content: Object.fromEntries(mediaTypes.map((type) => [type, { schema }])),
    };
  }
  return {
    method: operation.method,
    path: operation.path,
    operationId: operation.id,
    summary: operation.summary,
    ...(operation.description === undefined ? {} : { description: operation.description }),
    tags: [operation.tag],
    security: [{ basicAuth: [] }],
    request,
    responses,
  };
}

/**
 * Renders zod issues as the legacy `errors` list, paths prefixed with where the value came from.
 * Keys it does not take are named unknown, or not writable when `notWritable` has them (fields of
 * the resource the part cannot set): one item for each sort.
 */
export function issuesToErrors(
  where: 'body' | 'query' | 'path',
  error: z.ZodError,
  notWritable: readonly string[] = [],
): LegacyErrorItem[] {
  return error.issues.flatMap((issue) => {
    const path = [where, ...issue.path.map((segment) => shorten(String(segment), QUOTE_MAX_CHARS))].join('.');
    if (issue.code !== 'unrecognized_keys')
      return [{ path, message: shorten(issue.message, 2 * QUOTE_MAX_CHARS) }];
    // Keys listed as every list of input is (10, then `and N more`): zod lists them all, and cut
    // to length the list ended in the middle of a key.
    const fixed = issue.keys.filter((key) => notWritable.includes(key));
    const unknown = issue.keys.filter((key) => !notWritable.includes(key));
    const plural = (keys: readonly string[]) => (keys.length === 1 ? '' : 's');
    return [
      ...(fixed.length === 0
        ? []
        : [{ path, message: `Field${plural(fixed)} this call cannot write: ${quoteList(fixed)}` }]),
      ...(unknown.length === 0
        ? []
        : [{ path, message: `Unrecognized key${plural(unknown)}: ${quoteList(unknown)}` }]),
    ];
  });
}

/**
 * A person's words for the input problems zod words for programmers (`Invalid input: expected
 * string, received undefined`, `Too small: expected string to have >=1 characters`): a field left
 * out `is required`, an empty string where one is needed `must not be empty`, a value of another
 * type `must be a string, not a number`. A message the schema gives itself wins over these; for
 * any other problem zod's own wording stays (undefined).
 */
function legacyIssueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    return `must be ${withArticle(issue.expected)}, not ${withArticle(typeName(issue.input))}`;
  }
  if (issue.code === 'too_small' && issue.origin === 'string' && Number(issue.minimum) === 1)
    return 'must not be empty';
  return undefined;
}

/** zod's parse options for a request's parts: made once, not per request. */
const LEGACY_PARSE = { error: legacyIssueMessage } as const;

/** A JSON value's type as a person names it: `null`, `array`, `object`, `string`, `number`, `boolean`. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** `a string`, `an array`, `null`. */
function withArticle(type: string): string {
  if (type === 'null') return 'null';
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}

/**
 * Validates one part of the request, throwing the legacy 400 with every problem listed
 * (`notWritable`: see {@link issuesToErrors}).
 */
export function validatePart<S extends z.ZodType>(
  where: 'body' | 'query' | 'path',
  schema: S | undefined,
  value: unknown,
  notWritable?: readonly string[],
): z.output<S> | undefined {
  if (!schema) return undefined;
  // Parsed as is first: zod gives up its compiled fast path when handed parse options (about a
  // microsecond a parse instead of a tenth), and only a refused part needs the worded messages.
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const worded = schema.safeParse(value, LEGACY_PARSE);
  const error = worded.success ? result.error : worded.error;
  // A path ID that cannot be valid names no entity: 404, as an unknown one.
  if (where === 'path') throw new LegacyError(404, 'No entity with this ID', issuesToErrors(where, error));
  throw new LegacyError(400, `Invalid request ${where}`, issuesToErrors(where, error, notWritable));
}

/**
 * What an operation that takes no body accepts: nothing, blanks, or an empty JSON object or array,
 * which many HTTP clients send with every POST or DELETE (`post(url, {})`, `json => []`) and the
 * old server ignored. Nothing can ride along in them.
 */
const EMPTY_BODY = /^\s*(?:\{\s*\}|\[\s*\])?\s*$/;

/**
 * Reads the request body as the operation declares it; malformed JSON is a legacy 400, and so is
 * any body but an empty one (EMPTY_BODY) sent to an operation that declares none (it is read only
 * up to the body limit, never parsed), so a stray or hostile payload cannot ride along on a DELETE
 * or a restore. Undefined instead of a promise when there is nothing to read: an operation without
 * a body and a request that announces none (asking the headers first spares such a request, every
 * plain GET, the adapter's full fetch Request).
 */
export function readBody(c: Context<AppEnv>, operation: LegacyOperation): Promise<unknown> | undefined {
  if (!operation.body && !announcesBody(c)) return undefined;
  return readAnnouncedBody(c, operation);
}

async function readAnnouncedBody(c: Context<AppEnv>, operation: LegacyOperation): Promise<unknown> {
  const body = operation.body;
  if (!body) {
    if (!EMPTY_BODY.test(await requestText(c))) {
      throw new LegacyError(400, 'This operation takes no request body', [
        { path: 'body', message: 'must be empty' },
      ]);
    }
    return undefined;
  }
  if (body.kind === 'form') {
    const type = requestHeader(c, 'content-type') ?? '';
    if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) {
      if (!body.required) return undefined;
      throw new LegacyError(
        400,
        'Expected form data (application/x-www-form-urlencoded or multipart/form-data)',
      );
    }
    let form: Record<string, unknown>;
    try {
      form =
        type.split(';')[0]?.trim().toLowerCase() === 'application/x-www-form-urlencoded'
          ? urlEncodedForm(await requestText(c))
          : // `all`: a repeated field arrives as an array, for the schema to refuse, not as its last value.
            await c.req.parseBody({ all: true });
    } catch {
      throw new LegacyError(400, 'Malformed form data in request body', [
        { path: 'body', message: 'cannot be parsed' },
      ]);
    }
    // File parts stay as they came (File objects): a strict schema refuses one under an unknown
    // name, and a field schema built with `formText` says a known field must be text. Dropped
    // here, an extra field sent as a file went unnoticed, which a URL-encoded one never does.
    return form;
  }
  const text = await requestText(c);
  if (text.trim() === '') {
    if (!body.required) return undefined;
    throw new LegacyError(400, 'A JSON request body is required', [{ path: 'body', message: 'missing' }]);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    // Described by position only: the parser's message quotes the body, maybe a password.
    throw new LegacyError(400, 'Malformed JSON in request body', [
      { path: 'body', message: jsonSyntaxMessage(error) },
    ]);
  }
}

/**
 * The schema of a text field of a form body: a string, with messages for what only forms send
 * (missing: "is required"; repeated or `name[]`: "must be given once"; a multipart file part:
 * "must be a text field, not a file"). Refine it as any string schema (`.min(1)`, …).
 */
export function formText(): z.ZodString {
  return z.string({
    error: (issue) =>
      issue.input === undefined
        ? 'is required'
        : Array.isArray(issue.input)
          ? 'must be given once'
          : issue.input instanceof Blob
            ? 'must be a text field, not a file'
            : undefined,
  });
}

/**
 * A URL-encoded form body as hono's `parseBody({ all: true })` gives it (a repeated field, or one
 * named `x[]`, as an array), split by URLSearchParams: hono would make a fetch Response of the
 * bytes and ask it for FormData (a web stream and undici's body mixin), about a tenth of an SSO
 * call's CPU. Multipart bodies still go through hono.
 */
function urlEncodedForm(text: string): Record<string, string | string[]> {
  const form: Record<string, string | string[]> = Object.create(null);
  for (const [key, value] of new URLSearchParams(text)) {
    const seen = form[key];
    if (seen === undefined) form[key] = key.endsWith('[]') ? [value] : value;
    else if (Array.isArray(seen)) seen.push(value);
    else form[key] = [seen, value];
  }
  return form;
}

/**
 * The query of a list: `extended`, which seed 4 declares "a query parameter of type object" and
 * which counts by its presence alone, in any form ({@link hasExtended}). Documented as the object
 * (deepObject style: `extended[key]=value`) or the plain value the proxy takes; the bytes of a
 * URL query are only ever strings, so the object's values are too. `effect`: what it changes.
 */
export function extendedQuery(effect: string) {
  return z.object({
    extended: z
      .union([z.string(), z.record(z.string(), z.string())])
      .optional()
      .meta({
        description: `${effect}. Only its presence counts, whatever its value and in any form: \`extended\`, \`extended=1\`, \`extended[]=\` or as an object, \`extended[all]=1\``,
        param: { style: 'deepObject', explode: true },
      }),
  });
}

/**
 * True when the list query parameter `extended` is present in any form the legacy API accepted:
 * `?extended`, `?extended=1`, `?extended[]=`, `?extended[x]=y`.
 */
export function hasExtended(c: Context<AppEnv>): boolean {
  const url = new URL(c.req.url);
  for (const key of url.searchParams.keys()) {
    if (key === 'extended' || key.startsWith('extended[')) return true;
  }
  return false;
}
