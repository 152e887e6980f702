import type { EntityRecord, ResourceKind, SandboxData } from './data.js';
import { ProblemError } from './problems.js';
import { type AnyResource, iri, RESOURCES } from './resources.js';

/**
 * Which fields to render: a field name maps to null (the whole field: a value, an IRI or an IRI
 * array) or to a nested selection (a relation rendered as embedded objects).
 */
export type Selection = Map<string, Selection | null>;

/**
 * The `_attributes` paths of a request: `_attributes=a,b,c.d` and/or `_attributes[]=a&…`;
 * undefined when the request does not limit attributes.
 */
export function attributePaths(query: URLSearchParams): string[] | undefined {
  const raw = [...query.getAll('_attributes'), ...query.getAll('_attributes[]')];
  const paths = raw
    .flatMap((value) => value.split(','))
    .map((path) => path.trim())
    .filter((path) => path.length > 0);
  return paths.length > 0 ? paths : undefined;
}

/** Compiles `_attributes` paths against a resource; an unknown attribute is a 400. */
export function parseSelection(kind: ResourceKind, paths: string[]): Selection {
  const root: Selection = new Map();
  for (const path of paths) addPath(root, RESOURCES[kind], path.split('.'), path);
  return root;
}

function addPath(selection: Selection, resource: AnyResource, segments: string[], whole: string): void {
  const [name, ...rest] = segments;
  // Own properties only: `constructor`, `__proto__`, `toString` … are no attributes.
  const field =
    name === undefined || !Object.hasOwn(resource.fields, name) ? undefined : resource.fields[name];
  if (name === undefined || !field) {
    throw new ProblemError(
      400,
      `Unknown attribute "${whole}": ${resource.label} has no attribute "${name ?? ''}".`,
    );
  }
  if (rest.length === 0) {
    if (!selection.has(name)) selection.set(name, null);
    return;
  }
  if (field.kind === 'scalar') {
    throw new ProblemError(
      400,
      `Unknown attribute "${whole}": "${name}" of ${resource.label} has no sub-attributes.`,
    );
  }
  let nested = selection.get(name);
  if (!nested) {
    nested = new Map();
    selection.set(name, nested);
  }
  addPath(nested, RESOURCES[field.target], rest, whole);
}

/**
 * The most entity objects one response embeds for `_attributes` dot paths. Nested paths multiply
 * (`groups.members.groups.members…`: every level embeds every link again), so a short query could
 * otherwise ask for billions of objects and hold the single-threaded sandbox for good. A million
 * leaves room for what a proxy asks of a large school: a page of 500 groups with their members
 * embedded (`members.user`) is the sum of those groups' sizes, 100,000 for 10,000 users in ten
 * groups each.
 */
export const MAX_EMBEDDED_OBJECTS = 1_000_000;

/** How entities are rendered for one request. */
export interface RenderContext {
  data: SandboxData;
  /** JSON-LD output: `@id` and `@type` on every entity object. */
  jsonld: boolean;
  /**
   * Embedded objects this response may still render (start at MAX_EMBEDDED_OBJECTS); past it, 400.
   * `afterWrite`: the answer of a write, rendered once the data has changed.
   */
  embedBudget: { left: number; afterWrite: boolean };
}

/** Takes `count` embedded objects from the response's budget, or refuses the request with 400. */
function spendEmbedBudget(ctx: RenderContext, count: number): void {
  ctx.embedBudget.left -= count;
  if (ctx.embedBudget.left < 0) {
    // Counted as the answer is rendered: for a write, after the change (which stays done).
    const done = ctx.embedBudget.afterWrite
      ? ' The write itself was done: read the entity back with fewer nested relations.'
      : '';
    throw new ProblemError(
      400,
      `The _attributes dot paths embed more than ${MAX_EMBEDDED_OBJECTS} objects in this response: select fewer nested relations or ask for a smaller page (itemsPerPage).${done}`,
    );
  }
}

/**
 * Renders one entity: every field without a selection (relations as IRIs), otherwise only the
 * selected fields, with nested selections as embedded objects (null stays null).
 */
export function renderEntity(
  kind: ResourceKind,
  record: EntityRecord,
  selection: Selection | undefined,
  ctx: RenderContext,
): Record<string, unknown> {
  const resource = RESOURCES[kind];
  const out: Record<string, unknown> = {};
  if (ctx.jsonld) {
    out['@id'] = iri(kind, record.id);
    out['@type'] = resource.type;
  }
  for (const [name, field] of Object.entries(resource.fields)) {
    if (selection && !selection.has(name)) continue;
    const nested = selection?.get(name) ?? null;
    switch (field.kind) {
      case 'scalar':
        out[name] = field.get(record);
        break;
      case 'ref': {
        const id = field.get(record, ctx.data);
        const target = id === null ? undefined : ctx.data.store(field.target).get(id);
        if (!target) out[name] = null;
        else if (nested) {
          spendEmbedBudget(ctx, 1);
          out[name] = renderEntity(field.target, target, nested, ctx);
        } else out[name] = iri(field.target, target.id);
        break;
      }
      case 'refs': {
        const targets = ctx.data.resolve(field.target, field.get(record, ctx.data));
        if (nested) spendEmbedBudget(ctx, targets.length);
        out[name] = targets.map((t) =>
          nested ? renderEntity(field.target, t, nested, ctx) : iri(field.target, t.id),
        );
        break;
      }
    }
  }
  return out;
}
