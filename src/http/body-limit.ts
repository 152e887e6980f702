import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { quoteInput } from '../lib/quote.js';
import type { AppEnv } from '../services.js';
import { LegacyError } from './legacy-error.js';
import { asBodyCutOff } from './request-body.js';
import { announcesBody, requestHeader } from './request-headers.js';

/**
 * Refuses a body sent compressed (`Content-Encoding: gzip`): the legacy server read none, and
 * read as it is the body was "not valid UTF-8", or passed through to the old server without the
 * header that says how to read it. 415 (RFC 9110 15.5.16) naming the coding. A transfer coding
 * before `chunked` (`gzip, chunked`, an unknown `foo, chunked`; Node's parser checks only the
 * last) is one the proxy does not implement: 501 (RFC 9112 6.1) naming it. Read as it was, such a
 * body was taken as plain, or was "not valid UTF-8". One that does not end in `chunked` is the
 * Node listener's 400 before the app (src/http/node-listener.ts); it reaches this check only in an
 * app called without the Node server.
 */
function unencoded(c: Context<AppEnv>): void {
  const transfer = requestHeader(c, 'transfer-encoding');
  if (transfer !== undefined && !/^\s*chunked\s*$/i.test(transfer)) {
    throw new LegacyError(
      501,
      `The request body is sent with Transfer-Encoding ${quoteInput(transfer)}: only chunked is implemented; send it chunked alone, or with a Content-Length, uncompressed`,
      [{ path: 'body', message: 'must not be sent in another transfer coding than chunked' }],
    );
  }
  const coding = requestHeader(c, 'content-encoding');
  if (coding === undefined || /^\s*(identity)?\s*$/i.test(coding)) return;
  throw new LegacyError(
    415,
    `The request body is sent with Content-Encoding ${quoteInput(coding)}: send it uncompressed`,
    [{ path: 'body', message: 'must not be compressed' }],
  );
}

/**
 * Rejects request bodies over `maxBytes` with the legacy 413 (and compressed ones with a 415): by
 * the declared length, or, for a body sent in chunks (Transfer-Encoding), by its size as hono's
 * `bodyLimit` reads it.
 *
 * A request that announces no body has none. A declared length is judged from the header alone:
 * Node's parser delivers exactly that many bytes, and hono's check would first ask the request for
 * its body stream, which makes the Node adapter build the full fetch Request (a web stream, an
 * AbortSignal) that its direct body read (`c.req.text()` and the like) otherwise spares every
 * write.
 */
export function legacyBodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  const tooLarge = (): never => {
    throw new LegacyError(413, `The request body is larger than the limit of ${maxBytes} bytes`);
  };
  const limit = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return function legacyBodyLimitMiddleware(c, next) {
    // A GET or HEAD has no body for the app whatever it announces (the adapter gives it none, and
    // hono's check let it pass for that): it is served, as it always was, without a header lookup.
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD' || !announcesBody(c)) return next();
    unencoded(c);
    const declared = requestHeader(c, 'content-length');
    if (declared === undefined || requestHeader(c, 'transfer-encoding') !== undefined)
      // hono's check reads a chunked body itself: a client that hangs up in the middle of it is
      // the caller's 400 here, as in the operations' own read of a body of declared length.
      return limit(c, next).catch((error: unknown) => {
        throw asBodyCutOff(error);
      });
    return Number.parseInt(declared, 10) > maxBytes ? tooLarge() : next();
  };
}
