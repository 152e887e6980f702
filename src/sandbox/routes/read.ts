import type { ResourceKind } from '../data.js';
import { collectionResponse, entityParam, itemResponse } from './respond.js';
import { defineRoute, type RouteDef } from './route.js';

/** `GET /<kind>`: the collection of a kind, with paging, filters and `_attributes`. */
export function listRoute(kind: ResourceKind, tag: string, summary: string): RouteDef {
  return defineRoute({
    method: 'GET',
    path: `/${kind}`,
    summary,
    tag,
    collectionOf: kind,
    attributesOf: kind,
    response: { status: 200, body: 'collection', kind },
    handle: (ctx) => collectionResponse(ctx, kind, ctx.data.list(kind)),
  });
}

/** `GET /<kind>/{id}`: one entity of a kind (dashed or base58 id), with `_attributes`. */
export function itemRoute(kind: ResourceKind, tag: string, summary: string): RouteDef {
  return defineRoute({
    method: 'GET',
    path: `/${kind}/{id}`,
    summary,
    tag,
    attributesOf: kind,
    response: { status: 200, body: 'item', kind },
    handle: (ctx) => itemResponse(ctx, kind, entityParam(ctx, kind)),
  });
}
