// What a profile must offer the legacy operations the proxy serves, checked when it loads: the
// operations' own description (path parameters, body fields, what each handler takes from its
// table) and the problems of a profile that does not fit it.
import { LEGACY_ID_FIELD } from './attributes.js';
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
   * What the legacy handler takes from the operation: the result type its table must answer, and
   * for an entity or collection every legacy field it may render (all variants, `?extended` too),
   * each of which must be a readable field of the kind's field table. Checked when the profile
   * loads, so that such a profile is refused instead of answering 500 on every call — for a
   * write, after the write went through.
   */
  answer?: ServedAnswer;
}

/** The parts of a compiled field table the field check reads. */
interface AnsweringResource {
  fields: ReadonlyMap<string, { readable: boolean }>;
}

/** The parts of a compiled operation the field check reads. */
interface AnsweringOperation<R extends AnsweringResource> {
  file: string;
  kind: { name: string };
  resource: R | undefined;
  result: { type: string };
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
  const found = new Map<R, Map<string, FieldNeed>>();
  for (const [id, op] of operations) {
    const answer = shapes.get(id)?.answer;
    if (!op.resource || !answer || op.result.type !== answer.result) continue;
    for (const name of 'fields' in answer ? answer.fields : []) {
      if (name === LEGACY_ID_FIELD || op.resource.fields.get(name)?.readable === true) continue;
      if (brokenFields.get(op.kind.name)?.has(name)) continue;
      const byField = found.get(op.resource) ?? new Map<string, FieldNeed>();
      found.set(op.resource, byField);
      const need = byField.get(name) ?? { labels: [], mappedAs: new Set<string>() };
      byField.set(name, need);
      need.labels.push(shapes.get(id)?.label ?? id);
      need.mappedAs.add(`kind ${op.kind.name} in ${op.file}`);
    }
  }
  return found;
}
