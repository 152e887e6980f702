// What a profile must offer the legacy operations the proxy serves, checked when it loads: the
// operations' own description (path parameters, body fields, what each handler takes from its
// table) and the problems of a profile that does not fit it.
import { QUOTE_MAX_CHARS, shorten } from '../lib/quote.js';
import { LEGACY_ID_FIELD } from './attributes.js';
import { toLegacyDate, toLegacyDateTime } from './formats.js';
import type { OperationTable } from './schema.js';

/**
 * What a served operation's handler takes from its table: the result type, and for an entity or
 * a list every legacy field it may render (all its variants, `?extended` too).
 */
export type ServedAnswer =
  | { result: 'entity' | 'collection'; fields: readonly string[] }
  | { result: 'object' | 'none' };

/**
 * An operation the proxy serves, which every profile must map: its id, how problems name it, and
 * what its templates may read of the legacy request. The legacy routes describe themselves this
 * way (src/legacy/operations.ts), so the mapping code never imports them.
 */
export interface RequiredOperation {
  id: string;
  /** E.g. `GET /Core/Entity/User`. */
  label: string;
  /** Its path parameters, the names `{params.<name>}` may use (e.g. `id`). */
  params: readonly string[];
  /** The fields of its legacy JSON or form body, the names `{body.<name>}` may use; none when the body is no object. */
  bodyFields: readonly string[];
  /**
   * Those of `bodyFields` its legacy body cannot do without (a create's names): each must be
   * writable in the kind's field table when the operation writes its body through it (`{fields}`).
   */
  requiredBodyFields?: readonly string[];
  /**
   * What the legacy handler takes from the operation: the result type its table must answer, and
   * for an entity or collection every legacy field it may render (all variants, `?extended` too),
   * each of which must be a readable field of the kind's field table. Checked when the profile
   * loads, so that such a profile is refused instead of answering 500 on every call — for a
   * write, after the write went through.
   */
  answer?: ServedAnswer;
  /** The legacy type of each field its answer holds (for an entity or a list: the entity's). */
  answerShapes?: Readonly<Record<string, LegacyFieldShape>>;
  /** The legacy type of each field of its body. */
  bodyShapes?: Readonly<Record<string, LegacyFieldShape>>;
}

/**
 * A legacy field's JSON type (a date is a string), the values of an enumerated one (user status:
 * a, r, i), whether it may be null (what the legacy API answers for a value it lacks), and whether
 * a string is a date.
 */
export interface LegacyFieldShape {
  type: 'string' | 'boolean' | 'array';
  values?: readonly string[];
  nullable?: boolean;
  /** A string that holds a date (`YYYY-MM-DD`) or a date-time (ISO 8601 with a numeric offset). */
  format?: 'date' | 'date-time';
  /** A list's element type, when it is known (the legacy lists hold IDs: strings). */
  items?: 'string';
}

/** The parts of a compiled field table the field check reads. */
interface AnsweringResource {
  fields: ReadonlyMap<string, { readable: boolean; writable: boolean }>;
}

/** The parts of a compiled operation the field check reads. */
interface AnsweringOperation<R extends AnsweringResource> {
  file: string;
  kind: { name: string };
  resource: R | undefined;
  result: { type: string };
  /** Whether it writes its legacy body through the field table (`{fields}`). */
  usesFields: boolean;
}

/**
 * What the legacy operation the table maps cannot work with, as [path below the operation, message]:
 * a subject parameter its route lacks, and another result type than its handler takes.
 */
export function servedProblems(
  table: OperationTable,
  shape: RequiredOperation | undefined,
): [path: string, message: string][] {
  if (!shape) return [];
  const problems: [string, string][] = [];
  if (table.subject && !shape.params.includes(table.subject.param)) {
    problems.push([
      '.subject.param',
      `${shape.label} has no path parameter ${table.subject.param} (${shape.params.length > 0 ? `known: ${shape.params.join(', ')}` : 'it has none'})`,
    ]);
  }
  const answer = shape.answer;
  if (!answer) return problems;
  if (table.result.type !== answer.result) {
    problems.push([
      '.result.type',
      `${shape.label} needs a result of type "${answer.result}", not "${table.result.type}"`,
    ]);
  }
  return problems;
}

/** The operations that need a field their kind's table does not read: how problems name them, and where they are mapped. */
export interface FieldNeed {
  labels: string[];
  /** `kind user in operations/user.json`: a wrong kind on an operation shows here. */
  mappedAs: Set<string>;
}

/**
 * The legacy fields served operations answer with (or read, as SSO does) that their kind's field
 * table does not read: per field table, each such field with the operations that need it (one
 * problem per field, not one per operation: a field dropped from the user table concerns a dozen
 * operations), and the kind and file they are mapped with, so that an operation mapped to the
 * wrong kind is named too. A field with a problem of its own (an unknown value table, say) is not
 * named again.
 */
export function unreadableFields<R extends AnsweringResource>(
  operations: ReadonlyMap<string, AnsweringOperation<R>>,
  shapes: ReadonlyMap<string, RequiredOperation>,
  brokenFields: ReadonlyMap<string, ReadonlySet<string>>,
): Map<R, Map<string, FieldNeed>> {
  return fieldsNeeded(operations, shapes, brokenFields, (op, shape) => {
    const answer = shape.answer;
    if (!answer || op.result.type !== answer.result || !('fields' in answer)) return undefined;
    return {
      names: answer.fields.filter((name) => name !== LEGACY_ID_FIELD),
      met: (field) => field.readable,
    };
  });
}

/**
 * Per field table, the fields `need` names for each operation (and what the field must be, `met`)
 * that the table has not so, with the operations that need each; a field with a problem of its own
 * (`brokenFields`) is left out.
 */
function fieldsNeeded<R extends AnsweringResource>(
  operations: ReadonlyMap<string, AnsweringOperation<R>>,
  shapes: ReadonlyMap<string, RequiredOperation>,
  brokenFields: ReadonlyMap<string, ReadonlySet<string>>,
  need: (
    op: AnsweringOperation<R>,
    shape: RequiredOperation,
  ) =>
    | { names: readonly string[]; met: (field: { readable: boolean; writable: boolean }) => boolean }
    | undefined,
): Map<R, Map<string, FieldNeed>> {
  const found = new Map<R, Map<string, FieldNeed>>();
  for (const [id, op] of operations) {
    const shape = shapes.get(id);
    const resource = op.resource;
    const wanted = resource && shape ? need(op, shape) : undefined;
    if (!resource || !shape || !wanted) continue;
    for (const name of wanted.names) {
      const field = resource.fields.get(name);
      if ((field && wanted.met(field)) || brokenFields.get(op.kind.name)?.has(name)) continue;
      const byField = found.get(resource) ?? new Map<string, FieldNeed>();
      found.set(resource, byField);
      const needed = byField.get(name) ?? { labels: [], mappedAs: new Set<string>() };
      byField.set(name, needed);
      needed.labels.push(shape.label);
      needed.mappedAs.add(`kind ${op.kind.name} in ${op.file}`);
    }
  }
  return found;
}

/**
 * The legacy body fields served operations require that their kind's field table does not write,
 * where the operation writes its body through the table (`{fields}`): per field table, each such
 * field with the operations that need it, as `unreadableFields` has them. Every call of such an
 * operation carries the field, and the table refuses it ("cannot be written"): a 400 that blames
 * the legacy client for the profile. Optional body fields (all of an update's) may be read-only:
 * a profile may keep a field from being written, and a body that carries it is refused. Operations
 * that name body fields one by one (`{body.<name>}`) do not go through the table and are left alone.
 */
export function unwritableBodyFields<R extends AnsweringResource>(
  operations: ReadonlyMap<string, AnsweringOperation<R>>,
  shapes: ReadonlyMap<string, RequiredOperation>,
  brokenFields: ReadonlyMap<string, ReadonlySet<string>>,
): Map<R, Map<string, FieldNeed>> {
  return fieldsNeeded(operations, shapes, brokenFields, (op, shape) =>
    op.usesFields ? { names: shape.requiredBodyFields ?? [], met: (field) => field.writable } : undefined,
  );
}

/**
 * The fields of a kind's table that no served operation of that kind answers with or takes in
 * its body, with the fields they do: a field named otherwise than the legacy API names it
 * (`email`, `firstName`) is never read or written, and its mapping silently does nothing. Kinds
 * no served operation is mapped to are left alone.
 */
export function unusedFields<R extends AnsweringResource>(
  operations: ReadonlyMap<string, AnsweringOperation<R>>,
  shapes: ReadonlyMap<string, RequiredOperation>,
): Map<R, { unused: string[]; used: string[] }> {
  const used = new Map<R, Set<string>>();
  for (const [id, op] of operations) {
    const shape = shapes.get(id);
    if (!op.resource || !shape) continue;
    const names = used.get(op.resource) ?? new Set<string>();
    used.set(op.resource, names);
    for (const name of shape.answer && 'fields' in shape.answer ? shape.answer.fields : []) names.add(name);
    for (const name of shape.bodyFields) names.add(name);
  }
  const found = new Map<R, { unused: string[]; used: string[] }>();
  for (const [resource, names] of used) {
    const unused = [...resource.fields.keys()].filter((name) => !names.has(name));
    if (unused.length > 0)
      found.set(resource, { unused, used: [...names].filter((name) => name !== LEGACY_ID_FIELD) });
  }
  return found;
}

/** The parts of a compiled field the contract check reads. */
interface ContractField {
  readable: boolean;
  writable: boolean;
  format: 'string' | 'date' | 'date-time' | 'boolean' | undefined;
  default: unknown;
  values: { name: string; legacyValues: readonly string[]; fallback: string | null } | undefined;
  ref: unknown;
  many: boolean;
  contains: unknown;
}

/**
 * The JSON type a field renders: a derived field a boolean, references an ID or a list of IDs,
 * a value table's values strings, a format its own type; a plain field without a format gives the
 * successor's value as it comes (undefined: not known before a call).
 */
function renderedType(field: ContractField): LegacyFieldShape['type'] | undefined {
  if (field.contains) return 'boolean';
  if (field.ref) return field.many ? 'array' : 'string';
  if (field.values) return 'string';
  if (field.format === 'boolean') return 'boolean';
  if (field.format !== undefined) return 'string';
  return undefined;
}

const quoted = (values: readonly string[]) => values.map((value) => JSON.stringify(value)).join(', ');

/** A JSON type with its article, as messages name it: `a string`, `an array`. */
const aType = (type: string) => `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;

/**
 * What is wrong with a field's `default` for the legacy field it answers, or undefined. The engine
 * answers a default as it stands in the table, in place of a missing or null successor value,
 * past the field's value table and format (src/mapping/fields.ts, `readField`): so it is checked
 * as a legacy value — of the legacy field's JSON type, one of an enumeration's values (not the
 * successor's word for it), for a `date` or `date-time` format exactly as the format answers a
 * value (`2026-01-01`, `2026-01-01T08:00:00+00:00`). `null` is what a field without a default
 * answers: allowed where the legacy field may be null, refused where it never is (a list, `admin`).
 */
function defaultProblem(
  field: ContractField,
  name: string,
  legacy: LegacyFieldShape,
  label: string,
): string | undefined {
  const value = field.default;
  if (value === undefined) return undefined;
  if (value === null)
    return legacy.nullable
      ? undefined
      : `default null, but the legacy field ${name} is never null (it is ${aType(legacy.type)}; ${label}): ${legacy.type === 'array' ? 'give [] or leave' : 'leave'} the default out (null is what a field without one answers)`;
  const text = shorten(JSON.stringify(value), QUOTE_MAX_CHARS);
  const type = Array.isArray(value) ? 'array' : typeof value;
  if (type !== legacy.type)
    return `default ${text} is ${aType(type)}, but the legacy field ${name} is ${aType(legacy.type)} (${label})`;
  if (
    legacy.items === 'string' &&
    Array.isArray(value) &&
    !value.every((element) => typeof element === 'string' && element !== '')
  )
    return `default ${text} holds other values than non-empty strings, but the legacy field ${name} lists IDs (${label})`;
  if (legacy.values && !legacy.values.includes(value as string))
    return `default ${text} is not a value of the legacy field ${name} (it has ${quoted(legacy.values)}, and a default is answered as it stands; ${label})`;
  if (field.format === 'date' && toLegacyDate(value) !== value)
    return `default ${text} is not a date as format "date" answers one, e.g. "2026-01-01" (${label})`;
  if (field.format === 'date-time' && toLegacyDateTime(value) !== value)
    return `default ${text} is not a date-time as format "date-time" answers one, with seconds and a numeric offset, e.g. "2026-01-01T08:00:00+00:00" (${label})`;
  return undefined;
}

/**
 * The problem of a `date` or `date-time` format on a legacy string field of another kind, or of a
 * legacy date answered without its format, or undefined. The format answers only dates (anything
 * else as null) and takes only dates, so on a plain string (`username`) every value that is no
 * date answers null and every write of one is refused (400), blaming the client; on a legacy date
 * of the other kind it answers `2026-01-01` where a date-time is due, or a time where a date is;
 * and without it a legacy date answers whatever the successor writes.
 */
function dateFormatProblem(
  field: ContractField,
  name: string,
  legacy: LegacyFieldShape,
  label: string,
): string | undefined {
  if (legacy.type !== 'string' || legacy.format === field.format) return undefined;
  if (field.format !== 'date' && field.format !== 'date-time') {
    // A legacy date answered as anything but its format: the successor's date-time or timestamp as
    // it comes (no format, or `string`), an ID (a reference), a value table's words. A boolean
    // (`format: "boolean"`, a derived field) is the type check's finding.
    if (legacy.format === undefined || field.format === 'boolean' || field.contains || !field.readable)
      return undefined;
    const shape = legacy.format === 'date' ? 'YYYY-MM-DD' : 'ISO 8601 with seconds and a numeric offset';
    const gives = field.ref
      ? 'a reference answers an ID'
      : field.values
        ? `value table ${field.values.name} answers its own values`
        : `${field.format === undefined ? 'no format' : `format "${field.format}"`} answers the successor's value as it comes (a date-time, a timestamp)`;
    return `the legacy field ${name} is a ${legacy.format} (${shape}), but ${gives}; name format "${legacy.format}" (${label})`;
  }
  const format = `format "${field.format}"`;
  if (legacy.format === undefined)
    return `${format} answers and takes only ${field.format === 'date' ? 'dates' : 'date-times'}, but the legacy field ${name} is a plain string: its values would be answered as null and written only as ${field.format === 'date' ? 'dates' : 'date-times'} (a 400 for anything else); leave the format out or name "string" (${label})`;
  return `${format} does not fit the legacy field ${name}, which is a ${legacy.format}: name format "${legacy.format}" (${label})`;
}

/**
 * The problem of a field without a value table that maps an enumerated legacy field: no format or
 * derivation of the engine turns the successor's values into the enumeration's, so the successor's
 * own values would be answered as they are, and a legacy value written unchanged (most often
 * refused by a successor that has words for them).
 */
function unenumerated(field: ContractField, name: string, values: readonly string[], label: string): string {
  const harm = [
    ...(field.readable ? ["the successor's values would be answered as they are"] : []),
    ...(field.writable ? ['legacy values written as they are sent'] : []),
  ].join(', and ');
  return `has no value table, but the legacy field ${name} is one of ${quoted(values)}: ${harm}; name a value table that maps them in "values" (${label})`;
}

/**
 * What a field table gives or takes that the legacy field it maps cannot be, by field table and
 * field, as [JSON path below the field, message], one per field and kind of mistake however many
 * operations meet it: a type the legacy field does not have (`format: "boolean"` on the string
 * `type`); a date format on a legacy string of another kind (see `dateFormatProblem`); a `default` the legacy field cannot be (see `defaultProblem`); no value table at all
 * on an enumerated legacy field (see `unenumerated`); a value table that gives a value outside
 * the legacy field's enumeration (user status `x`, not one of a, r, i), or, for a field written,
 * lacks one of its values (a legacy write of `i` refused by the table). The legacy routes check
 * bodies before the mapping, so such a table answered values no legacy client expects and
 * refused values every legacy client sends.
 */
export function contractProblems<F extends ContractField, R extends { fields: ReadonlyMap<string, F> }>(
  operations: ReadonlyMap<string, AnsweringOperation<R>>,
  shapes: ReadonlyMap<string, RequiredOperation>,
): Map<R, Map<string, [path: string, message: string]>> {
  const found = new Map<R, Map<string, [string, string]>>();
  const add = (resource: R, key: string, at: string, message: string) => {
    const byKey = found.get(resource) ?? new Map<string, [string, string]>();
    found.set(resource, byKey);
    if (!byKey.has(key)) byKey.set(key, [at, message]);
  };
  for (const [id, op] of operations) {
    const shape = shapes.get(id);
    if (!op.resource || !shape) continue;
    const answered = shape.answer && 'fields' in shape.answer ? shape.answer.fields : [];
    for (const name of answered) {
      const legacy = shape.answerShapes?.[name];
      const field = op.resource.fields.get(name);
      if (!legacy || !field?.readable) continue;
      const rendered = renderedType(field);
      if (rendered !== undefined && rendered !== legacy.type) {
        add(
          op.resource,
          `${name} type`,
          field.format === undefined ? `$.fields.${name}` : `$.fields.${name}.format`,
          `gives ${aType(rendered)}, but the legacy field ${name} is ${aType(legacy.type)} (${shape.label})`,
        );
      }
      const wrongDate = dateFormatProblem(field, name, legacy, shape.label);
      if (wrongDate !== undefined) add(op.resource, `${name} format`, `$.fields.${name}.format`, wrongDate);
      const wrongDefault = defaultProblem(field, name, legacy, shape.label);
      if (wrongDefault !== undefined)
        add(op.resource, `${name} default`, `$.fields.${name}.default`, wrongDefault);
      if (legacy.values && !field.values && (rendered === undefined || rendered === legacy.type))
        add(
          op.resource,
          `${name} values`,
          `$.fields.${name}`,
          unenumerated(field, name, legacy.values, shape.label),
        );
      if (legacy.values && field.values) {
        const given = [
          ...field.values.legacyValues,
          ...(field.values.fallback === null ? [] : [field.values.fallback]),
        ];
        const outside = [...new Set(given.filter((value) => !legacy.values?.includes(value)))];
        if (outside.length > 0)
          add(
            op.resource,
            `${name} read`,
            `$.fields.${name}.values`,
            `value table ${field.values.name} gives ${quoted(outside)}, which the legacy field ${name} does not have (it has ${quoted(legacy.values)}; ${shape.label})`,
          );
      }
    }
    for (const name of shape.bodyFields) {
      const legacy = shape.bodyShapes?.[name];
      const field = op.resource.fields.get(name);
      if (!legacy || !field?.writable) continue;
      if (field.format === 'boolean' && legacy.type !== 'boolean')
        add(
          op.resource,
          `${name} type`,
          `$.fields.${name}.format`,
          `takes a boolean, but the legacy field ${name} is ${aType(legacy.type)} (${shape.label})`,
        );
      const wrongDate = dateFormatProblem(field, name, legacy, shape.label);
      if (wrongDate !== undefined) add(op.resource, `${name} format`, `$.fields.${name}.format`, wrongDate);
      if (legacy.values && !field.values && field.format !== 'boolean')
        add(
          op.resource,
          `${name} values`,
          `$.fields.${name}`,
          unenumerated(field, name, legacy.values, shape.label),
        );
      if (legacy.values && field.values) {
        const missing = legacy.values.filter((value) => !field.values?.legacyValues.includes(value));
        if (missing.length > 0)
          add(
            op.resource,
            `${name} write`,
            `$.fields.${name}.values`,
            `value table ${field.values.name} has no entry for ${quoted(missing)} of the legacy field ${name}: a write of it would be refused (${shape.label})`,
          );
      }
    }
  }
  return found;
}
