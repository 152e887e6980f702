import type { Handler } from 'hono';
import { LegacyError } from '../http/legacy-error.js';
import type { AppEnv } from '../services.js';
import { readBody, validatePart } from './operation.js';

/**
 * The last step below the legacy base path: runs the operation the pipeline matched before
 * authentication (its path parameters, query and body validated by the operation's schemas, so
 * handlers only see valid input), or answers 405 with `Allow` for a known path asked with another
 * method, and 404 for anything else. Until this step nothing has read the body, so the raw
 * request (`c.req.raw`) is still whole here.
 */
export const dispatchLegacy: Handler<AppEnv> = async (c) => {
  const match = c.get('match');
  if (match?.kind === 'method') {
    const allowed = match.allowed.join(', ');
    throw new LegacyError(405, `Method ${c.req.method} is not allowed here; allowed: ${allowed}`, undefined, {
      Allow: allowed,
    });
  }
  if (match?.kind !== 'operation') throw new LegacyError(404, `No such path: ${c.req.path}`);
  const { operation, params: rawParams } = match.matched;
  const params = validatePart('path', operation.params, rawParams);
  const query = validatePart('query', operation.query, c.req.query());
  const body = validatePart('body', operation.body?.schema, await readBody(c, operation));
  const response = await operation.handler(c, { params, query, body });
  // The seed: every operation responds with application/json, the empty 204s included
  // (without this the Node adapter would label an empty body text/plain).
  if (!response.headers.has('content-type')) response.headers.set('Content-Type', 'application/json');
  return response;
};
