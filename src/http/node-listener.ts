import type { IncomingMessage, ServerOptions, ServerResponse } from 'node:http';
import { getRequestListener, RequestError } from '@hono/node-server';
import type { Logger } from '../lib/logger.js';
import { legacyErrorBody, NO_SNIFF, toLegacyError } from './errors.js';
import { isFailureStatus, LegacyError } from './legacy-error.js';

/**
 * What the Node server must be created with for `nodeRequestListener`: Node's own check of the
 * Host header is left to the listener, because Node answers a failed check itself, with an empty
 * 400 that never reaches the app.
 */
export const NODE_SERVER_OPTIONS = { requireHostHeader: false } as const satisfies ServerOptions;

export interface NodeListenerOptions {
  /**
   * The authority (`host[:port]`) of a request that names none (HTTP/1.0 without `Host`, such as
   * HAProxy's default health check): the proxy's public URL, i.e. the same name it gives in the
   * links it writes (RFC 9112 3.3: "the default name configured for the server").
   */
  defaultHost: string;
  logger: Logger;
}

/**
 * The app as a Node request listener (@hono/node-server), where the adapter would answer on its
 * own with an empty body and no Content-Type:
 * - HTTP/1.0 without `Host` is served under `defaultHost` (the adapter refuses it: it needs a host
 *   to build the fetch Request's URL); HTTP/1.1 without it is a 400, as RFC 9112 3.2 demands,
 *   whatever the form of its request target;
 * - a request the adapter cannot turn into a fetch Request (a Host that is no host name or has a
 *   port beyond 65535, `OPTIONS *`, a backslash in the path) is a 400 with the legacy JSON body;
 * - anything the app itself throws past its error handler is a 500 with the legacy JSON body,
 *   logged (the app's own failures are answered and logged by its `onError`).
 * All three answers close the connection, like the answers to what Node's parser refuses.
 */
export function nodeRequestListener(
  fetch: (request: Request) => Response | Promise<Response>,
  options: NodeListenerOptions,
): (incoming: IncomingMessage, outgoing: ServerResponse) => Promise<void> {
  const errorHandler = (error: unknown): Response => {
    const refusal =
      error instanceof RequestError
        ? new LegacyError(400, `Malformed request: ${lowerFirst(error.message)}`)
        : toLegacyError(error);
    if (isFailureStatus(refusal.status))
      options.logger.error({ err: error }, 'request failed outside the app');
    return new Response(JSON.stringify(legacyErrorBody(refusal)), {
      status: refusal.status,
      headers: { ...refusal.headers, ...NO_SNIFF, 'Content-Type': 'application/json', Connection: 'close' },
    });
  };
  const served = getRequestListener(fetch, {
    hostname: options.defaultHost,
    errorHandler,
  });
  // Every HTTP/1.1 (and later) request without Host is refused here, before the adapter: the
  // adapter checks the Host only of an origin-form target and takes an absolute-form one
  // (`GET http://x/healthz HTTP/1.1`) at its word. Through the adapter all the same, so the
  // refusal is written (and an unread body dealt with) like its own.
  const refusedWith = (error: RequestError) =>
    getRequestListener(
      () => {
        throw error;
      },
      { hostname: options.defaultHost, errorHandler },
    );
  const hostRefused = refusedWith(new RequestError('Missing host header'));
  // A Transfer-Encoding whose last coding is not chunked (`identity`, `gzip`): the body's length
  // cannot be told, and RFC 9112 6.3 has the server answer 400 and close. Node's parser says so
  // only after the request has gone to the app (it refuses the body that follows), so the app ran
  // the operation (a GET's successor call) and logged an answer no client got. Refused here, as the
  // parser then does (server.ts, same words), and the operation never runs.
  const unframedRefused = refusedWith(new RequestError(UNFRAMED_BODY));
  return (incoming, outgoing) => {
    if (incoming.headers.host === undefined && incoming.httpVersion !== '1.0')
      return hostRefused(incoming, outgoing);
    const transfer = incoming.headers['transfer-encoding'];
    if (transfer !== undefined && !LAST_CODING_CHUNKED.test(transfer))
      return unframedRefused(incoming, outgoing);
    return served(incoming, outgoing);
  };
}

/** A Transfer-Encoding list whose last coding is chunked (Node's parser checks only that one). */
const LAST_CODING_CHUNKED = /(?:^|,)[\t ]*chunked[\t ]*$/i;

/**
 * Why a request whose Transfer-Encoding does not end in chunked is refused (the sentence's end);
 * also Node's parser's refusal of one that names chunked more than once (`chunked, chunked`, which
 * RFC 9112 7 forbids), whose last coding is chunked.
 */
export const UNFRAMED_BODY =
  'a Transfer-Encoding that does not end in chunked, or names chunked more than once: the length of the body cannot be told';

/**
 * A listener for Node's `checkContinue` (a request with `Expect: 100-continue`): the `100
 * Continue` is sent when the request's body is first read, not at once as Node does without the
 * listener. A request refused before its body is needed (401 or 403 of the API-user check, 429,
 * 413 by its declared length, an operation that takes no body refused) is answered without the
 * client having sent the body: the client waits for the 100, and gets the refusal instead (RFC 9110
 * 10.1.1). The answer then says `Connection: close` (the body announced and not read), so a client
 * that sends the body after its own wait cannot have it read as the next request.
 */
export function continueWhenRead(
  listener: (incoming: IncomingMessage, outgoing: ServerResponse) => unknown,
): (incoming: IncomingMessage, outgoing: ServerResponse) => void {
  return (incoming, outgoing) => {
    const length = incoming.headers['content-length'];
    if (incoming.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) {
      // No body to wait for (a GET, say): continue at once, or Node closes the connection after
      // the answer, as it does when no 100 went out.
      outgoing.writeContinue();
    } else {
      // `resume`: the stream starts flowing, which every reader of the body (the adapter's web
      // stream, a direct read) does first.
      incoming.once('resume', () => {
        if (!outgoing.headersSent && !outgoing.writableEnded) outgoing.writeContinue();
      });
    }
    void listener(incoming, outgoing);
  };
}

/** "Invalid host header" → "invalid host header", for the end of a sentence. */
function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}
