import { collectionResponse, entityParam, itemResponse } from './respond.js';
import { defineRoute, type RouteDef } from './route.js';

/** Group flags: read-only collection and item. */
export const groupFlagRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/group_flags',
    summary: 'Lists group flags',
    tag: 'GroupFlag',
    collectionOf: 'group_flags',
    attributesOf: 'group_flags',
    response: { status: 200, body: 'collection', kind: 'group_flags' },
    handle: (ctx) => collectionResponse(ctx, 'group_flags', ctx.data.list('group_flags')),
  }),
  defineRoute({
    method: 'GET',
    path: '/group_flags/{id}',
    summary: 'Reads a group flag',
    tag: 'GroupFlag',
    attributesOf: 'group_flags',
    response: { status: 200, body: 'item', kind: 'group_flags' },
    handle: (ctx) => itemResponse(ctx, 'group_flags', entityParam(ctx, 'group_flags')),
  }),
];
