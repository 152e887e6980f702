import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { z } from 'zod';
import type { Clock } from '../../lib/clock.js';
import type { Format } from '../collections.js';
import type { ResourceKind, SandboxData } from '../data.js';
import type { Principal } from '../token-guard.js';

/** Hono environment of the sandbox app: the node-server bindings (raw request, for dropping connections). */
export type SandboxEnv = { Bindings: Partial<HttpBindings> };

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** What a route answers on success; drives the OpenAPI document. */
export type ResponseSpec =
  | { status: 200 | 201; body: 'item'; kind: ResourceKind }
  | { status: 200; body: 'collection'; kind: ResourceKind }
  | { status: 200; body: 'lookup'; kind: ResourceKind }
  | { status: 200; body: 'password' }
  | { status: 200; body: 'openapi' }
  | { status: 204; body: 'none' };

/** The JSON body a route accepts. */
export interface BodySpec<T> {
  schema: z.ZodType<T>;
  /** Accepted request media types; anything else is 415. */
  mediaTypes: readonly string[];
  /** Properties required on create, checked by the handler (422 when missing), listed in the OpenAPI document. */
  required?: readonly string[];
}

/** Extra query parameters, for the OpenAPI document. */
export interface QueryParamSpec {
  name: string;
  description: string;
  required?: boolean;
  type?: 'string' | 'boolean' | 'integer';
}

/** Settings every handler may need. */
export interface ApiSettings {
  clock: Clock;
  pageSize: number;
  maxPageSize: number;
  hydraPrefix: boolean;
}

/** What a handler gets for one request. */
export interface RouteContext<TBody> {
  c: Context<SandboxEnv>;
  data: SandboxData;
  settings: ApiSettings;
  format: Format;
  query: URLSearchParams;
  /** Who called; `anonymous` on public routes. */
  principal: Principal | { kind: 'anonymous' };
  /** A path parameter (always present for the route's own pattern). */
  param(name: string): string;
  /** Reads and validates the body (415/400 problems); call it after the path entity was found. */
  body(): Promise<TBody>;
}

/**
 * One API route: method, path pattern (relative to the API base, OpenAPI style `{id}`), its
 * contract for the OpenAPI document, and the handler. The same list registers the Hono routes,
 * names the request counters and fault-rule keys, and generates the OpenAPI document.
 */
export interface RouteDef<TBody = unknown> {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  /** Served without credentials (the OpenAPI document). */
  public?: boolean;
  body?: BodySpec<TBody>;
  /** Collection query parameters (filters, pagination) of this resource kind. */
  collectionOf?: ResourceKind;
  /** `_attributes` applies to the response, for this resource kind. */
  attributesOf?: ResourceKind;
  query?: readonly QueryParamSpec[];
  response: ResponseSpec;
  /** Declared as a method so routes with typed bodies fit in one `RouteDef[]` list. */
  handle(ctx: RouteContext<TBody>): Response | Promise<Response>;
}

/** Identity helper that infers the body type of a route from its schema. */
export function defineRoute<TBody = undefined>(def: RouteDef<TBody>): RouteDef<TBody> {
  return def;
}

/** Media types for POST bodies. */
export const JSON_BODY = ['application/json', 'application/ld+json'] as const;
/** The only media type PATCH accepts. */
export const MERGE_PATCH = ['application/merge-patch+json'] as const;
