import { Hono } from 'hono';
import { LegacyError } from '../http/legacy-error.js';
import type { AppEnv } from '../services.js';
import { honoPath, type LegacyOperation, readBody, validatePart } from './operation.js';

/**
 * The legacy surface below `legacy.basePath`: every operation under every configured namespace
 * (`/Service/Core/…`, `/IServ/Core/…`), each request validated by the operation's schemas before
 * its handler runs. A known path with another method answers 405 with `Allow`; anything else 404.
 */
export function createLegacyRouter(
  operations: readonly LegacyOperation[],
  options: { basePath: string; namespaces: readonly string[] },
): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  const known: { pattern: RegExp; method: string }[] = [];
  for (const namespace of options.namespaces) {
    for (const operation of operations) {
      const path = `/${namespace}${honoPath(operation.path)}`;
      known.push({
        pattern: pathPattern(`${options.basePath}${path}`),
        method: operation.method.toUpperCase(),
      });
      router.on(operation.method.toUpperCase(), path, async (c) => {
        c.set('operation', operation.id);
        const params = validatePart('path', operation.params, c.req.param());
        const query = validatePart('query', operation.query, c.req.query());
        const body = validatePart('body', operation.body?.schema, await readBody(c, operation));
        const response = await operation.handler(c, { params, query, body });
        // The seed: every operation responds with application/json, the empty 204s included
        // (without this the Node adapter would label an empty body text/plain).
        if (!response.headers.has('content-type')) response.headers.set('Content-Type', 'application/json');
        return response;
      });
    }
  }
  router.all('*', (c) => {
    const allowed = [...new Set(known.filter((k) => k.pattern.test(c.req.path)).map((k) => k.method))];
    if (allowed.length === 0) throw new LegacyError(404, `No such path: ${c.req.path}`);
    throw new LegacyError(
      405,
      `Method ${c.req.method} is not allowed here; allowed: ${allowed.join(', ')}`,
      undefined,
      {
        Allow: allowed.join(', '),
      },
    );
  });
  return router;
}

function pathPattern(honoStylePath: string): RegExp {
  const source = honoStylePath
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}
