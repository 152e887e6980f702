import { type OpenApiOptions, openApiDocument } from '../openapi.js';
import { groupFlagRoutes } from './group-flags.js';
import { groupRoutes } from './groups.js';
import { lookupRoutes } from './lookup.js';
import { privilegeRoutes } from './privileges.js';
import { roleRoutes } from './roles.js';
import { defineRoute, type RouteDef } from './route.js';
import { userRoutes } from './users.js';

/**
 * Every route of the API, the OpenAPI document included (served without credentials at
 * `docs.jsonopenapi` and `docs.json`, generated from this same list).
 */
export function apiRoutes(openApi: OpenApiOptions): RouteDef[] {
  const resourceRoutes = [
    ...userRoutes,
    ...groupRoutes,
    ...roleRoutes,
    ...privilegeRoutes,
    ...groupFlagRoutes,
    ...lookupRoutes,
  ];
  let document: Record<string, unknown> | undefined;
  const docsRoute = (path: string, contentType: string) =>
    defineRoute({
      method: 'GET',
      path,
      summary: 'This OpenAPI 3.1 document',
      tag: 'Documentation',
      public: true,
      response: { status: 200, body: 'openapi' },
      handle() {
        document ??= openApiDocument(all, openApi);
        return new Response(JSON.stringify(document), {
          headers: { 'content-type': `${contentType}; charset=utf-8` },
        });
      },
    });
  const all: RouteDef[] = [
    ...resourceRoutes,
    docsRoute('/docs.jsonopenapi', 'application/vnd.openapi+json'),
    docsRoute('/docs.json', 'application/json'),
  ];
  return all;
}
