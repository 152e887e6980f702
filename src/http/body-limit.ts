import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../services.js';
import { LegacyError } from './legacy-error.js';
import { announcesBody } from './request-headers.js';

/** Rejects request bodies over `maxBytes` with the legacy 413 (declared length or streamed size). */
export function legacyBodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new LegacyError(413, `The request body is larger than the limit of ${maxBytes} bytes`);
    },
  });
  return function legacyBodyLimitMiddleware(c, next) {
    // A request that announces no body has none. Asking the headers first spares every GET the
    // fetch Request that hono's check would build to look (and a promise of its own).
    if (!announcesBody(c)) return next();
    return limit(c, next);
  };
}
