import { quoteInput } from '../lib/quote.js';
import type { CallStats } from '../observe/observer.js';
import { UpstreamError } from '../successor/errors.js';
import { getPath, LEGACY_ID_FIELD, setPath } from './attributes.js';
import type {
  CompiledField,
  CompiledKind,
  CompiledOperation,
  CompiledResource,
  CompiledStep,
} from './compile.js';
import { type InputProblem, TranslationError } from './errors.js';
import { readValue, type UnusableValue, WriteValueError, writeValue } from './formats.js';
import { type Entity, type IdResolver, referenceUuid } from './ids.js';

/** One entity rendered in legacy shape, with its own legacy ID. */
export interface RenderedEntity {
  id: string | null;
  value: Record<string, unknown>;
}

/** One legacy field of a rendered answer: its name, and its row of the field table (none for `_id`). */
interface RenderColumn {
  name: string;
  field: CompiledField | undefined;
  /**
   * The kind whose legacy IDs the column's references become: a reference field's `ref`; for a
   * `contains` field, the kind its items are references to when the successor sends references
   * instead of embedded objects (see `containsKind`).
   */
  ref: CompiledKind | undefined;
}

/**
 * How a resource renders one list of legacy fields: the field table rows looked up and checked
 * once (handlers pass constant lists, so the executor keeps a plan per list), not per entity.
 */
export interface RenderPlan {
  resource: CompiledResource;
  columns: readonly RenderColumn[];
  /** Told about a successor value a field's format cannot render (rendered as null). */
  unusable: UnusableValue | undefined;
  /**
   * A read's plan: an entity without its own legacy ID, or a list field sent as no list, fails
   * (`bad_response`) instead of rendering as `"_id": null` or an empty list. A write's answer is
   * rendered all the same (the write is done; a 502 would have it sent again), as is the SSO's
   * read of a token's user (which tells a user without a name itself).
   */
  strict: boolean;
}

/** Told about a successor value of `resource` that a field's format cannot render (see `readValue`). */
export type UnusableFieldValue = (resource: CompiledResource, field: CompiledField, value: unknown) => void;

/** The render plan of `fields` (legacy names, in answer order); a profile error names a field it cannot read. */
export function renderPlan(
  resource: CompiledResource,
  fields: readonly string[],
  unusable: UnusableFieldValue | undefined,
  strict: boolean,
): RenderPlan {
  const columns = fields.map((name) => {
    const field = name === LEGACY_ID_FIELD ? undefined : resource.fields.get(name);
    return { name, field, ref: field?.ref ?? (field?.contains ? containsKind(resource, field) : undefined) };
  });
  for (const { name, field } of columns) {
    if (name !== LEGACY_ID_FIELD && !field?.readable) {
      throw new TranslationError(
        'profile_error',
        `The mapping profile has no readable field "${name}" for ${resource.resource}; add it to ${resource.file}`,
      );
    }
  }
  return {
    resource,
    columns,
    unusable: unusable && ((field, value) => unusable(resource, field, value)),
    strict,
  };
}

/**
 * A list field's successor value as a list: a JSON array, or an object whose keys are all array
 * indices (what PHP writes for an array with gaps, such as a collection an item was removed from:
 * `{"0": …, "2": …}`; `{}` is none), as the list of its values in key order; anything else as it is.
 */
function listAt(entity: unknown, attribute: readonly string[]): unknown {
  const raw = getPath(entity, attribute);
  if (Array.isArray(raw) || raw === null || typeof raw !== 'object') return raw;
  const keys = Object.keys(raw);
  // Integer-like keys come first, in ascending order, in every object's own key order. An empty
  // object (PHP's empty array with JSON_FORCE_OBJECT) is an empty list.
  if (!keys.every((key) => INDEX_KEY.test(key))) return raw;
  return keys.map((key) => (raw as Record<string, unknown>)[key]);
}

const INDEX_KEY = /^(?:0|[1-9][0-9]{0,8})$/;

/**
 * The kind a `contains` field's items refer to, when a reference (an IRI, a UUID) among them can
 * be checked by its legacy ID: a reference field of the resource reads the same attribute (the
 * default profile's `roles` for `admin`), and that kind's legacy ID is the attribute `contains`
 * compares (its natural ID). Undefined otherwise: references there cannot be checked.
 */
function containsKind(resource: CompiledResource, field: CompiledField): CompiledKind | undefined {
  const attribute = field.attribute.join('.');
  for (const other of resource.fields.values()) {
    const kind = other.ref;
    if (!kind || !other.many || other.attribute.join('.') !== attribute) continue;
    if (kind.id.strategy === 'natural' && kind.id.attribute.join('.') === field.contains?.key.join('.'))
      return kind;
  }
  return undefined;
}

/**
 * The items of a `contains` field's list that are references (an IRI, a UUID, an object without
 * the compared key), not embedded objects that carry the key.
 */
function containsReferences(field: CompiledField, raw: unknown): unknown[] {
  const key = field.contains?.key ?? [];
  return Array.isArray(raw)
    ? raw.filter((item) => typeof item !== 'object' || item === null || getPath(item, key) === undefined)
    : [];
}

/**
 * Renders successor entities as legacy objects with exactly the plan's fields (legacy names, in
 * that order; `_id` is the entity's legacy ID). References become legacy IDs, resolved per kind in
 * one batch for all entities together, so a list of any length costs no extra successor call.
 * When every reference carries its legacy ID itself (natural IDs embedded, UUIDs) the answer is
 * there at once, without waiting for anything.
 */
export function renderEntities(
  plan: RenderPlan,
  entities: readonly Entity[],
  ids: IdResolver,
  /** The legacy request's counter, for a resolver whose successor does not count. */
  calls?: CallStats,
): RenderedEntity[] | Promise<RenderedEntity[]> {
  const [only] = entities;
  const atOnce = entities.length === 1 && only !== undefined ? renderAtOnce(plan, only, ids) : undefined;
  if (atOnce) return [atOnce];
  return prepareRender(plan, entities, ids, calls, (render) => render(0, entities.length));
}

/**
 * How many entities of a page `renderEntitiesJson` renders and writes as JSON text at a time.
 * V8 pretenures an allocation site (allocates its objects straight in the old generation) when a
 * young-generation collection finds at least 85 of at least 100 of its recent objects alive. The
 * objects of a whole page rendered at once (500 legacy objects, their lists of IDs) can be, and
 * once pretenured they keep the young objects they point to alive until a full collection, a
 * page's worth at every young one: over a long list that grew the old generation by tens of MiB
 * in some runs. At 16 entities a site has at most 16 objects alive per column it makes them for
 * (the lists of IDs: 48 for the extended user list's three list columns).
 */
const RENDER_CHUNK = 16;

/**
 * The JSON text of `entities` rendered as `renderEntities` renders them (the same bytes as
 * `JSON.stringify` of its values), rendered and written RENDER_CHUNK entities at a time, so that
 * the legacy objects of a large page are never all alive together. Each chunk's text keeps its
 * `[` when it is the first and its `]` when it is the last, so that one join makes the page.
 */
export function renderEntitiesJson(
  plan: RenderPlan,
  entities: readonly Entity[],
  ids: IdResolver,
): string | Promise<string> {
  const count = entities.length;
  if (count === 0) return '[]';
  return prepareRender(plan, entities, ids, undefined, (render) => {
    const parts: string[] = [];
    for (let from = 0; from < count; from += RENDER_CHUNK) {
      const to = Math.min(count, from + RENDER_CHUNK);
      const text = JSON.stringify(render(from, to).map((entity) => entity.value));
      parts.push(text.slice(from === 0 ? 0 : 1, to === count ? text.length : -1));
    }
    return parts.join(',');
  });
}

/** Renders entities `from` (inclusive) to `to` (exclusive) of those given to `prepareRender`. */
type RenderRange = (from: number, to: number) => RenderedEntity[];

/** `counts` of a cell with a single reference (see prepareRender). */
const SINGLE = -1;

/**
 * Phases 1 and 2 of rendering `entities`: every reference of every entity, grouped by target
 * kind, then one translation per kind (kinds whose references carry their IDs need no waiting);
 * then `finish` with the renderer of phase 3. Where each entity's references wait for their
 * legacy IDs is kept in two flat lists with a cell per entity and column, not in lists per entity
 * (which a large page would allocate by the hundred, see RENDER_CHUNK): `starts` holds the
 * reference's slot in its kind's batch, or where the entity's run of references begins, -1 for
 * none; `counts` the length of that run, SINGLE for one reference.
 */
function prepareRender<T>(
  plan: RenderPlan,
  entities: readonly Entity[],
  ids: IdResolver,
  calls: CallStats | undefined,
  finish: (render: RenderRange) => T,
): T | Promise<T> {
  const { resource, columns } = plan;
  const batches = new Map<CompiledKind, unknown[]>();
  const enqueue = (kind: CompiledKind, ref: unknown): number => {
    let list = batches.get(kind);
    if (!list) {
      list = [];
      batches.set(kind, list);
    }
    list.push(ref);
    return list.length - 1;
  };
  const ownSlots: number[] = [];
  const starts: number[] = [];
  const counts: number[] = [];
  for (const entity of entities) {
    ownSlots.push(enqueue(resource.kind, entity));
    for (const { field, ref: kind } of columns) {
      let start = -1;
      let count = SINGLE;
      if (field && kind) {
        const raw =
          field.many || field.contains ? listAt(entity, field.attribute) : getPath(entity, field.attribute);
        // A contains field waits only for the items that are references (none, usually).
        const refs = field.contains ? containsReferences(field, raw) : raw;
        if (field.many || field.contains) {
          if (Array.isArray(refs) && (refs.length > 0 || !field.contains)) {
            start = batches.get(kind)?.length ?? 0;
            count = refs.length;
            for (const ref of refs) enqueue(kind, ref);
          }
        } else if (raw !== null && raw !== undefined) start = enqueue(kind, raw);
      }
      starts.push(start);
      counts.push(count);
    }
  }

  const resolved = new Map<CompiledKind, (string | null)[]>();
  const lookups: Promise<unknown>[] = [];
  for (const [kind, refs] of batches) {
    const known = ids.toLegacyAtOnce(kind, refs);
    if (known) resolved.set(kind, known);
    else lookups.push(ids.toLegacy(kind, refs, calls).then((legacyIds) => resolved.set(kind, legacyIds)));
  }
  const cells = { ownSlots, starts, counts };
  const render: RenderRange = (from, to) => renderObjects(plan, entities, cells, resolved, from, to);
  return lookups.length > 0 ? Promise.all(lookups).then(() => finish(render)) : finish(render);
}

/** Phase 3 of rendering: the legacy objects of entities `from` to `to`, every reference's legacy ID known. */
function renderObjects(
  { resource, columns, unusable, strict }: RenderPlan,
  entities: readonly Entity[],
  cells: { ownSlots: readonly number[]; starts: readonly number[]; counts: readonly number[] },
  resolved: ReadonlyMap<CompiledKind, readonly (string | null)[]>,
  from: number,
  to: number,
): RenderedEntity[] {
  const legacyAt = (kind: CompiledKind, slot: number) => resolved.get(kind)?.[slot] ?? null;
  const width = columns.length;
  const out: RenderedEntity[] = [];
  for (let e = from; e < to; e++) {
    const entity = entities[e] as Entity;
    const id = legacyAt(resource.kind, cells.ownSlots[e] ?? -1);
    if (id === null && strict) throw withoutLegacyId(resource.kind, entity);
    const value: Record<string, unknown> = {};
    for (let c = 0; c < width; c++) {
      const { name, field, ref } = columns[c] as RenderColumn;
      const cell = e * width + c;
      value[name] = field
        ? readField(
            field,
            entity,
            ref &&
              refValue(
                ref,
                field.many || field.contains !== undefined,
                cells.starts[cell] ?? -1,
                cells.counts[cell] ?? SINGLE,
                legacyAt,
              ),
            unusable,
            strict,
          )
        : id;
    }
    out.push({ id, value });
  }
  return out;
}

/**
 * A reference field's legacy value from its cell (see prepareRender): an ID (or null), or the
 * list of IDs found; undefined for a list field whose value was not a list.
 */
function refValue(
  kind: CompiledKind,
  many: boolean,
  start: number,
  count: number,
  legacyAt: (kind: CompiledKind, slot: number) => string | null,
): unknown {
  if (!many) return start >= 0 ? legacyAt(kind, start) : null;
  if (start < 0) return undefined;
  const legacyIds: string[] = [];
  for (let slot = start; slot < start + count; slot++) {
    const legacyId = legacyAt(kind, slot);
    if (legacyId !== null) legacyIds.push(legacyId);
  }
  return legacyIds;
}

/**
 * One entity rendered at once, without batching, when its own ID and every reference it has carry
 * their legacy IDs themselves (the usual single read); undefined when one needs a look-up.
 */
function renderAtOnce(plan: RenderPlan, entity: Entity, ids: IdResolver): RenderedEntity | undefined {
  const id = ids.legacyAtOnce(plan.resource.kind, entity);
  if (id === undefined) return undefined;
  if (id === null && plan.strict) throw withoutLegacyId(plan.resource.kind, entity);
  const value: Record<string, unknown> = {};
  for (const { name, field, ref: kind } of plan.columns) {
    if (!field) {
      value[name] = id;
      continue;
    }
    let ref: unknown;
    if (field.contains && kind) {
      const references = containsReferences(field, listAt(entity, field.attribute));
      if (references.length > 0) {
        const legacyIds: string[] = [];
        for (const item of references) {
          const legacyId = ids.legacyAtOnce(kind, item);
          if (legacyId === undefined) return undefined;
          if (legacyId !== null) legacyIds.push(legacyId);
        }
        ref = legacyIds;
      }
    } else if (field.ref) {
      const raw = field.many ? listAt(entity, field.attribute) : getPath(entity, field.attribute);
      if (!field.many) ref = ids.legacyAtOnce(field.ref, raw);
      else if (Array.isArray(raw)) {
        const legacyIds: string[] = [];
        for (const item of raw) {
          const legacyId = ids.legacyAtOnce(field.ref, item);
          if (legacyId === undefined) return undefined;
          if (legacyId !== null) legacyIds.push(legacyId);
        }
        ref = legacyIds;
      }
      if (ref === undefined && !field.many) return undefined;
    }
    value[name] = readField(field, entity, ref, plan.unusable, plan.strict);
  }
  return { id, value };
}

/** The failure of a list field whose successor value is no list. */
function notAList(field: CompiledField, raw: unknown): UpstreamError {
  const what = typeof raw === 'object' ? 'an object' : `a ${typeof raw}`;
  // A text may be the link to a sub-resource that serves the list, instead of the list embedded.
  const link =
    typeof raw === 'string' && raw.includes('/') ? ' (a link to a sub-resource? ask for it embedded)' : '';
  return new UpstreamError(
    'bad_response',
    `the successor sent ${field.attribute.join('.')} as ${what}${link}, not as a list, so the legacy field "${field.name}" cannot be read; check the successor's answers against the field table`,
  );
}

/**
 * The failure of a read whose entity has no legacy ID of its own (a natural ID missing or neither
 * a text nor a number, a UUID missing): answered with `"_id": null` in a list, an integration
 * could not tell it from others, nor ask for it again (see RenderPlan.strict). A natural ID left
 * out entirely is first looked up by the entity's UUID, as a reference without it is: one read
 * before the failure.
 */
function withoutLegacyId(kind: CompiledKind, entity: Entity): UpstreamError {
  const id = kind.id;
  const uuid = referenceUuid(kind, entity);
  const which = uuid === undefined ? '' : ` (${uuid})`;
  const missing =
    id.strategy === 'natural'
      ? `"${id.attribute.join('.')}", its legacy ID, as a text or number`
      : `its UUID ("${kind.uuidAttribute.join('.')}" or "@id")`;
  return new UpstreamError(
    'bad_response',
    `the successor sent a ${kind.label}${which} without ${missing}, so it cannot be answered; check the successor's answers against the mapping profile's ID table`,
  );
}

/**
 * One legacy field's value: `ref` is a reference field's legacy value, worked out by the caller;
 * for a `contains` field, the legacy IDs of the items that are references rather than embedded.
 */
function readField(
  field: CompiledField,
  entity: Entity,
  ref: unknown,
  unusable: UnusableValue | undefined,
  strict: boolean,
): unknown {
  let value: unknown;
  // A list field's value, read once (a reference field's items are in `ref` already).
  const list = field.many || field.contains ? listAt(entity, field.attribute) : undefined;
  // A list sent as something else (a text, a number) is not an empty list: rendered as one, an
  // admin would read as `admin: false` without groups, and an integration that syncs could take
  // rights away. A read fails; a write's answer (the write is done) renders it as none, and the
  // operator is told, as of a value a format cannot render. Null (or no value) is no item.
  if (list !== null && list !== undefined && !Array.isArray(list)) {
    if (strict) throw notAList(field, list);
    unusable?.(field, list);
  }
  if (field.ref) {
    value = ref;
  } else if (field.contains) {
    const { key, value: wanted } = field.contains;
    const embedded = Array.isArray(list) && list.some((item) => String(getPath(item, key) ?? '') === wanted);
    if (!embedded && !Array.isArray(ref) && containsReferences(field, list).length > 0) {
      // Never a silent "no": a reference could be the one asked for.
      throw new UpstreamError(
        'bad_response',
        `the successor sent ${field.attribute.join('.')} as references instead of objects with "${key.join('.')}", so "${field.name}" cannot be read; the mapping profile needs a reference field on that attribute whose kind's natural ID is "${key.join('.')}"`,
      );
    }
    value = embedded || (Array.isArray(ref) && ref.includes(wanted));
  } else {
    value = readValue(field, getPath(entity, field.attribute), unusable);
  }
  if ((value === undefined || value === null) && field.default !== undefined)
    return structuredClone(field.default);
  return value ?? null;
}

/**
 * Translates a legacy request body into the successor's body through the field table: only
 * writable fields, value tables and formats applied, references resolved (all IDs of a kind in
 * one call) to IRIs. Every problem is reported at once (`invalid_input`, `unknown_ids`); nothing is sent before.
 */
export async function translateWrite(
  resource: CompiledResource,
  body: unknown,
  ids: IdResolver,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  if (body === undefined || body === null) return out;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new TranslationError('invalid_input', 'The request body must be a JSON object', {
      problems: [{ path: 'body', message: 'expected an object' }],
    });
  }
  const errors: InputProblem[] = [];
  const refs: { field: CompiledField; ids: string[]; at: string }[] = [];
  for (const [name, value] of Object.entries(body)) {
    const at = `body.${name}`;
    const field = resource.fields.get(name);
    if (!field?.writable) {
      errors.push({ path: at, message: `${name} cannot be written` });
      continue;
    }
    if (field.ref) {
      const list = field.many ? value : value === null ? [] : [value];
      if (!Array.isArray(list) || list.some((id) => typeof id !== 'string')) {
        errors.push({ path: at, message: field.many ? 'must be a list of IDs' : 'must be an ID' });
        continue;
      }
      refs.push({ field, ids: list as string[], at });
      if (!field.many && value === null) setPath(out, field.attribute, null);
      continue;
    }
    try {
      setPath(out, field.attribute, writeValue(field, value));
    } catch (error) {
      if (!(error instanceof WriteValueError)) throw error;
      errors.push({ path: at, message: error.message });
    }
  }
  if (errors.length > 0)
    throw new TranslationError('invalid_input', 'Invalid request body', { problems: errors });
  await Promise.all(
    refs.map(async ({ field, ids: legacyIds, at }) => {
      const kind = field.ref as CompiledKind;
      const { found, missing } = await ids.resolveMany(kind, [...new Set(legacyIds)]);
      const unknown = new Set(missing);
      legacyIds.forEach((id, index) => {
        if (unknown.has(id))
          errors.push({
            path: field.many ? `${at}.${index}` : at,
            message: `no ${kind.label} with ID ${quoteInput(id)}`,
          });
      });
      const iris = legacyIds.flatMap((id) => {
        const uuid = found.get(id);
        return uuid === undefined ? [] : [ids.iri(kind, uuid)];
      });
      if (field.many) setPath(out, field.attribute, iris);
      else if (iris[0] !== undefined) setPath(out, field.attribute, iris[0]);
    }),
  );
  if (errors.length > 0)
    throw new TranslationError('unknown_ids', 'Unknown IDs in the request body; nothing was changed', {
      problems: errors,
    });
  return out;
}

/**
 * The successor's violations of a refused write with legacy paths: a violation of a writable
 * field's attribute (also with an index, `[2]`) becomes `body.<legacy field>` (with the index for a
 * list field); one of an attribute that a step's body fills from a single legacy body field
 * (`"<attribute>": "{body.<field>}"`, or `"<attribute>": "X_{fields.<other>|upper}"` where
 * `<other>` is a writable field's attribute) becomes that field's path, its message saying it
 * was said of the value derived from the field when filters or text came around it; anything else
 * becomes `body`, so the successor's attribute names never reach the legacy caller. Undefined when
 * the failure carries no violations.
 */
export function legacyViolations(
  op: Pick<CompiledOperation, 'resource' | 'steps'> | undefined,
  error: UpstreamError,
): InputProblem[] | undefined {
  const violations = error.details.violations;
  if (violations === undefined || violations.length === 0) return undefined;
  const byAttribute = new Map<string, [name: string, field: CompiledField]>();
  for (const [name, field] of op?.resource?.fields ?? [])
    if (field.writable) byAttribute.set(field.attribute.join('.'), [name, field]);
  const filledFrom = stepBodySources(op?.steps ?? [], byAttribute);
  return violations.map(({ path, message }) => {
    const segments = path
      .replace(/\[(\d+)\]/g, '.$1')
      .split('.')
      .filter((segment) => segment !== '');
    const index = segments.find((segment) => /^\d+$/.test(segment));
    const attribute = segments.filter((segment) => !/^\d+$/.test(segment)).join('.');
    const found = byAttribute.get(attribute);
    if (!found) {
      const source = filledFrom.get(attribute);
      if (!source) return { path: 'body', message };
      // The successor's words are about what the proxy made of the field (a key derived from a
      // name: ROLE_ + its letters), not about the field as the caller sent it.
      return {
        path: source.path,
        message: source.derived
          ? `${message} (said of the value derived from ${source.path.slice(5)})`
          : message,
      };
    }
    const [name, field] = found;
    return { path: field.many && index !== undefined ? `body.${name}.${index}` : `body.${name}`, message };
  });
}

/**
 * The legacy path (`body.<field>`) each top-level attribute of the steps' bodies is filled from,
 * where that is exactly one legacy body field: `{body.<field>}` directly, or `{fields.<attribute>}`
 * of a writable field, with or without literal text and filters around it (`derived`).
 */
function stepBodySources(
  steps: readonly CompiledStep[],
  byAttribute: ReadonlyMap<string, readonly [name: string, field: CompiledField]>,
): Map<string, { path: string; derived: boolean }> {
  const sources = new Map<string, { path: string; derived: boolean }>();
  for (const step of steps) {
    if (step.body?.type !== 'object') continue;
    for (const [attribute, value] of step.body.entries) {
      if (value.type !== 'template') continue;
      const from = new Set<string>();
      for (const part of value.template.parts) {
        if (typeof part === 'string') continue;
        const [root, ...rest] = part.path;
        if (root === 'body' && rest.length === 1) from.add(`body.${rest[0]}`);
        else if (root === 'fields' && rest.length > 0) {
          const field = byAttribute.get(rest.join('.'));
          from.add(field ? `body.${field[0]}` : 'body');
        } else from.add('body');
      }
      const [only] = from;
      // Derived: literal text or filters around the field's value (`ROLE_{fields.name|upper}`).
      const whole = value.template.whole;
      const derived = whole === undefined || whole.filters.length > 0;
      if (from.size === 1 && only !== undefined && only !== 'body')
        sources.set(attribute, { path: only, derived });
    }
  }
  return sources;
}
