import type { CompiledKind, CompiledProfile, CompiledResource } from './compile.js';

/** Reads a dot path (as segments) from a JSON value; undefined when any step is missing. */
export function getPath(value: unknown, path: readonly string[]): unknown {
  let current = value;
  for (const segment of path) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/** Writes a value at a dot path, creating the objects on the way. */
export function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let current = target;
  path.forEach((segment, index) => {
    if (index === path.length - 1) {
      current[segment] = value;
      return;
    }
    const next = current[segment];
    if (next !== null && typeof next === 'object' && !Array.isArray(next)) {
      current = next as Record<string, unknown>;
    } else {
      const created: Record<string, unknown> = {};
      current[segment] = created;
      current = created;
    }
  });
}

/** The pseudo-field every legacy entity carries: its legacy ID, by the kind's ID strategy. */
export const LEGACY_ID_FIELD = '_id';

/** Attributes every read of an entity of `kind` asks for: its UUID and what its legacy ID is made of. */
export function identityAttributes(kind: CompiledKind): string[] {
  return unique([kind.uuidAttribute.join('.'), ...kind.idAttributes]);
}

/**
 * The successor attributes needed to render `fields` (legacy names, `_id` included) of a
 * resource: plain attributes as they are, references as `attribute.<what the target kind's ID
 * strategy needs>`, derived `contains` fields as `attribute.key`, plus the entity's identity.
 */
export function attributesFor(resource: CompiledResource, fields: readonly string[]): string[] {
  const out = identityAttributes(resource.kind);
  for (const name of fields) {
    if (name === LEGACY_ID_FIELD) continue;
    const field = resource.fields.get(name);
    if (!field?.readable) continue;
    const attribute = field.attribute.join('.');
    if (field.ref) for (const sub of field.ref.idAttributes) out.push(`${attribute}.${sub}`);
    else if (field.contains) out.push(`${attribute}.${field.contains.key.join('.')}`);
    else out.push(attribute);
  }
  return unique(out);
}

/** The value of the attribute-selection query parameter. */
export function attributesValue(profile: CompiledProfile, attributes: readonly string[]): string {
  return attributes.join(profile.attributesSeparator);
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
