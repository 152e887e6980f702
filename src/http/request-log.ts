import type { Context } from 'hono';
import type { Logger } from '../lib/logger.js';
import type { AppEnv } from '../services.js';

/**
 * The request's logger: a child of the services' logger bound to the request id, made the first
 * time something logs (most requests log nothing but their completion line, which the pipeline
 * writes itself, so most never pay for a child logger and its redaction set-up).
 */
export function requestLog(c: Context<AppEnv>): Logger {
  let log = c.get('log');
  if (log === undefined) {
    log = c.get('services').logger.child({ reqId: c.get('requestId') });
    c.set('log', log);
  }
  return log;
}
