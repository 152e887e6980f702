import type { SuccessorClient } from '../successor/client.js';
import { UpstreamError } from '../successor/errors.js';
import { attributesFor, attributesValue, identityAttributes } from './attributes.js';
import type { CompiledKind, CompiledProfile } from './compile.js';
import type { MappingProblem } from './errors.js';
import { renderText } from './template.js';

type Json = Record<string, unknown>;

const SAMPLE_UUID = '00000000-0000-4000-8000-000000000000';

interface Route {
  path: string;
  pattern: RegExp;
  methods: Map<string, Json>;
}

/** The successor's OpenAPI document, indexed for the checks. */
interface Api {
  routes: Route[];
  schemas: Record<string, Json>;
}

/**
 * Checks a profile against a live successor (`mappings check --live`): its OpenAPI document
 * must offer every mapped path, method, query parameter and attribute, and one sample read per
 * kind must succeed with the attributes the profile asks for. Each problem names the mapping
 * file, the JSON path and what the successor offers instead.
 */
export async function checkProfileLive(
  profile: CompiledProfile,
  successor: SuccessorClient,
  apiBase: string,
): Promise<MappingProblem[]> {
  const problems: MappingProblem[] = [];
  const api = await readApi(successor, apiBase);
  if (typeof api === 'string') return [{ file: '(successor)', path: '$', message: api }];

  const sampleVars = (path: readonly string[]) => (path[0] === 'apiBase' ? apiBase : SAMPLE_UUID);
  const kindSchema = new Map<CompiledKind, Json | undefined>();
  for (const kind of profile.kinds.values()) {
    const at = `$.kinds.${kind.name}`;
    const collection = findRoute(api, 'GET', kind.collection, problems, kind.file, `${at}.collection`);
    const itemPath = renderText(kind.item, sampleVars);
    const item = findRoute(api, 'GET', itemPath, problems, kind.file, `${at}.item`, kind.item.source);
    const schema = item ? responseSchema(api, item) : undefined;
    kindSchema.set(kind, schema);
    if (collection) {
      const params = queryParams(collection);
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
        checkParam(params, name, kind.collection, problems, file, path);
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
      if (field.ref && target) {
        for (const sub of field.ref.idAttributes) {
          checkAttribute(target, sub.split('.'), problems, resource.file, `${at}.ref`, field.ref.label);
        }
      }
    }
  }

  for (const op of profile.operations.values()) {
    op.steps.forEach((step, index) => {
      const at = `$.operations[${JSON.stringify(op.id)}].steps[${index}]`;
      const path = renderText(step.path, sampleVars);
      const route = findRoute(api, step.method, path, problems, op.file, `${at}.path`, step.path.source);
      if (route && step.method === 'GET') {
        const params = queryParams(route);
        for (const [name] of step.query) checkParam(params, name, path, problems, op.file, `${at}.query`);
      }
      if (step.undo) {
        const undoPath = renderText(step.undo.path, sampleVars);
        findRoute(
          api,
          step.undo.method,
          undoPath,
          problems,
          op.file,
          `${at}.undo.path`,
          step.undo.path.source,
        );
      }
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
  }

  // One real read per kind with every attribute the profile asks for.
  for (const kind of profile.kinds.values()) {
    const resource = profile.resources.get(kind.name);
    const attributes = resource
      ? attributesFor(resource, [...resource.fields.keys()])
      : identityAttributes(kind);
    try {
      await successor.readCollection(kind.collection, {
        query: {
          itemsPerPage: '1',
          page: '1',
          [profile.attributesParam]: attributesValue(profile, attributes),
        },
      });
    } catch (error) {
      problems.push({
        file: resource?.file ?? kind.file,
        path: resource ? '$.fields' : `$.kinds.${kind.name}`,
        message: `a sample read of ${kind.collection} with the mapped attributes failed: ${
          error instanceof Error ? error.message : String(error)
        }`,
      });
    }
  }
  return problems;
}

async function readApi(successor: SuccessorClient, apiBase: string): Promise<Api | string> {
  let document: unknown;
  const tried: string[] = [];
  for (const path of ['/docs.jsonopenapi', '/docs.json']) {
    try {
      document = (await successor.request({ method: 'GET', path })).body;
      break;
    } catch (error) {
      tried.push(`${path}: ${error instanceof UpstreamError ? error.message : String(error)}`);
    }
  }
  if (!document || typeof document !== 'object') {
    return `cannot read the successor's OpenAPI document (${tried.join('; ') || 'not JSON'})`;
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
  return { routes, schemas: (components.schemas ?? {}) as Record<string, Json> };
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
): Json | undefined {
  const clean = path.replace(/[?#].*$/, '');
  const route = api.routes.find((r) => r.pattern.test(clean));
  const display = (shape ?? clean).replace(/\{[^}]*\}/g, '{}');
  const operation = route?.methods.get(method);
  if (route && operation) return operation;
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

function queryParams(operation: Json): Set<string> {
  const out = new Set<string>();
  const parameters = Array.isArray(operation.parameters) ? (operation.parameters as Json[]) : [];
  for (const parameter of parameters) {
    if (parameter.in === 'query' && typeof parameter.name === 'string')
      out.add(parameter.name.replace(/\[\]$/, ''));
  }
  return out;
}

function checkParam(
  params: Set<string>,
  name: string,
  where: string,
  problems: MappingProblem[],
  file: string,
  at: string,
): void {
  // Paging parameters are the client's own business; they are added to every collection read.
  if (params.size === 0 || params.has(name.replace(/\[\]$/, ''))) return;
  const offered = closest(name, [...params]);
  problems.push({
    file,
    path: at,
    message: `the successor documents no query parameter ${name} on ${where}${offered.length > 0 ? `; closest: ${offered.join(', ')}` : ''}`,
  });
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

/** Up to three candidates most like `wanted` (edit distance), for "what it offers instead". */
function closest(wanted: string, candidates: readonly string[]): string[] {
  return [...candidates]
    .map((candidate) => ({
      candidate,
      distance: editDistance(wanted.toLowerCase(), candidate.toLowerCase()),
    }))
    .sort((a, b) => a.distance - b.distance)
    .slice(0, 3)
    .map((c) => c.candidate);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] ?? 0;
      row[j] = Math.min((row[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] ?? 0;
}
