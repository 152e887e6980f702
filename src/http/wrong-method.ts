import type { Env, Hono } from 'hono';
import { METHOD_NAME_ALL } from 'hono/router';
import { methodNotAllowed } from './legacy-error.js';

/**
 * Makes every path the app has routes for so far answer a method none of them takes with 405 and
 * `Allow` (SPEC 3: "405 wrong method on a known path"), as the legacy surface does, instead of
 * falling through to the 404 "No such path" (the docs call it on their own sub-app, so that only
 * their known paths answer 405 and an unknown one stays a 404 for every method). Read from what
 * is registered, so `Allow` follows the routes (a disabled endpoint has none and stays a 404), and no route needs its own
 * copy. HEAD is allowed wherever GET is: hono answers it with the GET route. Routes for every
 * method (`app.use` middleware, `app.all`) name no method and are passed over: a middleware
 * registered before still runs first, so where an operator guard covers a path with `app.use`
 * (metrics, dashboard) a wrong method is refused after the address and credentials (403/401, then
 * 405), like on the legacy surface; an `app.all` handler answers before the 405 does.
 * Called after the routes it covers.
 */
export function answerWrongMethods<E extends Env>(app: Hono<E>): void {
  const methodsByPath = new Map<string, Set<string>>();
  for (const { path, method } of app.routes) {
    if (method === METHOD_NAME_ALL) continue;
    const methods = methodsByPath.get(path) ?? new Set<string>();
    methods.add(method);
    methodsByPath.set(path, methods);
  }
  for (const [path, methods] of methodsByPath) {
    if (methods.has('GET')) methods.add('HEAD');
    const allowed = [...methods];
    app.all(path, (c) => {
      throw methodNotAllowed(c.req.method, allowed);
    });
  }
}
