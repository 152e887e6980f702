import { closest } from '../lib/closest.js';
import type { SuccessorClient } from '../successor/client.js';
import { UpstreamError } from '../successor/errors.js';
import { attributesFor, attributesValue, identityAttributes } from './attributes.js';
import type { CompiledKind, CompiledOperation, CompiledProfile, CompiledRequest } from './compile.js';
import type { MappingProblem } from './errors.js';
import { renderText } from './template.js';

type Json = Record<string, unknown>;

const SAMPLE_UUID = '00000000-0000-4000-8000-000000000000';

interface Route {
  path: string;
  pattern: RegExp;
  methods: Map<string, Json>;
}

/** One documented operation: the route's path as the document writes it, and the operation object. */
interface Found {
  path: string;
  operation: Json;
}

/** The successor's OpenAPI document, indexed for the checks. */
interface Api {
  document: Json;
  routes: Route[];
  schemas: Record<string, Json>;
  /** Whether the document lists query parameters at all (a route without any then takes none). */
  documentsQuery: boolean;
}

/**
 * The `file` of a problem with the configuration's successor connection (`successor.baseUrl`,
 * `successor.auth`) rather than with a mapping file: the successor could not be reached (nothing
 * was checked), or stopped answering or refused the sample reads (they were not checked). The CLI
 * puts the configuration file's name in its place.
 */
export const CONFIGURATION = '(configuration)';

/** Failures of reaching the successor (by code; `token`: any failure of the token endpoint). */
const REACHING = new Set<string>(['token', 'timeout', 'unavailable', 'unauthorized']);

/**
 * Checks a profile against a live successor (`mappings check --live`): its OpenAPI document
 * (profile.json `successor.openApi`) must offer every mapped path, method, query parameter,
 * attribute and request-body property (literal body keys, and the writable attributes a
 * `{fields}` body sends), the paging parameters on every collection read page by page, and the
 * readiness read; and one sample read per kind must succeed with the attributes the profile asks
 * for. Each problem names the mapping file, the JSON path and what the successor offers instead.
 * `checked`: whether the profile was checked against the successor at all: not when the successor
 * could not be reached or has no IDM API under the base path (a problem of the configuration).
 */
export async function checkProfileLive(
  profile: CompiledProfile,
  successor: SuccessorClient,
  apiBase: string,
): Promise<{ checked: boolean; problems: MappingProblem[] }> {
  const problems: MappingProblem[] = [];
  const api = await readApi(successor, apiBase, profile.openApi, profile);
  // No document: the successor's connection's problem (nothing checked), or the profile's
  // locations of it (the successor answered its readiness read: that is the finding).
  if (!('routes' in api)) return { checked: api.file !== CONFIGURATION, problems: [api] };

  const sampleVars = (path: readonly string[]) => (path[0] === 'apiBase' ? apiBase : SAMPLE_UUID);
  const kindSchema = new Map<CompiledKind, Json | undefined>();
  // Kinds whose ID attribute (ids.json) the successor lacks, named there once.
  const missingIdAttribute = new Set<CompiledKind>();
  // The collections read page by page (kinds' resolution reads, collection steps), by route.
  const paged = new Map<string, Found>();
  for (const kind of profile.kinds.values()) {
    const at = `$.kinds.${kind.name}`;
    const collection = findRoute(api, 'GET', kind.collection, problems, kind.file, `${at}.collection`);
    const itemPath = renderText(kind.item, sampleVars);
    const item = findRoute(api, 'GET', itemPath, problems, kind.file, `${at}.item`, kind.item.source);
    const schema = item ? responseSchema(api, item.operation) : undefined;
    kindSchema.set(kind, schema);
    if (collection) {
      paged.set(collection.path, collection);
      const params = queryParams(api, collection.operation);
      const wanted: [string, string, string][] = [
        [profile.attributesParam, 'profile.json', '$.successor.attributesParam'],
        [kind.uuidFilter.param, kind.file, `${at}.uuidFilter.param`],
        ...kind.readQuery.map(([name]): [string, string, string] => [
          name,
          kind.file,
          `${at}.readQuery.${name}`,
        ]),
      ];
      if (kind.id.strategy === 'natural') {
        wanted.push([kind.id.filter, kind.idFile, `$.kinds.${kind.name}.filter`]);
        wanted.push([kind.id.filterMany, kind.idFile, `$.kinds.${kind.name}.filterMany`]);
      }
      for (const [name, file, path] of wanted)
        checkParam(api, params, name, `GET ${collection.path}`, problems, file, path);
    }
    if (schema) {
      checkAttribute(schema, kind.uuidAttribute, problems, kind.file, `${at}.uuidAttribute`, kind.label);
      if (kind.id.strategy === 'natural')
        checkAttribute(
          schema,
          kind.id.attribute,
          problems,
          kind.idFile,
          `$.kinds.${kind.name}.attribute`,
          kind.label,
        );
      // The attribute a new entity's legacy ID is made of: the ID table's file names it, and the
      // references to the kind (which read it too) are not blamed for it.
      if (
        kind.id.strategy === 'table' &&
        kind.id.assign.path !== undefined &&
        !checkAttribute(
          schema,
          kind.id.assign.path,
          problems,
          kind.idFile,
          `$.kinds.${kind.name}.assign.attribute`,
          kind.label,
        )
      )
        missingIdAttribute.add(kind);
    }
  }

  for (const resource of profile.resources.values()) {
    const schema = kindSchema.get(resource.kind);
    if (!schema) continue;
    for (const field of resource.fields.values()) {
      const at = `$.fields.${field.name}`;
      if (
        !checkAttribute(
          schema,
          field.attribute,
          problems,
          resource.file,
          `${at}.attribute`,
          resource.kind.label,
        )
      )
        continue;
      const target = field.ref ? kindSchema.get(field.ref) : undefined;
      if (field.ref && target && !missingIdAttribute.has(field.ref)) {
        for (const sub of field.ref.idAttributes) {
          checkAttribute(target, sub.split('.'), problems, resource.file, `${at}.ref`, field.ref.label);
        }
      }
    }
  }

  for (const op of profile.operations.values()) {
    const checkRequest = (request: CompiledRequest, at: string): Found | undefined => {
      const path = renderText(request.path, sampleVars);
      const found = findRoute(
        api,
        request.method,
        path,
        problems,
        op.file,
        `${at}.path`,
        request.path.source,
      );
      if (!found) return undefined;
      const where = `${request.method} ${found.path}`;
      const params = queryParams(api, found.operation);
      for (const [name] of request.query)
        checkParam(api, params, name, where, problems, op.file, `${at}.query[${JSON.stringify(name)}]`);
      checkBody(api, op, request, found, problems, at);
      return found;
    };
    op.steps.forEach((step, index) => {
      const at = `$.operations[${JSON.stringify(op.id)}].steps[${index}]`;
      const found = checkRequest(step, at);
      // The schema lets only a GET read a collection.
      if (found && step.collection) paged.set(found.path, found);
      if (step.undo) checkRequest(step.undo, `${at}.undo`);
    });
    const schema = kindSchema.get(op.kind);
    if (op.relation && schema) {
      checkAttribute(
        schema,
        op.relation.attribute,
        problems,
        op.file,
        `$.operations[${JSON.stringify(op.id)}].relation.attribute`,
        op.kind.label,
      );
    }
    // A misspelt one reads as "not set": the refusal (of a deleted user, say) would never hold.
    if (op.subject?.refuseWhen && schema) {
      checkAttribute(
        schema,
        op.subject.refuseWhen.attribute,
        problems,
        op.file,
        `$.operations[${JSON.stringify(op.id)}].subject.refuseWhen.attribute`,
        op.kind.label,
      );
    }
  }

  checkPaging(api, profile, [...paged.values()], problems);

  // One real read per kind (one page of one entity) with every attribute the profile asks for;
  // not of a kind that reads a missing ID attribute (its own, or one it refers to): that is named
  // in ids.json already, and the read would fail for it alone.
  for (const kind of profile.kinds.values()) {
    const resource = profile.resources.get(kind.name);
    const readsMissing =
      missingIdAttribute.has(kind) ||
      [...(resource?.fields.values() ?? [])].some(
        (field) => field.ref !== undefined && missingIdAttribute.has(field.ref),
      );
    if (readsMissing) continue;
    const attributes = resource
      ? attributesFor(resource, [...resource.fields.keys()])
      : identityAttributes(kind);
    try {
      await successor.request({
        method: 'GET',
        path: kind.collection,
        query: {
          [profile.paging.itemsPerPage]: '1',
          [profile.paging.page]: '1',
          [profile.attributesParam]: attributesValue(profile, attributes),
        },
      });
    } catch (error) {
      // Refused whatever the attributes (a wrong API key, a token without the scope), or no
      // answer at all (the successor gone meanwhile): the connection's problem, once, not each
      // kind's field table's. A status the successor gave (a 500 for one kind's attributes) is
      // that kind's finding.
      if (isAccessOrNetworkFailure(error)) {
        problems.push(
          connectionProblem(error, 'cannot read from the successor, so the sample reads were not checked'),
        );
        break;
      }
      problems.push({
        file: resource?.file ?? kind.file,
        path: resource ? '$.fields' : `$.kinds.${kind.name}`,
        message: `a sample read of ${kind.collection} with the mapped attributes failed: ${
          error instanceof Error ? error.message : String(error)
        }`,
      });
    }
  }
  return { checked: true, problems };
}

/** A refusal of the proxy's own access, or a failure without any answer: not about what one read asked for. */
function isAccessOrNetworkFailure(error: unknown): error is UpstreamError {
  if (!(error instanceof UpstreamError)) return false;
  if (error.source === 'token' || error.code === 'unauthorized') return true;
  if (error.code === 'forbidden') return error.details.scope !== undefined;
  return (error.code === 'unavailable' || error.code === 'timeout') && error.details.status === undefined;
}

/** A failure of reaching the successor at all (unanswered, or the proxy's own access refused), not of one read. */
function isReachingFailure(error: unknown): error is UpstreamError {
  return (
    error instanceof UpstreamError &&
    (REACHING.has(error.source === 'token' ? 'token' : error.code) ||
      (error.code === 'forbidden' && error.details.scope !== undefined))
  );
}

/** The problem of a successor that could not be reached, filed under the configuration's connection settings. */
function connectionProblem(error: UpstreamError, what: string): MappingProblem {
  const credentials = error.source === 'token' || error.code === 'unauthorized' || error.code === 'forbidden';
  return {
    file: CONFIGURATION,
    path: credentials ? '$.successor.auth' : '$.successor.baseUrl',
    message: `${what}: ${error.message}`,
  };
}

async function readApi(
  successor: SuccessorClient,
  apiBase: string,
  locations: readonly string[],
  profile: CompiledProfile,
): Promise<Api | MappingProblem> {
  let document: unknown;
  const tried: string[] = [];
  // Set while every failure was one of reaching the successor at all, not of the locations.
  let unreached: UpstreamError | undefined;
  // Whether every location answered 404.
  let allMissing = locations.length > 0;
  for (const [index, path] of locations.entries()) {
    try {
      document = (await successor.request({ method: 'GET', path })).body;
      break;
    } catch (error) {
      tried.push(`${path}: ${error instanceof UpstreamError ? error.message : String(error)}`);
      const reaching = isReachingFailure(error) ? error : undefined;
      unreached = index === 0 || unreached ? reaching : undefined;
      allMissing &&= error instanceof UpstreamError && error.code === 'not_found';
    }
  }
  // The connection's settings, not the profile's OpenAPI locations: nothing was checked.
  if (document === undefined && unreached !== undefined)
    return connectionProblem(unreached, 'cannot reach the successor, so nothing was checked against it');
  // No document at any location: the locations may be wrong (the profile's), or the API's base
  // (the configuration's). A readiness read that is not found either tells: no IDM API there.
  if (document === undefined && allMissing) {
    const missing = await notFoundAt(successor, profile);
    if (missing)
      return {
        file: CONFIGURATION,
        path: '$.successor.baseUrl',
        message: `no IDM API under ${apiBase || '/'}, so nothing was checked against it: the readiness read (GET ${profile.readinessPath}) and the OpenAPI document (${locations.join(', ')}) are not found there (${missing.message})`,
      };
  }
  if (!document || typeof document !== 'object') {
    return {
      file: 'profile.json',
      path: '$.successor.openApi',
      message: `cannot read the successor's OpenAPI document (${tried.join('; ') || 'not JSON'})`,
    };
  }
  const doc = document as Json;
  const paths = (doc.paths ?? {}) as Record<string, Json>;
  const routes: Route[] = Object.entries(paths).map(([raw, item]) => {
    const path = raw.startsWith(`${apiBase}/`) ? raw.slice(apiBase.length) : raw;
    const pattern = new RegExp(
      `^${path
        .split('/')
        .map((segment) =>
          /^\{[^}]+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('/')}$`,
    );
    const methods = new Map<string, Json>();
    for (const [method, operation] of Object.entries(item ?? {})) {
      if (operation && typeof operation === 'object') methods.set(method.toUpperCase(), operation as Json);
    }
    return { path, pattern, methods };
  });
  const components = (doc.components ?? {}) as Json;
  const documentsQuery = routes.some((route) =>
    [...route.methods.values()].some((operation) => queryParams(undefined, operation).size > 0),
  );
  return {
    document: doc,
    routes,
    schemas: (components.schemas ?? {}) as Record<string, Json>,
    documentsQuery,
  };
}

/** The readiness read's 404, when the successor answers it with one. */
async function notFoundAt(
  successor: SuccessorClient,
  profile: CompiledProfile,
): Promise<UpstreamError | undefined> {
  try {
    await successor.request({
      method: 'GET',
      path: profile.readinessPath,
      query: { [profile.paging.itemsPerPage]: '1' },
    });
    return undefined;
  } catch (error) {
    return error instanceof UpstreamError && error.code === 'not_found' ? error : undefined;
  }
}

function findRoute(
  api: Api,
  method: string,
  path: string,
  problems: MappingProblem[],
  file: string,
  at: string,
  /** The path as the table writes it, placeholders and all, for messages and suggestions. */
  shape?: string,
): Found | undefined {
  const clean = path.replace(/[?#].*$/, '');
  const route = api.routes.find((r) => r.pattern.test(clean));
  const display = (shape ?? clean).replace(/\{[^}]*\}/g, '{}');
  const operation = route?.methods.get(method);
  if (route && operation) return { path: route.path, operation };
  if (route) {
    problems.push({
      file,
      path: at,
      message: `the successor has ${route.path} but not with ${method}; it offers ${[...route.methods.keys()].join(', ')}`,
    });
  } else {
    const candidates = api.routes.filter((r) => r.methods.has(method));
    const byShape = new Map(candidates.map((r) => [r.path.replace(/\{[^}]*\}/g, '{}'), r.path]));
    const offered = closest(display, [...byShape.keys()]).map((shapeOf) => byShape.get(shapeOf) ?? shapeOf);
    problems.push({
      file,
      path: at,
      message: `the successor has no path like ${method} ${shape ?? clean}${offered.length > 0 ? `; closest it offers: ${offered.join(', ')}` : ''}`,
    });
  }
  return undefined;
}

function queryParams(api: Api | undefined, operation: Json): Set<string> {
  const out = new Set<string>();
  const parameters = Array.isArray(operation.parameters) ? (operation.parameters as unknown[]) : [];
  for (const raw of parameters) {
    const parameter = api ? deref(api, raw) : raw;
    if (!isObject(parameter)) continue;
    if (parameter.in === 'query' && typeof parameter.name === 'string')
      out.add(parameter.name.replace(/\[\]$/, ''));
  }
  return out;
}

/**
 * Checks profile.json `successor.paging` on every collection read page by page, and that
 * `successor.readinessPath` is a GET route (`/readyz` reads it with the page size parameter). The
 * sample reads cannot tell: they read the first page only, which a successor that ignores an
 * unknown page parameter answers all the same (then every list of more than one page fails as a
 * repeated page); and a readiness path it lacks fails every `/readyz` (503), nothing else.
 */
function checkPaging(
  api: Api,
  profile: CompiledProfile,
  paged: readonly Found[],
  problems: MappingProblem[],
): void {
  const { page, itemsPerPage } = profile.paging;
  let readiness = findRoute(
    api,
    'GET',
    profile.readinessPath,
    problems,
    'profile.json',
    '$.successor.readinessPath',
  );
  // An item's route (`/users/admin`, `/users/{id}` as written) is no collection to list one item
  // of: /readyz would read an entity that may not exist, or the placeholder as an ID (404, 503).
  if (readiness && /\{[^}]*\}/.test(readiness.path)) {
    problems.push({
      file: 'profile.json',
      path: '$.successor.readinessPath',
      message: `GET ${readiness.path} reads one entity, not a collection; the readiness read lists one item of a collection${paged[0] ? `, such as ${paged[0].path}` : ''}`,
    });
    readiness = undefined;
  }
  const offers = (found: Found, what = '') => ({
    where: `GET ${found.path}${what}`,
    params: queryParams(api, found.operation),
  });
  const collections = paged.map((found) => offers(found));
  const sized =
    readiness && !paged.some((found) => found.path === readiness.path)
      ? [...collections, offers(readiness, ' (the readiness read)')]
      : collections;
  // The other paging setting is no near name to suggest: it is in use already.
  checkParamOn(api, page, collections, problems, 'profile.json', '$.successor.paging.page', itemsPerPage);
  checkParamOn(api, itemsPerPage, sized, problems, 'profile.json', '$.successor.paging.itemsPerPage', page);
}

function checkParam(
  api: Api,
  params: Set<string>,
  name: string,
  where: string,
  problems: MappingProblem[],
  file: string,
  at: string,
): void {
  checkParamOn(api, name, [{ where, params }], problems, file, at);
}

/**
 * Checks that every route given documents the query parameter `name`. One problem names every
 * route that lacks it: one setting misspelt is one mistake, however many routes it breaks.
 */
function checkParamOn(
  api: Api,
  name: string,
  routes: readonly { where: string; params: Set<string> }[],
  problems: MappingProblem[],
  file: string,
  at: string,
  /** A parameter not to suggest as the near name. */
  taken?: string,
): void {
  // A document that lists no query parameter anywhere says nothing about them.
  if (!api.documentsQuery) return;
  const lacking = routes.filter((route) => !route.params.has(name.replace(/\[\]$/, '')));
  if (lacking.length === 0) return;
  const candidates = new Set(lacking.flatMap((route) => [...route.params]));
  if (taken !== undefined) candidates.delete(taken);
  const offered = closest(name, [...candidates]);
  const none = lacking.length === 1 ? '; it takes none' : '; they take none';
  problems.push({
    file,
    path: at,
    message: `the successor documents no query parameter ${name} on ${lacking.map((route) => route.where).join(', ')}${
      offered.length > 0 ? `; closest: ${offered.join(', ')}` : none
    }`,
  });
}

/**
 * Checks what a request sends against the route's documented request body: that there is one,
 * for the request's content type, and that its schema has every literal key of the body
 * template — and, for a `{fields}` body, the attribute of every writable field of the kind's
 * field table.
 */
function checkBody(
  api: Api,
  op: CompiledOperation,
  request: CompiledRequest,
  found: Found,
  problems: MappingProblem[],
  at: string,
): void {
  const body = request.body;
  if (body === undefined) return;
  const where = `${request.method} ${found.path}`;
  const problem = (path: string, message: string) => problems.push({ file: op.file, path, message });
  const requestBody = deref(api, found.operation.requestBody);
  const content = isObject(requestBody) && isObject(requestBody.content) ? requestBody.content : undefined;
  if (!content || Object.keys(content).length === 0) {
    problem(`${at}.body`, `the successor documents no request body for ${where}`);
    return;
  }
  const media = content[request.contentType];
  if (!isObject(media)) {
    problem(
      `${at}.contentType`,
      `the successor's ${where} takes ${Object.keys(content).join(', ')}, not ${request.contentType}`,
    );
    return;
  }
  const properties = schemaProperties(api, media.schema);
  if (!properties) return;
  const offered = (wanted: string) => {
    const near = closest(wanted, [...properties]);
    return near.length > 0 ? `; closest: ${near.join(', ')}` : '; it documents no properties';
  };
  const whole = body.type === 'template' ? body.template.whole : undefined;
  if (whole && whole.path.length === 1 && whole.path[0] === 'fields') {
    const resource = op.resource;
    if (!resource) return;
    for (const field of resource.fields.values()) {
      const name = field.attribute[0];
      if (!field.writable || name === undefined || properties.has(name)) continue;
      problem(
        `${at}.body`,
        `{fields} sends ${name} (field ${field.name}, writable in ${resource.file}), which the body of the successor's ${where} does not take; it takes ${[...properties].join(', ') || 'nothing'}`,
      );
    }
    return;
  }
  if (body.type !== 'object') return;
  for (const [key] of body.entries) {
    if (properties.has(key)) continue;
    problem(
      `${at}.body${/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`}`,
      `the body of the successor's ${where} has no property ${key}${offered(key)}`,
    );
  }
}

/** The property names a body schema documents (`allOf` merged, `anyOf`/`oneOf` united); undefined when it names none. */
function schemaProperties(api: Api, value: unknown, depth = 0): Set<string> | undefined {
  const schema = deref(api, value);
  if (!isObject(schema) || depth > 8) return undefined;
  let out: Set<string> | undefined;
  const add = (names: Iterable<string>) => {
    out ??= new Set();
    for (const name of names) out.add(name);
  };
  if (isObject(schema.properties)) add(Object.keys(schema.properties));
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    const parts = schema[key];
    if (!Array.isArray(parts)) continue;
    for (const part of parts) {
      const names = schemaProperties(api, part, depth + 1);
      if (names) add(names);
    }
  }
  return out;
}

/** Follows a local `$ref` (`#/components/…`) of the document; anything else as it is. */
function deref(api: Api, value: unknown): unknown {
  let current = value;
  for (let hops = 0; hops < 10 && isObject(current) && typeof current.$ref === 'string'; hops++) {
    const ref = current.$ref;
    if (!ref.startsWith('#/')) return current;
    let target: unknown = api.document;
    for (const segment of ref.slice(2).split('/')) {
      const key = segment.replaceAll('~1', '/').replaceAll('~0', '~');
      target = isObject(target) ? target[key] : undefined;
    }
    current = target;
  }
  return current;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function responseSchema(api: Api, operation: Json): Json | undefined {
  const ok = ((operation.responses ?? {}) as Json)['200'];
  const ref = firstRef(ok);
  const name = ref?.replace(/^#\/components\/schemas\//, '');
  return name === undefined ? undefined : api.schemas[name];
}

function firstRef(value: unknown): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const ref = (value as Json).$ref;
  if (typeof ref === 'string') return ref;
  for (const item of Object.values(value as Json)) {
    const found = firstRef(item);
    if (found) return found;
  }
  return undefined;
}

function checkAttribute(
  schema: Json,
  attribute: readonly string[],
  problems: MappingProblem[],
  file: string,
  at: string,
  label: string,
): boolean {
  const properties = (schema.properties ?? {}) as Json;
  const [name] = attribute;
  if (name === undefined || Object.hasOwn(properties, name)) return true;
  const offered = closest(name, Object.keys(properties));
  problems.push({
    file,
    path: at,
    message: `the successor's ${label} has no attribute ${name}${offered.length > 0 ? `; closest: ${offered.join(', ')}` : ''}`,
  });
  return false;
}
