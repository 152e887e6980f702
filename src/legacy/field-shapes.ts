import { z } from 'zod';
import type { LegacyFieldShape } from '../mapping/served-check.js';

/**
 * A legacy date (`YYYY-MM-DD`) and date-time (ISO 8601 with a numeric offset), as the seed types
 * them: strings whose `format` the OpenAPI document says, and the profile check reads (a profile
 * field's `format: "date"` belongs on a legacy date, not on `username`).
 */
export const legacyDate = z.string().meta({ format: 'date', description: 'Date, YYYY-MM-DD' });
export const legacyDateTime = z
  .string()
  .meta({ format: 'date-time', description: 'Date-time, ISO 8601 with offset' });

/** The wrappers that leave a field's own type as it is: null or absent allowed, a default. */
const WRAPPERS = new Set(['nullable', 'optional', 'default', 'readonly']);

/** The schema inside nullable, optional and default wrappers. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (WRAPPERS.has(inner.def.type)) inner = (inner.def as unknown as { innerType: z.ZodType }).innerType;
  return inner;
}

/** Whether a nullable wrapper is among those around the schema: the field may be null. */
function isNullable(schema: z.ZodType): boolean {
  let inner = schema;
  while (WRAPPERS.has(inner.def.type)) {
    if (inner.def.type === 'nullable') return true;
    inner = (inner.def as unknown as { innerType: z.ZodType }).innerType;
  }
  return false;
}

/** The date kind of a legacy string field (`legacyDate`, `legacyDateTime`), if it is one. */
function dateFormatOf(schema: z.ZodType): 'date' | 'date-time' | undefined {
  const format = schema.meta()?.format;
  return format === 'date' || format === 'date-time' ? format : undefined;
}

/**
 * What a profile's field must give for one legacy field: its JSON type, an enumeration's values,
 * whether it may be null, and which strings are dates.
 */
function shapeOf(schema: z.ZodType): LegacyFieldShape | undefined {
  const inner = unwrapped(schema);
  const nullable = isNullable(schema);
  switch (inner.def.type) {
    case 'enum':
      return {
        type: 'string',
        values: Object.values((inner.def as unknown as { entries: Record<string, string> }).entries).map(
          String,
        ),
        nullable,
      };
    case 'string': {
      const format = dateFormatOf(inner);
      return format === undefined ? { type: 'string', nullable } : { type: 'string', format, nullable };
    }
    case 'boolean':
      return { type: 'boolean', nullable };
    case 'array': {
      // Every legacy list is one of IDs, strings: said, so that a default's elements are checked.
      const element = unwrapped((inner.def as unknown as { element: z.ZodType }).element);
      return element.def.type === 'string'
        ? { type: 'array', items: 'string', nullable }
        : { type: 'array', nullable };
    }
    default:
      return undefined;
  }
}

/**
 * The legacy shape of each field of an object schema (an answer's entity, a list's item, a body),
 * by name; fields of a type the check does not know are left out.
 */
export function fieldShapes(schema: z.ZodType | undefined): Record<string, LegacyFieldShape> {
  if (schema === undefined) return {};
  let object = unwrapped(schema);
  if (object.def.type === 'array')
    object = unwrapped((object.def as unknown as { element: z.ZodType }).element);
  if (object.def.type !== 'object') return {};
  const shapes: Record<string, LegacyFieldShape> = {};
  for (const [name, field] of Object.entries((object as z.ZodObject).shape)) {
    const shape = shapeOf(field as z.ZodType);
    if (shape) shapes[name] = shape;
  }
  return shapes;
}

/**
 * The fields of an object body schema that a body cannot do without: those the schema refuses
 * when missing (not optional, no default). None for a schema that is no object.
 */
export function requiredFields(schema: z.ZodType | undefined): string[] {
  if (schema === undefined) return [];
  const object = unwrapped(schema);
  if (object.def.type !== 'object') return [];
  return Object.entries((object as z.ZodObject).shape)
    .filter(([, field]) => !(field as z.ZodType).safeParse(undefined).success)
    .map(([name]) => name);
}
