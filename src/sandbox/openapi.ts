import { z } from 'zod';
import { RESOURCE_KINDS, type ResourceKind } from './data.js';
import { filterParams } from './filters.js';
import { READ_SCOPE, WRITE_SCOPE } from './oauth.js';
import { API_BASE, type FieldDef, RESOURCES } from './resources.js';
import type { QueryParamSpec, RouteDef } from './routes/route.js';

type Json = Record<string, unknown>;

export interface OpenApiOptions {
  /** Absolute token endpoint URL for the client-credentials flow. */
  tokenUrl: string;
  hydraPrefix: boolean;
  maxPageSize: number;
  pageSize: number;
}

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

function fieldSchema(field: FieldDef<unknown>): Json {
  switch (field.kind) {
    case 'scalar': {
      const base: Json =
        field.type === 'date-time' ? { type: 'string', format: 'date-time' } : { type: field.type };
      if (field.enum) base.enum = [...field.enum];
      if (field.nullable) base.type = [base.type, 'null'];
      return { ...base, description: field.description };
    }
    case 'ref':
      return {
        type: ['string', 'null'],
        format: 'iri-reference',
        description: `${field.description} (IRI of a ${RESOURCES[field.target].type}; an object with _attributes=field.sub)`,
      };
    case 'refs':
      return {
        type: 'array',
        items: { type: 'string', format: 'iri-reference' },
        description: `${field.description} (IRIs of ${RESOURCES[field.target].type}; objects with _attributes=field.sub)`,
      };
  }
}

function resourceSchema(kind: ResourceKind): Json {
  const resource = RESOURCES[kind];
  const properties: Json = {};
  for (const [name, field] of Object.entries(resource.fields)) properties[name] = fieldSchema(field);
  return {
    type: 'object',
    description: `${resource.label}. JSON-LD adds "@id" (IRI) and "@type" ("${resource.type}").`,
    properties,
  };
}

function collectionSchema(kind: ResourceKind, hydraPrefix: boolean): Json {
  const key = (name: string) => (hydraPrefix ? `hydra:${name}` : name);
  return {
    type: 'object',
    properties: {
      '@context': { type: 'string' },
      '@id': { type: 'string' },
      '@type': { type: 'string' },
      [key('totalItems')]: { type: 'integer', minimum: 0 },
      [key('member')]: { type: 'array', items: ref(RESOURCES[kind].type) },
      [key('view')]: {
        type: 'object',
        properties: Object.fromEntries(
          ['@id', '@type', key('first'), key('last'), key('next'), key('previous')].map((k) => [
            k,
            { type: 'string', format: 'iri-reference' },
          ]),
        ),
      },
    },
  };
}

function queryParameter(spec: QueryParamSpec): Json {
  return {
    name: spec.name,
    in: 'query',
    required: spec.required ?? false,
    description: spec.description,
    schema: { type: spec.type ?? 'string' },
  };
}

function parameters(route: RouteDef, options: OpenApiOptions): Json[] {
  const out: Json[] = [];
  for (const match of route.path.matchAll(/\{(\w+)\}/g)) {
    out.push({
      name: match[1],
      in: 'path',
      required: true,
      description: 'UUID, dashed or base58',
      schema: { type: 'string' },
    });
  }
  if (route.attributesOf) {
    out.push(
      queryParameter({
        name: '_attributes',
        description:
          'Comma-separated attributes to return; dot paths (e.g. privileges.hexUuid) embed relations',
      }),
    );
  }
  if (route.collectionOf) {
    out.push(
      {
        ...queryParameter({ name: 'page', description: '1-based page number', type: 'integer' }),
        schema: { type: 'integer', minimum: 1, default: 1 },
      },
      {
        ...queryParameter({
          name: 'itemsPerPage',
          description: `Items per page (at most ${options.maxPageSize}; larger values are clamped)`,
          type: 'integer',
        }),
        schema: { type: 'integer', minimum: 1, maximum: options.maxPageSize, default: options.pageSize },
      },
    );
    for (const filter of filterParams(route.collectionOf)) {
      out.push(queryParameter({ name: filter.name, description: filter.description, type: filter.type }));
      if (filter.array) {
        out.push({
          name: `${filter.name}[]`,
          in: 'query',
          required: false,
          description: `${filter.description}; several values, any matches`,
          schema: { type: 'array', items: { type: 'string' } },
          style: 'form',
          explode: true,
        });
      }
    }
  }
  for (const spec of route.query ?? []) out.push(queryParameter(spec));
  return out;
}

function requestBody(route: RouteDef): Json | undefined {
  if (!route.body) return undefined;
  const { $schema: _ignored, ...schema } = z.toJSONSchema(route.body.schema, { io: 'input' }) as Json;
  if (route.body.required?.length) schema.required = [...route.body.required];
  return {
    required: true,
    content: Object.fromEntries(route.body.mediaTypes.map((type) => [type, { schema }])),
  };
}

function successResponse(route: RouteDef, options: OpenApiOptions): Json {
  const r = route.response;
  switch (r.body) {
    case 'none':
      return { description: 'No content' };
    case 'item': {
      const schema = ref(RESOURCES[r.kind].type);
      return {
        description: r.status === 201 ? 'Created' : 'The entity',
        content: { 'application/ld+json': { schema }, 'application/json': { schema } },
      };
    }
    case 'collection':
      return {
        description: 'A page of the collection',
        content: {
          'application/ld+json': { schema: collectionSchema(r.kind, options.hydraPrefix) },
          'application/json': { schema: { type: 'array', items: ref(RESOURCES[r.kind].type) } },
        },
      };
    case 'lookup': {
      const list = { type: 'array', items: ref(RESOURCES[r.kind].type) };
      const schema = { type: 'object', properties: { exact: list, partial: list, fuzzy: list } };
      return {
        description: 'Matches',
        content: { 'application/ld+json': { schema }, 'application/json': { schema } },
      };
    }
    case 'password': {
      const schema = { type: 'object', properties: { password: { type: 'string' } }, required: ['password'] };
      return { description: 'The new temporary password', content: { 'application/json': { schema } } };
    }
    case 'openapi':
      return {
        description: 'This document',
        content: { 'application/json': { schema: { type: 'object' } } },
      };
  }
}

function problem(description: string, schema = 'Problem'): Json {
  return { description, content: { 'application/problem+json': { schema: ref(schema) } } };
}

function operation(route: RouteDef, options: OpenApiOptions): Json {
  const responses: Json = { [String(route.response.status)]: successResponse(route, options) };
  if (!route.public) {
    responses['401'] = problem('Missing or invalid credentials');
    responses['403'] = problem('Missing scope, or a protected entity');
  }
  if (route.path.includes('{')) responses['404'] = problem('Unknown entity');
  if (route.attributesOf || route.collectionOf || route.body) responses['400'] = problem('Bad request');
  if (route.body) {
    responses['415'] = problem('Unsupported Content-Type');
    responses['422'] = problem('Validation failed', 'ConstraintViolation');
  }
  const scope = route.method === 'GET' ? READ_SCOPE : WRITE_SCOPE;
  const op: Json = {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[{}]/g, '').replace(/(^|[/_.])(\w)/g, (_m, _s, c: string) => c.toUpperCase())}`,
    tags: [route.tag],
    summary: route.summary,
    parameters: parameters(route, options),
    responses,
    security: route.public ? [] : [{ oauth2: [scope] }, { apiKey: [] }],
  };
  const body = requestBody(route);
  if (body) op.requestBody = body;
  return op;
}

/**
 * The OpenAPI 3.1 document of the sandbox, generated from its route list and resource
 * definitions. Paths are absolute from the host root (`/iserv/idm/api/v1/users`), as API
 * Platform writes them.
 */
export function openApiDocument(routes: readonly RouteDef[], options: OpenApiOptions): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const path = `${API_BASE}${route.path}`;
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route, options) };
  }
  const schemas: Json = {};
  for (const kind of RESOURCE_KINDS) schemas[RESOURCES[kind].type] = resourceSchema(kind);
  schemas.Problem = {
    type: 'object',
    properties: {
      type: { type: 'string' },
      title: { type: 'string' },
      detail: { type: 'string' },
      status: { type: 'integer' },
    },
  };
  schemas.ConstraintViolation = {
    type: 'object',
    properties: {
      ...(schemas.Problem as { properties: Json }).properties,
      violations: {
        type: 'array',
        items: {
          type: 'object',
          properties: { propertyPath: { type: 'string' }, message: { type: 'string' } },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'IDM API v1 (idm-compat sandbox)',
      version: '1.0.0',
      description:
        'The embedded sandbox of idm-compat, implementing the IDM API v1 as reference/idm-api-v1.md describes.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          flows: {
            clientCredentials: {
              tokenUrl: options.tokenUrl,
              scopes: { [READ_SCOPE]: 'Read access', [WRITE_SCOPE]: 'Write access' },
            },
          },
        },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-IServ-Authentication' },
      },
    },
  };
}
