import type { Context, Handler } from 'hono';
import { answerOut, cutAnswer } from '../http/answer-out.js';
import { LegacyError, methodNotAllowed, noSuchPath } from '../http/legacy-error.js';
import { legacyLinkOrigin } from '../http/public-url.js';
import { requestHeader } from '../http/request-headers.js';
import { requestLog } from '../http/request-log.js';
import type { Translator } from '../http/translator.js';
import { secretStrings, withoutSecrets } from '../lib/redact.js';
import { answerBody, recordedAnswer, recordedLocation, recordedRequest } from '../migration/exchange.js';
import { type ForwardedRequest, timedOut, type UpstreamAnswer } from '../migration/legacy-upstream.js';
import type { AppEnv, Services } from '../services.js';
import { readBody, validatePart } from './operation.js';
import type { MatchedOperation } from './operation-table.js';

/**
 * The last step below the legacy base path: serves the operation the pipeline matched before
 * authentication in its migration mode — `translate` (its path parameters, query and body
 * validated by the operation's schemas, then its handler), `passthrough` (forwarded unchanged to
 * the old server), `shadow` (answered by the old server, translated in the background and
 * compared) — or answers 405 with `Allow` for a known path asked with another method, and
 * 404 for anything else. Until this step nothing has read the body, so the raw request
 * (`c.req.raw`) is still whole here.
 */
export function createLegacyDispatch(translator: Translator): Handler<AppEnv> {
  // Not an async function: it hands the mode's promise on instead of wrapping it in one more (hono
  // catches what it throws as it catches a rejection).
  return function dispatchLegacy(c) {
    const match = c.get('match');
    if (match?.kind === 'method') throw methodNotAllowed(c.req.method, match.allowed);
    if (match?.kind !== 'operation') throw noSuchPath(c.req.path, match?.withoutSlash);
    const services = c.get('services');
    const id = match.matched.operation.id;
    const mode = services.migration.modes.current().modeOf(id);
    services.observer.modeRequest(id, mode);
    if (mode === 'passthrough') return passThrough(c, services);
    if (mode === 'shadow') return shadowed(c, services, match.matched, translator);
    return runOperation(c, match.matched);
  };
}

/** Runs an operation's translation: input validated by its schemas, then its handler. */
export async function runOperation(c: Context<AppEnv>, matched: MatchedOperation): Promise<Response> {
  const { operation } = matched;
  const params = validatePart('path', operation.params, matched.params);
  // The query is parsed only for an operation that has one to validate.
  const query = operation.query ? validatePart('query', operation.query, c.req.query()) : undefined;
  // Nothing to read is not waited for (a GET without a body: no promise, no turn of the loop).
  const reading = readBody(c, operation);
  const body = validatePart(
    'body',
    operation.body?.schema,
    reading === undefined ? undefined : await reading,
    operation.body?.notWritable,
  );
  if (body !== undefined) {
    // Left out of an error answer that repeats one (renderLegacyError).
    const secrets = secretStrings(body, operation.body?.secret === true);
    if (secrets.length > 0) c.set('requestSecrets', secrets);
  }
  // An answer that carries a secret (the temporary password of a reset) is kept by no cache, as
  // the SSO token's answer is.
  if (operation.secretAnswer) c.header('Cache-Control', 'no-store');
  const response = await operation.handler(c, { params, query, body });
  // The seed: every operation responds with application/json. The answers with a body carry it
  // (`c.json`, the streamed lists); the empty 204s get it here (without it the Node adapter would
  // label them text/plain). Only they are asked: asking an answer for its headers makes hono's
  // lightweight response build a fetch `Headers`.
  if (response.status === 204 && !response.headers.has('content-type'))
    response.headers.set('Content-Type', 'application/json');
  return response;
}

/** The request as it came, for the old server: method, path below the base path, query, body bytes, types. */
async function forwardedRequest(c: Context<AppEnv>, basePath: string): Promise<ForwardedRequest> {
  const url = new URL(c.req.url);
  const body =
    c.req.method === 'GET' || c.req.method === 'HEAD' ? undefined : new Uint8Array(await c.req.arrayBuffer());
  return {
    method: c.req.method,
    // The raw path below the base path, as the recording keeps it (the request matched the base
    // path decoded, so its raw spelling may differ, e.g. `/iserv/%61pi`).
    path: recordedLocation(c.req.url, basePath).path,
    search: url.search,
    body,
    contentType: requestHeader(c, 'content-type'),
    accept: requestHeader(c, 'accept'),
  };
}

/** Forwards the request unchanged to the old server and streams its answer back (status, body, content type). */
async function passThrough(c: Context<AppEnv>, services: Services): Promise<Response> {
  const legacy = services.migration.legacy;
  // The configuration check refuses passthrough without migration.legacy; this guards a bug.
  if (!legacy) throw new LegacyError(500, 'passthrough needs migration.legacy');
  let answer: Awaited<ReturnType<typeof legacy.forward>>;
  try {
    answer = await legacy.forward(
      await forwardedRequest(c, services.config.legacy.basePath),
      c.req.raw.signal,
    );
  } catch (error) {
    services.observer.legacyUpstreamCall(0);
    throw error;
  }
  services.observer.legacyUpstreamCall(answer.status);
  return streamedAnswer(c, services, answer);
}

/** The old server's answer for the caller, its body streamed through as it comes. */
function streamedAnswer(c: Context<AppEnv>, services: Services, answer: UpstreamAnswer): Response {
  const empty = bodiless(answer.status, c.req.method);
  if (empty) answer.body.resume();
  else {
    // The old server's body is streamed through: the request is done (its log line, its duration)
    // once the answer has left, not when it starts.
    const out = answerOut(c);
    if (out) c.set('streaming', out);
  }
  return new Response(empty ? null : streamedThrough(c, services, answer), {
    status: answer.status,
    headers: answerHeaders(c, services, answer),
  });
}

/**
 * The old server's body as the caller's, chunk by chunk as it comes. One that breaks off (its
 * connection lost, or the total timeout reached while it streams) is logged once, at error level,
 * and the caller's connection is cut (the body arrives without its end; the status, already sent,
 * says nothing of it), as a translated list cut off by a failed page is: the connection first, so
 * that the Node adapter, its reader cancelled, never sees the failure (it would print it on
 * stderr). A caller that went away first is no failure of the old server's.
 */
function streamedThrough(
  c: Context<AppEnv>,
  services: Services,
  answer: UpstreamAnswer,
): ReadableStream<Uint8Array> {
  const chunks = answer.body[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let next: IteratorResult<unknown>;
        try {
          next = await chunks.next();
        } catch (error) {
          const late = timedOut(error, answer.deadline);
          if (!c.req.raw.signal.aborted || late) {
            const totalMs = services.config.migration.legacy?.timeouts.totalMs;
            requestLog(c).error(
              { err: error, operation: c.get('operation') },
              late
                ? `old server's answer cut off: it sent nothing for ${totalMs} ms (migration.legacy.timeouts.totalMs)`
                : "old server's answer cut off: it broke off",
            );
          }
          await cutAnswer(c);
          controller.error(error);
          return;
        }
        if (next.done) controller.close();
        else controller.enqueue(next.value as Uint8Array);
      },
      async cancel() {
        await chunks.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/** Whether an answer has no body to send (HTTP forbids one, or the request was HEAD). */
function bodiless(status: number, method: string): boolean {
  return status === 204 || status === 205 || status === 304 || method === 'HEAD';
}

/**
 * The old server's headers for the caller: its content type and the forwarded ones, with a
 * `Location` below the old server's base moved to the proxy's (the caller never talks to the old
 * server itself).
 */
function answerHeaders(
  c: Context<AppEnv>,
  services: Services,
  answer: UpstreamAnswer,
): Record<string, string> {
  const headers: Record<string, string> = { ...answer.headers };
  if (answer.contentType !== undefined) headers['content-type'] = answer.contentType;
  const oldBase = services.config.migration.legacy?.baseUrl.replace(/\/+$/, '');
  const location = headers.location;
  if (location !== undefined && oldBase !== undefined && location.startsWith(oldBase)) {
    headers.location = `${legacyLinkOrigin(c)}${services.config.legacy.basePath}${location.slice(oldBase.length)}`;
  }
  return headers;
}

/**
 * Shadow mode: the caller gets the old server's answer as in passthrough (read whole, so that it
 * can be compared), and the translation of the same request is handed to the shadow runner,
 * which decides whether to run it (sampling, writes, concurrency) and never delays this answer.
 * An answer too large to read whole is streamed to the caller and not compared; so is one whose
 * compression cannot be read (answer-decoding.ts, decoded by the shadow runner, off this path).
 */
async function shadowed(
  c: Context<AppEnv>,
  services: Services,
  matched: MatchedOperation,
  translator: Translator,
): Promise<Response> {
  const { legacy, shadow } = services.migration;
  if (!legacy || !shadow) throw new LegacyError(500, 'shadow needs migration.legacy');
  const basePath = services.config.legacy.basePath;
  const forwarded = await forwardedRequest(c, basePath);
  let answer: Awaited<ReturnType<typeof legacy.forwardBuffered>>;
  try {
    answer = await legacy.forwardBuffered(forwarded, c.req.raw.signal);
  } catch (error) {
    services.observer.legacyUpstreamCall(0);
    throw error;
  }
  services.observer.legacyUpstreamCall(answer.status);
  if (answer.bytes === undefined) {
    // Larger than the comparison cap: the caller gets the whole answer as in passthrough,
    // streamed, and the comparison is counted as skipped.
    shadow.countSkipped(matched.operation.id);
    return streamedAnswer(c, services, answer);
  }
  const apiUser = c.get('apiUser') ?? '';
  const requestId = c.get('requestId');
  const log = requestLog(c);
  const location = recordedLocation(c.req.url, basePath);
  // Kept in a mismatch sample: a password operation's body only as a whole [redacted]; its
  // secrets left out of both answers, should one repeat them.
  const {
    recorded: { requestBody },
    secrets: requestSecrets,
  } = await recordedRequest(matched.operation, forwarded.contentType, forwarded.body);
  // And the proxy's own credentials at the old server, should it repeat them.
  const secrets = [...requestSecrets, ...legacy.ownSecrets];
  const copy = {
    method: c.req.method,
    headers: forwarded.contentType === undefined ? undefined : { 'content-type': forwarded.contentType },
    body: forwarded.body,
  };
  const { bytes, status } = answer;
  shadow.submit({
    operation: matched.operation.id,
    apiUser,
    requestId,
    method: c.req.method,
    path: location.path,
    query: location.query,
    requestBody,
    write: matched.operation.method !== 'get',
    // Compared as the caller's client reads it: decoded when the old server compressed it though
    // asked not to, and only when the request is compared. One too large once decoded, or that
    // does not decode, is not compared.
    legacy: async () => {
      const read = await answerBody(bytes, answer.headers['content-encoding'], legacy.maxBufferedBytes);
      return read.responseBodyOmitted === undefined
        ? { status, body: withoutSecrets(read.responseBody, secrets) }
        : undefined;
    },
    // Without the caller's call counter: its log line counts only what it waited for.
    translate: async () => {
      const response = await translator(new Request(c.req.url, copy), matched, { apiUser, requestId, log });
      return {
        status: response.status,
        body: withoutSecrets(recordedAnswer(await response.text()), secrets),
      };
    },
  });
  return new Response(bodiless(answer.status, c.req.method) ? null : answer.bytes, {
    status: answer.status,
    headers: answerHeaders(c, services, answer),
  });
}
