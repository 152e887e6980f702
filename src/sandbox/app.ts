import { Hono } from 'hono';
import type { z } from 'zod';
import type { Logger } from '../lib/logger.js';
import { isLoopbackHost } from '../lib/loopback.js';
import { attributePaths, parseSelection } from './attributes.js';
import { type Format, negotiate } from './collections.js';
import type { Counters } from './counters.js';
import type { SandboxData } from './data.js';
import type { Faults } from './faults.js';
import { READ_SCOPE, WRITE_SCOPE } from './oauth.js';
import { ProblemError, problemResponse, renderProblem, type Violation } from './problems.js';
import { API_BASE } from './resources.js';
import type { ApiSettings, BodySpec, RouteContext, RouteDef, SandboxEnv } from './routes/route.js';
import type { TokenGuard } from './token-guard.js';

/** Largest request body the sandbox reads. */
const BODY_LIMIT = 1024 * 1024;

/** What the sandbox's Hono app is built from. */
export interface SandboxAppServices {
  routes: readonly RouteDef[];
  data: SandboxData;
  settings: ApiSettings;
  guard: TokenGuard;
  faults: Faults;
  counters: Counters;
  logger: Logger;
  /** Extra routes mounted beside the API (the `/__sandbox` control endpoints). */
  control?: Hono<SandboxEnv>;
}

/** `/users/{id}` → `/users/:id` */
function honoPath(path: string): string {
  return `${API_BASE}${path.replace(/\{(\w+)\}/g, ':$1')}`;
}

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function zodViolations(error: z.ZodError): Violation[] {
  return error.issues.flatMap((issue): Violation[] => {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        propertyPath: path ? `${path}.${key}` : key,
        message: `Extra attribute "${key}" is not allowed.`,
      }));
    }
    if (issue.code === 'invalid_type') {
      return [{ propertyPath: path, message: `This value should be of type ${issue.expected}.` }];
    }
    return [{ propertyPath: path, message: issue.message }];
  });
}

async function readBody<T>(c: RouteContext<unknown>['c'], spec: BodySpec<T>): Promise<T> {
  const type = mediaType(c.req.header('content-type'));
  if (!spec.mediaTypes.includes(type)) {
    throw new ProblemError(
      415,
      `The content-type "${type || '(none)'}" is not supported. Supported MIME types are "${spec.mediaTypes.join('", "')}".`,
    );
  }
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > BODY_LIMIT) throw new ProblemError(413, `The request body exceeds ${BODY_LIMIT} bytes.`);
  const text = await c.req.text();
  if (text.length > BODY_LIMIT) throw new ProblemError(413, `The request body exceeds ${BODY_LIMIT} bytes.`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ProblemError(400, 'Syntax error: the request body is not valid JSON.');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ProblemError(400, 'The request body must be a JSON object.');
  }
  const parsed = spec.schema.safeParse(json);
  if (!parsed.success) {
    const violations = zodViolations(parsed.error);
    throw new ProblemError(400, violations.map((v) => `${v.propertyPath}: ${v.message}`).join('\n'), {
      violations,
    });
  }
  return parsed.data;
}

/**
 * Builds the sandbox's Hono app (it never listens): every API route wrapped so that it is
 * counted, then subjected to faults, then authorised (scope by method), then handled; 405 with
 * `Allow` on known paths, 404 problems elsewhere. Those two are counted but never delayed or
 * failed by faults: they are the client's mistake, and a rule could not name them (the fault
 * rules accept only the served keys). Every error is an RFC 7807 problem document.
 */
export function createSandboxApp(services: SandboxAppServices): Hono<SandboxEnv> {
  const { data, settings, guard, faults, counters } = services;
  const log = services.logger.child({ sandbox: 'api' });
  const app = new Hono<SandboxEnv>();

  if (services.control) {
    const control = services.control;
    app.use('/__sandbox/*', async (c, next) => {
      // The control endpoints are unauthenticated: only loopback peers may use them.
      const peer = c.env.incoming?.socket.remoteAddress;
      if (peer === undefined || !isLoopbackHost(peer)) {
        return problemResponse(403, 'The sandbox control endpoints answer loopback clients only.');
      }
      return next();
    });
    app.route('/__sandbox', control);
  }

  const methodsByPath = new Map<string, string[]>();
  for (const route of services.routes) {
    methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method]);
    const key = `${route.method} ${route.path}`;
    app.on(route.method, honoPath(route.path), async (c) => {
      const started = performance.now();
      counters.increment(key);
      let status = 500;
      try {
        const outcome = await faults.decide(key, 'api');
        if (outcome.kind === 'drop') {
          c.env.incoming?.socket.destroy();
          status = 0;
          return new Response(null, { status: 503 });
        }
        if (outcome.kind === 'fail') {
          status = outcome.status;
          return problemResponse(outcome.status, outcome.detail);
        }
        data.purgeExpired();
        const principal: RouteContext<unknown>['principal'] = route.public
          ? { kind: 'anonymous' }
          : await guard(c.req.raw.headers, route.method === 'GET' ? READ_SCOPE : WRITE_SCOPE);
        const format: Format = route.response.body === 'openapi' ? 'json' : negotiate(c.req.header('accept'));
        const query = new URL(c.req.url).searchParams;
        // A bad `_attributes` is refused before the handler runs: a write answered 400 for it must
        // not have happened (the handler renders its answer only after changing the data).
        const paths = route.attributesOf ? attributePaths(query) : undefined;
        if (route.attributesOf && paths) parseSelection(route.attributesOf, paths);
        const ctx: RouteContext<unknown> = {
          c,
          data,
          settings,
          format,
          query,
          principal,
          param: (name) => c.req.param(name) ?? '',
          body: () => {
            const spec = route.body;
            if (!spec) return Promise.resolve(undefined);
            return readBody(c, spec);
          },
        };
        const response = await route.handle(ctx);
        status = response.status;
        return response;
      } catch (error) {
        if (error instanceof ProblemError) {
          status = error.status;
          return renderProblem(error);
        }
        log.error({ err: error, route: key }, 'sandbox handler failed');
        return problemResponse(500, 'Internal error in the sandbox.');
      } finally {
        log.debug({ route: key, status, ms: Math.round(performance.now() - started) }, 'sandbox request');
      }
    });
  }

  for (const [path, methods] of methodsByPath) {
    const allow = [...new Set(methods.includes('GET') ? [...methods, 'HEAD'] : methods)].join(', ');
    app.all(honoPath(path), (c) => {
      counters.increment(`${c.req.method} ${path}`);
      return problemResponse(
        405,
        `No route found for "${c.req.method} ${c.req.path}": Method Not Allowed (Allow: ${allow}).`,
        {
          headers: { allow },
        },
      );
    });
  }

  app.notFound((c) => {
    if (c.req.path.startsWith(`${API_BASE}/`) || c.req.path === API_BASE) {
      counters.increment(`${c.req.method} (unknown route)`);
    }
    return problemResponse(404, `No route found for "${c.req.method} ${c.req.path}".`);
  });
  app.onError((error, c) => {
    if (error instanceof ProblemError) return renderProblem(error);
    log.error({ err: error, path: c.req.path }, 'sandbox request failed');
    return problemResponse(500, 'Internal error in the sandbox.');
  });
  return app;
}
