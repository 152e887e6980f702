import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../services.js';
import { LegacyError } from './legacy-error.js';

/** Rejects request bodies over `maxBytes` with the legacy 413 (declared length or streamed size). */
export function legacyBodyLimit(maxBytes: number): MiddlewareHandler<AppEnv> {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new LegacyError(413, `The request body is larger than the limit of ${maxBytes} bytes`);
    },
  });
}
