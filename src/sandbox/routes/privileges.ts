import { collectionResponse, entityParam, itemResponse } from './respond.js';
import { defineRoute, type RouteDef } from './route.js';

/** Privileges: read-only collection and item. */
export const privilegeRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/privileges',
    summary: 'Lists privileges',
    tag: 'Privilege',
    collectionOf: 'privileges',
    attributesOf: 'privileges',
    response: { status: 200, body: 'collection', kind: 'privileges' },
    handle: (ctx) => collectionResponse(ctx, 'privileges', ctx.data.list('privileges')),
  }),
  defineRoute({
    method: 'GET',
    path: '/privileges/{id}',
    summary: 'Reads a privilege',
    tag: 'Privilege',
    attributesOf: 'privileges',
    response: { status: 200, body: 'item', kind: 'privileges' },
    handle: (ctx) => itemResponse(ctx, 'privileges', entityParam(ctx, 'privileges')),
  }),
];
