import { OpenAPIHono } from '@hono/zod-openapi';
import { type LegacyOperation, openApiRoute } from '../operation.js';
import { legacyErrorSchema } from '../responses.js';

/** Where the legacy API is mounted, as the documentation describes it. */
export interface LegacyDocsOptions {
  basePath: string;
  namespaces: readonly string[];
}

/** Answers the authentication layer gives on every operation (SPEC 4). */
const AUTH_RESPONSES: Record<number, string> = {
  401: 'Missing or wrong API-user credentials (`WWW-Authenticate: Basic`)',
  403: 'The source address is outside the API user’s ranges',
  429: 'Too many failed logins; see `Retry-After`',
};

/**
 * The 400 every request can get before any operation runs (seed 7: 400 on every operation): one
 * that cannot be read as HTTP or turned into a URL (src/http/node-listener.ts, src/server.ts).
 * A read has no other: it reads no body and takes any query.
 */
const MALFORMED_REQUEST =
  'Malformed request: an HTTP/1.1 request without `Host`, a `Host` that is no host name, a backslash in the path, or bytes the HTTP parser cannot read';

/** What a read (GET) can answer 400 for. */
const READ_INVALID = `${MALFORMED_REQUEST} (a read has no other 400: it reads no request body and takes any query)`;

/**
 * Answers about the request body that every operation other than a GET can give (a GET's body is
 * not read): the body limit, and for an operation that takes no body the 400 for one sent anyway
 * (seed 7: 400 on every operation). An operation with a body documents its own 400.
 */
function bodyResponses(operation: LegacyOperation): Record<number, string> {
  const responses: Record<number, string> = {
    413: 'The request body is larger than `server.bodyLimitBytes`',
  };
  if (!operation.body)
    responses[400] =
      'This operation takes no request body: anything but an empty or blank body, `{}` or `[]` is refused';
  return responses;
}

/**
 * Builds the OpenAPI 3.1 document of the legacy operations from the same definitions (and zod
 * schemas) that route and validate requests, so every operation that exists is documented.
 */
export function buildOpenApiDocument(
  operations: readonly LegacyOperation[],
  options: LegacyDocsOptions,
): Record<string, unknown> {
  // Used only as the registry and generator of the document: it routes nothing.
  const generator = new OpenAPIHono();
  const registry = generator.openAPIRegistry;
  registry.registerComponent('securitySchemes', 'basicAuth', {
    type: 'http',
    scheme: 'basic',
    description: 'API-user name and password, created on the server with `idm-compat apiuser add`',
  });
  for (const operation of operations) {
    const route = openApiRoute(operation);
    const responses = { ...route.responses };
    const read = operation.method === 'get';
    for (const [status, description] of [
      ...Object.entries(AUTH_RESPONSES),
      ...Object.entries(read ? {} : bodyResponses(operation)),
      ['400', read ? READ_INVALID : MALFORMED_REQUEST],
    ]) {
      const declared = responses[status];
      if (!declared)
        responses[status] = { description, content: { 'application/json': { schema: legacyErrorSchema } } };
      else if ('description' in declared) {
        responses[status] = { ...declared, description: `${declared.description}; or: ${description}` };
      }
    }
    registry.registerPath({ ...route, responses });
  }
  const [first, ...aliases] = options.namespaces;
  const roots = options.namespaces.map((namespace) => `\`${options.basePath}/${namespace}\``).join(', ');
  const description = [
    'The deprecated User and Group Administration REST API v1.6.0, served by idm-compat on top of the IDM API v1.',
    '',
    `Every operation answers under each configured namespace: ${roots}.` +
      (aliases.length > 0 ? ' The paths below are shown under the first one; the others are aliases.' : ''),
    '',
    'Every request needs the credentials of an API user (HTTP Basic) and must come from one of its address ranges.',
    'Errors are JSON: `{"code", "message", "errors"?}`.',
  ].join('\n');
  const document = generator.getOpenAPI31Document({
    openapi: '3.1.0',
    info: { title: 'User and Group Administration REST API (legacy)', version: '1.6.0', description },
    // Relative to the document (`{basePath}/docs/openapi.json`), as OpenAPI allows: "Try it out"
    // stays under a reverse proxy's path prefix, which an absolute path would leave.
    servers: [{ url: `../${first ?? 'Service'}`, description: 'This proxy' }],
    security: [{ basicAuth: [] }],
  });
  return document as unknown as Record<string, unknown>;
}
