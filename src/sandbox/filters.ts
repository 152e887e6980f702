import { normalizeUuid } from '../lib/uuid.js';
import type { EntityRecord, ResourceKind, SandboxData } from './data.js';
import { type AnyResource, parseReference, RESOURCES } from './resources.js';

/** One query parameter a collection understands, for matching and for the OpenAPI document. */
export interface FilterParam {
  name: string;
  description: string;
  /** Whether `name[]=a&name[]=b` (many values, any matches) is accepted. */
  array: boolean;
  type: 'string' | 'boolean';
}

const ID_FIELDS = new Set(['uuid', 'hexUuid']);

/**
 * The filters of a resource, derived from its fields: `uuid`/`hexUuid` lists (comma separated,
 * dashed or base58), exact match on strings and booleans, `[icontains]` on strings, `deleted=
 * true|false`, and references by IRI or UUID (`owner=`, `groups=` …).
 */
export function filterParams(kind: ResourceKind): FilterParam[] {
  const out: FilterParam[] = [];
  for (const [name, field] of Object.entries(RESOURCES[kind].fields)) {
    if (ID_FIELDS.has(name)) {
      out.push({
        name,
        description: 'UUIDs (dashed or base58), comma separated',
        array: true,
        type: 'string',
      });
    } else if (field.kind === 'scalar') {
      if (field.filter === 'exists') {
        out.push({
          name,
          description: `true: only entities with ${name} set; false: only without`,
          array: false,
          type: 'boolean',
        });
      } else if (field.filter === 'none') {
      } else if (field.type === 'boolean') {
        out.push({ name, description: `Exact ${name} (true/false)`, array: false, type: 'boolean' });
      } else {
        out.push({ name, description: `Exact ${name}`, array: true, type: 'string' });
        out.push({
          name: `${name}[icontains]`,
          description: `${name} contains (case-insensitive)`,
          array: false,
          type: 'string',
        });
      }
    } else {
      out.push({
        name,
        description: `Linked to this ${field.target} (IRI or UUID)`,
        array: true,
        type: 'string',
      });
    }
  }
  return out;
}

/**
 * Values of an exact filter. `name[]=a&name[]=b` gives many; a repeated `name=` keeps only the
 * last one, as PHP's query parsing does on the real server.
 */
function values(query: URLSearchParams, name: string): string[] | undefined {
  const many = query.getAll(`${name}[]`);
  if (many.length > 0) return many;
  const single = query.getAll(name);
  const last = single[single.length - 1];
  return last === undefined ? undefined : [last];
}

function parseBoolean(value: string): boolean | undefined {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return undefined;
}

/** Applies every filter the query names; unknown parameters are ignored, as API Platform does. */
export function applyFilters<R extends EntityRecord>(
  kind: ResourceKind,
  records: R[],
  query: URLSearchParams,
  data: SandboxData,
): R[] {
  const resource: AnyResource = RESOURCES[kind];
  let out = records;
  for (const [name, field] of Object.entries(resource.fields)) {
    if (ID_FIELDS.has(name)) {
      const wanted = values(query, name);
      if (!wanted) continue;
      const set = new Set(wanted.flatMap((v) => v.split(',')).flatMap((v) => normalizeUuid(v.trim()) ?? []));
      out = out.filter((r) => set.has(r.id));
      continue;
    }
    if (field.kind === 'scalar') {
      if (field.filter === 'none') continue;
      if (field.filter === 'exists' || field.type === 'boolean') {
        const raw = values(query, name)?.[0];
        const wanted = raw === undefined ? undefined : parseBoolean(raw);
        // An unparsable boolean is ignored, like API Platform's BooleanFilter does.
        if (wanted === undefined) continue;
        out = out.filter((r) => {
          const value = field.get(r);
          return field.filter === 'exists' ? (value !== null) === wanted : value === wanted;
        });
        continue;
      }
      const exact = values(query, name);
      if (exact) {
        const set = new Set(exact);
        out = out.filter((r) => {
          const value = field.get(r);
          return typeof value === 'string' && set.has(value);
        });
      }
      const contains = query.getAll(`${name}[icontains]`).at(-1);
      if (contains !== undefined) {
        const needle = contains.toLowerCase();
        out = out.filter((r) => {
          const value = field.get(r);
          return typeof value === 'string' && value.toLowerCase().includes(needle);
        });
      }
      continue;
    }
    const wanted = values(query, name);
    if (!wanted) continue;
    const set = new Set(wanted.flatMap((v) => parseReference(v, field.target) ?? []));
    out = out.filter((r) => {
      if (field.kind === 'ref') {
        const id = field.get(r, data);
        return id !== null && set.has(id);
      }
      return field.get(r, data).some((id) => set.has(id));
    });
  }
  return out;
}
