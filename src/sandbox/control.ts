import { Hono } from 'hono';
import { ZodError } from 'zod';
import type { Counters } from './counters.js';
import type { Faults } from './faults.js';
import { problemResponse } from './problems.js';
import type { SandboxEnv } from './routes/route.js';

/**
 * The run-time control endpoints for integration testers, mounted at `/__sandbox` (loopback
 * peers only, no credentials): `GET/PUT/DELETE /faults`, `GET/DELETE /counters`.
 */
export function createControlApp(faults: Faults, counters: Counters): Hono<SandboxEnv> {
  const app = new Hono<SandboxEnv>();
  app.get('/faults', (c) => c.json(faults.get()));
  app.put('/faults', async (c) => {
    let patch: unknown;
    try {
      patch = await c.req.json();
    } catch {
      return problemResponse(400, 'Syntax error: the request body is not valid JSON.');
    }
    try {
      if (typeof patch !== 'object' || patch === null) throw new TypeError('expected an object');
      faults.set(patch);
    } catch (error) {
      const violations =
        error instanceof ZodError
          ? error.issues.map((i) => ({ propertyPath: i.path.map(String).join('.'), message: i.message }))
          : [{ propertyPath: '', message: 'The body must be a JSON object of fault settings.' }];
      return problemResponse(400, 'Invalid fault settings.', { violations });
    }
    return c.json(faults.get());
  });
  app.delete('/faults', (c) => {
    faults.reset();
    return c.json(faults.get());
  });
  app.get('/counters', (c) => c.json({ total: counters.total(), counters: counters.snapshot() }));
  app.delete('/counters', (c) => {
    counters.reset();
    return c.body(null, 204);
  });
  return app;
}
