import { type Context, Hono } from 'hono';
import type { MatchedOperation } from '../legacy/operation-table.js';
import type { Logger } from '../lib/logger.js';
import type { AppEnv, Services } from '../services.js';
import { renderLegacyError, toLegacyError } from './errors.js';

/** Runs an operation's translation for a request that was already authenticated, outside its own answer. */
export type Translator = (
  request: Request,
  matched: MatchedOperation,
  context: { apiUser: string; requestId: string; log: Logger },
) => Promise<Response>;

interface TranslationBindings {
  matched: MatchedOperation;
  apiUser: string;
  requestId: string;
  log: Logger;
}

/**
 * Shadow mode's second opinion: a small app of its own that runs `run` (the operation's
 * validation and handler) for a copy of a request whose caller was already authenticated and
 * answered from the old server, and renders failures as the legacy error body, exactly as the
 * proxy would have answered in translate mode.
 */
export function createTranslator(
  services: Services,
  run: (c: Context<AppEnv>, matched: MatchedOperation) => Promise<Response>,
): Translator {
  const app = new Hono<AppEnv>();
  app.all('*', (c) => {
    const bindings = c.env as TranslationBindings;
    c.set('services', services);
    c.set('log', bindings.log);
    c.set('requestId', bindings.requestId);
    c.set('apiUser', bindings.apiUser);
    c.set('operation', bindings.matched.operation.id);
    c.set('match', { kind: 'operation', matched: bindings.matched });
    return run(c, bindings.matched);
  });
  app.onError((error, c) => renderLegacyError(c, toLegacyError(error)));
  return async (request, matched, context) =>
    app.fetch(request, { matched, ...context } satisfies TranslationBindings);
}
