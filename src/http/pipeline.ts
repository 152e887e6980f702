import type { Context, MiddlewareHandler } from 'hono';
import type { OperationTable } from '../legacy/operation-table.js';
import { redactPath } from '../lib/redact.js';
import type { CallStats } from '../observe/observer.js';
import type { AppEnv, Services } from '../services.js';
import { setAnswerHeader } from './answer-out.js';
import type { DeprecationHeaders } from './deprecation.js';
import { isFailureStatus } from './legacy-error.js';
import { RequestLineLimiter } from './log-limit.js';
import { recordExchange } from './recording.js';
import { announcesBody, bodyReadToEnd, clientGone, requestHeader } from './request-headers.js';
import { requestIdFrom } from './request-id.js';

/** Operation names of the paths outside the legacy surface; `ops.*` is left out of the usage inventory. */
export interface FixedRoutes {
  /** Exact path → operation name, e.g. `/healthz` → `ops.healthz`. */
  exact: ReadonlyMap<string, string>;
  /** Path prefix → operation name, e.g. `/iserv/api/docs` → `docs`. */
  prefixes: readonly (readonly [prefix: string, operation: string])[];
}

/**
 * The first step of every request: binds a request id (`requestLog` makes its child logger when
 * something logs), names the operation (before authentication, so a 401 is attributed too;
 * `unknown` for paths that name none), hands the rest a counter of the request's successor calls,
 * sets the operation's deprecation headers, and at the end (of a streamed answer: once it is out)
 * writes one log line and tells the observers (metrics, usage inventory). The log line (bounded
 * for floods of 401/404/405/429 by `logging.unauthenticatedPerSecond`) has id, method, path
 * (never the query, which may carry an SSO token; a credential pasted into the path redacted),
 * status, duration, API user, operation and the successor calls the request made. The flood bound
 * covers every line the request writes that asks `logLines` (the authentication's refusal line
 * too): a flood of throttled logins (429, cheap: no KDF) would otherwise write one refusal line per
 * request past the bound.
 */
export function requestPipeline(
  services: Services,
  table: OperationTable,
  fixed: FixedRoutes,
  deprecation: DeprecationHeaders,
): MiddlewareHandler<AppEnv> {
  const { observer, clock } = services;
  const lines = new RequestLineLimiter(
    services.config.logging.unauthenticatedPerSecond,
    clock,
    services.logger,
  );
  // The completion line holds only the fields below (no headers, bodies or query), so it is
  // written without the redaction pass, which would otherwise walk every field of every line.
  const accessLog = services.logger.child({}, { redact: [] });
  const operationOf = (method: string, path: string) => {
    const match = table.match(method, path);
    if (match.kind === 'operation') return { name: match.matched.operation.id, match };
    const exact = fixed.exact.get(path);
    if (exact !== undefined) return { name: exact, match };
    for (const [prefix, name] of fixed.prefixes)
      if (path === prefix || path.startsWith(`${prefix}/`)) return { name, match };
    return { name: 'unknown', match };
  };
  return async function requestPipelineMiddleware(c, next) {
    const started = performance.now();
    const startedAt = clock.now();
    // First, so that the error handler has the services whatever fails after.
    c.set('services', services);
    const requestId = requestIdFrom(requestHeader(c, 'x-request-id'));
    const { name, match } = operationOf(c.req.method, c.req.path);
    c.set('requestId', requestId);
    c.set('operation', name);
    c.set('match', match);
    setAnswerHeader(c, 'X-Request-Id', requestId);
    const stats: CallStats = { calls: 0, durationMs: 0 };
    c.set('calls', stats);
    // One decision per request, by the status of the first line that asks (a refused login's line
    // comes before the completion line, with the same status): both are written, or neither.
    let admitted: boolean | undefined;
    const logLines = (status: number): boolean => {
      admitted ??= lines.admit(status);
      return admitted;
    };
    c.set('logLines', logLines);
    services.inFlight.begin();
    try {
      await next();
      if (c.req.method === 'HEAD') await announceLength(c);
      for (const [header, value] of deprecation.headersOf(name)) setAnswerHeader(c, header, value);
      // Answered without reading the request's body to its end (refused before it, e.g. 401 or a
      // 413 by its declared length, or in the middle of it: a 413 of a chunked body): the server
      // gives the rest only a moment (or 64 MiB) before it drops the connection, so the client is
      // told not to send the next request on it.
      if (announcesBody(c) && !bodyReadToEnd(c)) setAnswerHeader(c, 'Connection', 'close');
      const recording = services.migration.recording;
      // Only requests an API user was let through for: what integrations really send and get.
      if (
        recording &&
        match.kind === 'operation' &&
        c.get('apiUser') !== undefined &&
        recording.records(name)
      ) {
        recordExchange(c, recording, {
          operation: name,
          mode: services.migration.modes.current().modeOf(name),
          startedAt,
          durationMs: performance.now() - started,
        });
      }
    } finally {
      services.inFlight.end();
      // A streamed answer (a large list, a passthrough answer) is done, and its successor calls
      // counted, only once its last byte is handed over. Every other answer is done now and
      // written by the server once this returns; its log line and observers come once that turn
      // of the event loop's I/O callbacks are done (setImmediate), so that the answer does not
      // wait for them. `durationMs` still ends now.
      // A client that left before its answer (timed out, say) is told nothing: its line says so.
      // Asked now, before the answer is written: a `Connection: close` answer closes it after.
      const gone = clientGone(c);
      const streaming = c.get('streaming');
      if (streaming) void streaming.then(() => finish(performance.now(), gone)).catch(completionFailed);
      else setImmediate(finishAfterAnswer, performance.now(), gone);
    }

    function finishAfterAnswer(answeredAt: number, gone: boolean): void {
      try {
        finish(answeredAt, gone);
      } catch (error) {
        completionFailed(error);
      }
    }

    function completionFailed(error: unknown): void {
      services.logger.error({ err: error }, 'request completion failed');
    }

    /** The log line and the observers of an answer done at `doneAt` (performance.now()). */
    function finish(doneAt: number, gone: boolean): void {
      const status = c.res.status;
      const durationMs = doneAt - started;
      const apiUser = c.get('apiUser') ?? c.get('refusedApiUser') ?? '';
      observer.request({ operation: name, status, apiUser, durationMs, at: clock.now() });
      // A streamed answer cut off after its 200 (a later page failed, the shutdown): its line says
      // so at the level of what cut it, though the status is what the client got.
      const cutOff = c.get('answerCutOff');
      if (cutOff) observer.answerCutOff?.(name, cutOff);
      if (!logLines(status)) return;
      const level = isFailureStatus(status) || cutOff === 'failed' ? 'error' : cutOff ? 'warn' : 'info';
      accessLog[level](
        {
          reqId: requestId,
          method: c.req.method,
          path: redactPath(c.req.path),
          status,
          durationMs: Math.round(durationMs * 10) / 10,
          apiUser: apiUser === '' ? undefined : apiUser,
          operation: name,
          successorCalls: stats.calls,
          successorMs: Math.round(stats.durationMs * 10) / 10,
          clientGone: gone || undefined,
          answerCutOff: cutOff,
        },
        'request completed',
      );
    }
  };
}

/**
 * A HEAD's answer says the length of the GET answer whose body it leaves out, as the GET's does
 * (RFC 9110 9.3.2): hono answers HEAD with the GET route and drops the body, and with it the
 * Content-Length the Node adapter would have written. A streamed answer (a large list) has none
 * to say, as its GET has none; a passed-through HEAD carries the old server's (legacy-upstream.ts).
 */
async function announceLength(c: Context<AppEnv>): Promise<void> {
  const answer = c.res;
  if (c.get('streaming') || !answer.body || answer.headers.has('content-length')) return;
  setAnswerHeader(c, 'Content-Length', String((await answer.clone().arrayBuffer()).byteLength));
}
