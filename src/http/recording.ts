import type { Context } from 'hono';
import { withoutSecrets } from '../lib/redact.js';
import { cappedAnswer, recordedLocation, recordedRequest } from '../migration/exchange.js';
import type { RecordingWriter } from '../migration/recording.js';
import type { AppEnv } from '../services.js';
import { announcesBody, requestHeader } from './request-headers.js';
import { requestLog } from './request-log.js';

/**
 * Hands one finished request and its answer to the recording (`migration.recording`): the answer
 * is read from a copy of the response (up to RECORDED_ANSWER_MAX_BYTES, so a copy never holds a
 * large streamed list in memory; a HEAD's has no body), the request body only when the request already read it (a body
 * nobody read is not read now, and marked unreadable), and the body of an operation that carries
 * a password not at all;
 * the writer redacts and appends without blocking.
 */
export function recordExchange(
  c: Context<AppEnv>,
  writer: RecordingWriter,
  exchange: {
    operation: string;
    mode: 'translate' | 'passthrough' | 'shadow';
    startedAt: number;
    durationMs: number;
  },
): void {
  // A HEAD's answer is the GET route's with its body left out: recorded as the caller got it,
  // without one, as a passthrough or shadowed HEAD is (a replay of it gets none either).
  const response = c.req.method === 'HEAD' ? undefined : c.res.clone();
  const status = c.res.status;
  const bodyWasRead = Object.keys(c.req.bodyCache).length > 0;
  const requestBytes = bodyWasRead ? c.req.arrayBuffer() : undefined;
  // A body the request announced and the proxy never read (refused for its declared length or its
  // Content-Encoding, or before it was needed) is one the recording cannot hold: marked, so that
  // replay does not send the request without it (a refused DELETE would be carried out). A GET's
  // or HEAD's body is never read, nor sent again.
  const unread = !bodyWasRead && c.req.method !== 'GET' && c.req.method !== 'HEAD' && announcesBody(c);
  const match = c.get('match');
  const operation = match.kind === 'operation' ? match.matched.operation : undefined;
  const log = requestLog(c);
  void (async () => {
    try {
      const bytes = requestBytes ? new Uint8Array(await requestBytes) : undefined;
      const contentType = requestHeader(c, 'content-type');
      // The request's secrets are left out of its answer should that repeat one (an old server's
      // refusal of a new password in passthrough; the proxy's own error answers leave them out).
      const { recorded: request, secrets } = unread
        ? { recorded: { requestBody: null, requestBodyOmitted: 'unreadable' as const }, secrets: [] }
        : await recordedRequest(operation, contentType, bytes);
      const answer = await cappedAnswer(
        response?.body ?? null,
        response?.headers.get('content-encoding') ?? undefined,
      );
      writer.record({
        time: new Date(exchange.startedAt).toISOString(),
        requestId: c.get('requestId'),
        apiUser: c.get('apiUser') ?? null,
        operation: exchange.operation,
        mode: exchange.mode,
        method: c.req.method,
        ...recordedLocation(c.req.url, c.get('services').config.legacy.basePath),
        ...request,
        status,
        ...answer,
        responseBody: withoutSecrets(answer.responseBody, [
          ...secrets,
          ...(c.get('services').migration.legacy?.ownSecrets ?? []),
        ]),
        durationMs: Math.round(exchange.durationMs * 10) / 10,
      });
    } catch (error) {
      log.warn({ err: error }, 'request not recorded');
    }
  })();
}
