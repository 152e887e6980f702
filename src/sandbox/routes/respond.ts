import {
  attributePaths,
  MAX_EMBEDDED_OBJECTS,
  parseSelection,
  type RenderContext,
  renderEntity,
  type Selection,
} from '../attributes.js';
import { CONTENT_TYPES, collectionBody, pageOf, pageRequest } from '../collections.js';
import type { EntityRecord, RecordOf, ResourceKind } from '../data.js';
import { applyFilters } from '../filters.js';
import { notFound, ProblemError } from '../problems.js';
import { API_BASE, iri, RESOURCES } from '../resources.js';
import type { RouteContext } from './route.js';

/** The `_attributes` selection of a request for entities of `kind`, undefined for all fields. */
export function selectionOf(ctx: RouteContext<unknown>, kind: ResourceKind): Selection | undefined {
  const paths = attributePaths(ctx.query);
  return paths ? parseSelection(kind, paths) : undefined;
}

/** The render context of a request. */
export function renderContext(ctx: RouteContext<unknown>): RenderContext {
  return {
    data: ctx.data,
    jsonld: ctx.format === 'jsonld',
    embedBudget: { left: MAX_EMBEDDED_OBJECTS, afterWrite: ctx.c.req.method !== 'GET' },
  };
}

/** A JSON response in the negotiated format's content type. */
export function jsonResponse(
  ctx: RouteContext<unknown>,
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': CONTENT_TYPES[ctx.format], ...headers },
  });
}

/** 204 No Content. */
export function noContent(): Response {
  return new Response(null, { status: 204 });
}

/** One entity, honouring `_attributes`; JSON-LD adds `@context`. */
export function itemResponse(
  ctx: RouteContext<unknown>,
  kind: ResourceKind,
  record: EntityRecord,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  const rendered = renderEntity(kind, record, selectionOf(ctx, kind), renderContext(ctx));
  const body =
    ctx.format === 'jsonld'
      ? { '@context': `${API_BASE}/contexts/${RESOURCES[kind].type}`, ...rendered }
      : rendered;
  return jsonResponse(ctx, body, status, headers);
}

/** 201 Created with the entity and its IRI as `Location`. */
export function createdResponse(
  ctx: RouteContext<unknown>,
  kind: ResourceKind,
  record: EntityRecord,
): Response {
  const location = iri(kind, record.id);
  return itemResponse(ctx, kind, record, 201, { location, 'content-location': location });
}

/** A filtered, paginated collection of `records` (already in collection order). */
export function collectionResponse<K extends ResourceKind>(
  ctx: RouteContext<unknown>,
  kind: K,
  records: RecordOf[K][],
): Response {
  const selection = selectionOf(ctx, kind);
  const request = pageRequest(ctx.query, ctx.settings.pageSize, ctx.settings.maxPageSize);
  const filtered = applyFilters(kind, records, ctx.query, ctx.data);
  const render = renderContext(ctx);
  const members = pageOf(filtered, request).map((r) => renderEntity(kind, r, selection, render));
  const body = collectionBody({
    path: ctx.c.req.path,
    query: ctx.query,
    memberType: RESOURCES[kind].type,
    members,
    totalItems: filtered.length,
    request,
    format: ctx.format,
    hydraPrefix: ctx.settings.hydraPrefix,
  });
  return jsonResponse(ctx, body);
}

/** The entity named by a path parameter (dashed or base58), or a 404 problem. */
export function entityParam<K extends ResourceKind>(
  ctx: RouteContext<unknown>,
  kind: K,
  name = 'id',
): RecordOf[K] {
  const raw = ctx.param(name);
  const record = ctx.data.find(kind, raw);
  if (!record) notFound(RESOURCES[kind].label, raw);
  return record;
}

/** Throws 403 when a protected entity would be updated or deleted. */
export function assertNotProtected(isProtected: boolean, label: string, name: string, action: string): void {
  if (isProtected) throw new ProblemError(403, `${label} "${name}" is protected and may not be ${action}.`);
}
