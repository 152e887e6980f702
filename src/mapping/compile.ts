import { closest } from '../lib/closest.js';
import { hasDotSegment } from '../lib/dot-segments.js';
import type { MappingProblem } from './errors.js';
import type {
  AssignRule,
  EntityTable,
  FieldsFile,
  FieldTable,
  IdStrategy,
  JsonValue,
  OperationTable,
  ProfileFile,
  StepTable,
  UndoTable,
  UpstreamTolerance,
  ValuesFile,
} from './schema.js';
import {
  contractProblems,
  type FieldNeed,
  type RequiredOperation,
  servedProblems,
  unreadableFields,
  unusedFields,
  unwritableBodyFields,
} from './served-check.js';
import {
  compileJsonTemplate,
  compileTemplate,
  type JsonTemplate,
  jsonUsesVariable,
  renderText,
  type Template,
  TemplateError,
  usesVariable,
  type VariableCheck,
} from './template.js';

export type { RequiredOperation } from './served-check.js';

/** A parsed file of the profile, with the path it came from (relative to the profile folder). */
export interface SourceFile<T> {
  file: string;
  data: T;
}

/** Everything load.ts found in a profile folder, each file already schema-valid. */
export interface ProfileSources {
  profile: SourceFile<ProfileFile>;
  entities: SourceFile<{ kinds: Record<string, EntityTable> }>[];
  ids: SourceFile<{ kinds: Record<string, IdStrategy> }>[];
  values: SourceFile<ValuesFile>[];
  fields: SourceFile<FieldsFile>[];
  operations: SourceFile<{ operations: Record<string, OperationTable> }>[];
}

/** One entity kind, ready to use: where it lives, how it is addressed and its ID strategy. */
export interface CompiledKind {
  name: string;
  /** Files that define the kind (entities) and its ID strategy (ids), for messages. */
  file: string;
  idFile: string;
  label: string;
  collection: string;
  item: Template;
  iri: Template;
  uuidAttribute: readonly string[];
  uuidFilter: { param: string; separator: string };
  readQuery: readonly [string, Template][];
  id: CompiledIdStrategy;
  /** Attributes (relative to the entity) its legacy ID is computed from; references ask for them as sub-fields. */
  idAttributes: readonly string[];
}

/** An ID strategy with its attribute paths split. */
export type CompiledIdStrategy =
  | { strategy: 'natural'; attribute: readonly string[]; filter: string; filterMany: string }
  | { strategy: 'uuid' }
  | { strategy: 'table'; assign: AssignRule & { path?: readonly string[] } };

type Scalar = string | number | boolean;

/** A value table both ways. */
export interface CompiledValues {
  name: string;
  toSuccessor: ReadonlyMap<string, Scalar>;
  toLegacy: ReadonlyMap<Scalar, string>;
  fallback: string | null;
  legacyValues: readonly string[];
}

/** One legacy field of a resource. */
export interface CompiledField {
  name: string;
  attribute: readonly string[];
  readable: boolean;
  writable: boolean;
  format: FieldTable['format'];
  values: CompiledValues | undefined;
  ref: CompiledKind | undefined;
  many: boolean;
  contains: { key: readonly string[]; value: string } | undefined;
  default: JsonValue | undefined;
}

/** The field table of one kind. */
export interface CompiledResource {
  resource: string;
  kind: CompiledKind;
  file: string;
  fields: ReadonlyMap<string, CompiledField>;
}

/** One successor request: a step, or the undo of a step. */
export interface CompiledRequest {
  method: StepTable['method'];
  path: Template;
  query: readonly [string, Template][];
  body: JsonTemplate | undefined;
  contentType: NonNullable<StepTable['contentType']>;
  /** A step: once per item of the body; an undo: once per item its step changed. */
  forEach: boolean;
  tolerate: ReadonlySet<UpstreamTolerance>;
  write: boolean;
  /** How error messages name the write (`describe` in the table); undefined: method, kind and legacy ID. */
  describe: Template | undefined;
}

/** One successor request of an operation. */
export interface CompiledStep extends CompiledRequest {
  collection: boolean;
  returnsEntity: boolean;
  /** The step runs only when this yields a value that is not missing, null, "" or []. */
  when: Template | undefined;
  /** How to reverse the step when a later write of the same call fails. */
  undo: CompiledRequest | undefined;
}

/** A legacy operation's translation. */
export interface CompiledOperation {
  id: string;
  file: string;
  kind: CompiledKind;
  resource: CompiledResource | undefined;
  subject:
    | {
        param: string;
        /** Refuse the operation (403) when this attribute of the path entity is set. */
        refuseWhen: { attribute: readonly string[]; message: string } | undefined;
      }
    | undefined;
  items: CompiledKind | undefined;
  steps: readonly CompiledStep[];
  result: OperationTable['result'];
  /** Whether a step body uses `{fields}`: the legacy body is translated through the field table. */
  usesFields: boolean;
  /** The subject's attribute listing the linked items, read before writing when a rollback may need it. */
  relation: { attribute: readonly string[]; change: 'add' | 'remove' } | undefined;
}

/** A whole profile, validated and precompiled: no request parses a table. */
export interface CompiledProfile {
  name: string;
  dir: string;
  settings: Readonly<Record<string, string>>;
  attributesParam: string;
  attributesSeparator: string;
  maxIdsPerQuery: number;
  maxIdBytesPerQuery: number;
  /** Query parameters of collection paging. */
  paging: { page: string; itemsPerPage: string };
  /** Where the successor's OpenAPI document is, tried in order. */
  openApi: readonly string[];
  /** The collection the readiness check reads. */
  readinessPath: string;
  cache: { ttlSeconds: number; max: number };
  kinds: ReadonlyMap<string, CompiledKind>;
  /** Field tables by kind. */
  resources: ReadonlyMap<string, CompiledResource>;
  operations: ReadonlyMap<string, CompiledOperation>;
  files: readonly string[];
}

/** Splits `a.b.c` into its segments. */
export function splitPath(path: string): string[] {
  return path.split('.');
}

const ENTITY_VARS = new Set(['uuid', 'uuid58', 'apiBase']);
const REF_VARS = new Set(['uuid', 'uuid58', 'iri', 'id']);

/**
 * Cross-checks the files of a profile (kinds, value tables, template variables, field tables of
 * operations) and precompiles them. Returns the profile, or every problem found.
 */
export function compileProfile(
  dir: string,
  sources: ProfileSources,
  /** The operations the proxy serves: `{params.…}` and `{body.…}` of their steps are checked against them. */
  served: readonly RequiredOperation[] = [],
): { profile: CompiledProfile } | { problems: MappingProblem[] } {
  const shapes = new Map(served.map((operation) => [operation.id, operation]));
  const problems: MappingProblem[] = [];
  const problem = (file: string, path: string, message: string) => problems.push({ file, path, message });
  const settings = sources.profile.data.settings;
  const settingsCheck = (path: readonly string[]): string | undefined => {
    if (path[0] !== 'settings') return undefined;
    if (path.length !== 2) return 'use {settings.<name>}';
    return Object.hasOwn(settings, path[1] ?? '')
      ? undefined
      : `no setting "${path[1]}" in profile.json (known: ${Object.keys(settings).join(', ') || 'none'})`;
  };
  const compile = (file: string, at: string, source: string, check: VariableCheck): Template | undefined => {
    try {
      return compileTemplate(source, check);
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      problem(file, at, error.message);
      return undefined;
    }
  };
  const commonCheck =
    (allowed: (path: readonly string[]) => string | undefined): VariableCheck =>
    (path) => {
      if (path[0] === 'settings') return settingsCheck(path);
      if (path[0] === 'apiBase' && path.length === 1) return undefined;
      return allowed(path);
    };

  // ID strategies first: entities need them.
  const idByKind = new Map<string, { file: string; strategy: IdStrategy }>();
  for (const source of sources.ids) {
    for (const [kind, strategy] of Object.entries(source.data.kinds)) {
      const seen = idByKind.get(kind);
      if (seen)
        problem(source.file, `$.kinds.${kind}`, `kind ${kind} already has an ID strategy in ${seen.file}`);
      else idByKind.set(kind, { file: source.file, strategy });
    }
  }

  const kinds = new Map<string, CompiledKind>();
  const kindFiles = new Map<string, string>();
  for (const source of sources.entities) {
    for (const [name, table] of Object.entries(source.data.kinds)) {
      const at = `$.kinds.${name}`;
      if (kindFiles.has(name)) {
        problem(source.file, at, `kind ${name} is already defined in ${kindFiles.get(name)}`);
        continue;
      }
      kindFiles.set(name, source.file);
      const entityCheck = commonCheck((path) =>
        path.length === 1 && ENTITY_VARS.has(path[0] ?? '') ? undefined : 'use {uuid}, {uuid58} or {apiBase}',
      );
      const item = compile(source.file, `${at}.item`, table.item, entityCheck);
      const iri = compile(source.file, `${at}.iri`, table.iri, entityCheck);
      const readQuery: [string, Template][] = [];
      for (const [param, value] of Object.entries(table.readQuery ?? {})) {
        const compiled = compile(
          source.file,
          `${at}.readQuery.${param}`,
          value,
          commonCheck(() => 'only {settings.…} and {apiBase} are available here'),
        );
        if (compiled) readQuery.push([param, compiled]);
      }
      const idSource = idByKind.get(name);
      if (!idSource) {
        problem(source.file, at, `kind ${name} has no ID strategy: add it to ids.json`);
        continue;
      }
      if (!item || !iri) continue;
      const id = compileIdStrategy(idSource.strategy);
      const uuidAttribute = splitPath(table.uuidAttribute);
      kinds.set(name, {
        name,
        file: source.file,
        idFile: idSource.file,
        label: table.label,
        collection: table.collection,
        item,
        iri,
        uuidAttribute,
        uuidFilter: table.uuidFilter,
        readQuery,
        id,
        idAttributes: idAttributesOf(id, table.uuidAttribute),
      });
    }
  }
  for (const [kind, { file }] of idByKind) {
    if (!kindFiles.has(kind)) problem(file, `$.kinds.${kind}`, `no entity kind ${kind} in entities.json`);
  }

  const values = new Map<string, CompiledValues>();
  for (const source of sources.values) {
    const table = source.data;
    if (values.has(table.name)) {
      problem(source.file, '$.name', `value table ${table.name} is defined twice`);
      continue;
    }
    const toSuccessor = new Map<string, Scalar>();
    const toLegacy = new Map<Scalar, string>();
    table.entries.forEach((entry, i) => {
      if (toSuccessor.has(entry.legacy))
        problem(
          source.file,
          `$.entries[${i}].legacy`,
          `legacy value ${JSON.stringify(entry.legacy)} is listed twice: reading it back would be ambiguous`,
        );
      if (toLegacy.has(entry.successor))
        problem(
          source.file,
          `$.entries[${i}].successor`,
          `successor value ${JSON.stringify(entry.successor)} is listed twice: reading it back would be ambiguous`,
        );
      toSuccessor.set(entry.legacy, entry.successor);
      toLegacy.set(entry.successor, entry.legacy);
    });
    (table.readAlso ?? []).forEach((entry, i) => {
      if (toLegacy.has(entry.successor))
        problem(
          source.file,
          `$.readAlso[${i}].successor`,
          `successor value ${JSON.stringify(entry.successor)} is already in entries`,
        );
      else toLegacy.set(entry.successor, entry.legacy);
    });
    values.set(table.name, {
      name: table.name,
      toSuccessor,
      toLegacy,
      fallback: table.fallback,
      legacyValues: [...toSuccessor.keys()],
    });
  }

  const resources = new Map<string, CompiledResource>();
  /** Per kind, the fields of its table that have a problem of their own (not named again as missing). */
  const brokenFields = new Map<string, Set<string>>();
  for (const source of sources.fields) {
    const table = source.data;
    const kind = kinds.get(table.kind);
    if (!kind) {
      problem(source.file, '$.kind', unknownKind(table.kind, kinds));
      continue;
    }
    const other = resources.get(table.kind);
    if (other) {
      problem(source.file, '$.kind', `kind ${table.kind} already has a field table (${other.file})`);
      continue;
    }
    const fields = new Map<string, CompiledField>();
    const broken = new Set<string>();
    brokenFields.set(table.kind, broken);
    for (const [name, field] of Object.entries(table.fields)) {
      broken.add(name);
      const at = `$.fields.${name}`;
      if (name === '_id') {
        problem(source.file, at, "_id is the entity's legacy ID (from ids.json), not a mapped field");
        continue;
      }
      let valueTable: CompiledValues | undefined;
      if (field.values !== undefined) {
        valueTable = values.get(field.values);
        if (!valueTable) {
          problem(
            source.file,
            `${at}.values`,
            `no value table named ${field.values} (known: ${[...values.keys()].join(', ') || 'none'})`,
          );
          continue;
        }
      }
      let ref: CompiledKind | undefined;
      if (field.ref !== undefined) {
        ref = kinds.get(field.ref);
        if (!ref) {
          problem(source.file, `${at}.ref`, unknownKind(field.ref, kinds));
          continue;
        }
      }
      let contains: CompiledField['contains'];
      if (field.contains) {
        const template = compile(
          source.file,
          `${at}.contains.value`,
          field.contains.value,
          commonCheck(() => 'only {settings.…} is available here'),
        );
        if (!template) continue;
        contains = {
          key: splitPath(field.contains.key),
          value: renderText(template, (path) => (path[0] === 'settings' ? settings[path[1] ?? ''] : '')),
        };
      }
      broken.delete(name);
      fields.set(name, {
        name,
        attribute: splitPath(field.attribute),
        readable: field.direction !== 'write',
        writable: field.direction !== 'read',
        format: field.format,
        values: valueTable,
        ref,
        many: field.many ?? false,
        contains,
        default: field.default,
      });
    }
    for (const clash of writeClashes(fields))
      problem(source.file, `$.fields.${clash.field}.attribute`, clash.message);
    resources.set(table.kind, { resource: table.resource, kind, file: source.file, fields });
  }

  const operations = new Map<string, CompiledOperation>();
  for (const source of sources.operations) {
    for (const [id, table] of Object.entries(source.data.operations)) {
      const at = `$.operations[${JSON.stringify(id)}]`;
      const other = operations.get(id);
      if (other) {
        problem(source.file, at, `operation ${id} is already mapped in ${other.file}`);
        continue;
      }
      // No route calls a table of another id: a misspelt id would sit there doing nothing.
      if (shapes.size > 0 && !shapes.has(id)) {
        problem(
          source.file,
          at,
          `the proxy serves no operation ${id}, so this table would never be used; closest: ${closest(id, [...shapes.keys()]).join(', ')}`,
        );
        continue;
      }
      const compiled = compileOperation(id, table, source.file, at, {
        kinds,
        resources,
        problem,
        compile,
        commonCheck,
        shape: shapes.get(id),
      });
      if (compiled) operations.set(id, compiled);
    }
  }
  for (const [resource, byField] of unreadableFields(operations, shapes, brokenFields)) {
    for (const [name, { labels, mappedAs }] of byField) {
      problem(
        resource.file,
        '$.fields',
        `no readable field ${name}, which ${labels.join(', ')} need${labels.length === 1 ? 's' : ''} (mapped as ${[...mappedAs].join('; ')})`,
      );
    }
  }

  for (const [resource, byField] of unwritableBodyFields(operations, shapes, brokenFields)) {
    for (const [name, need] of byField) {
      const present = resource.fields.has(name);
      problem(
        resource.file,
        present ? `$.fields.${name}.direction` : '$.fields',
        unwritable(name, present, need),
      );
    }
  }
  for (const [resource, byKey] of contractProblems(operations, shapes)) {
    for (const [at, message] of byKey.values()) problem(resource.file, at, message);
  }
  for (const [resource, { unused, used }] of unusedFields(operations, shapes)) {
    for (const name of unused) {
      problem(
        resource.file,
        `$.fields.${name}`,
        `no legacy operation of kind ${resource.kind.name} answers with or takes a field ${name}, so this mapping would never be used; closest: ${closest(name, used).join(', ')}`,
      );
    }
  }

  if (problems.length > 0) return { problems };
  const profile = sources.profile.data;
  return {
    profile: {
      name: profile.name,
      dir,
      settings,
      attributesParam: profile.successor.attributesParam,
      attributesSeparator: profile.successor.attributesSeparator,
      maxIdsPerQuery: profile.successor.maxIdsPerQuery,
      maxIdBytesPerQuery: profile.successor.maxIdBytesPerQuery,
      paging: profile.successor.paging,
      openApi: profile.successor.openApi,
      readinessPath: profile.successor.readinessPath,
      cache: profile.cache,
      kinds,
      resources,
      operations,
      files: [
        sources.profile.file,
        ...[sources.entities, sources.ids, sources.values, sources.fields, sources.operations].flatMap(
          (list) => list.map((s) => s.file),
        ),
      ],
    },
  };
}

/** The problem of a body field that operations require and the field table does not write (see `unwritableBodyFields`). */
function unwritable(name: string, present: boolean, { labels, mappedAs }: FieldNeed): string {
  const [require, their] =
    labels.length === 1 ? ['requires', 'its legacy body'] : ['require', 'their legacy bodies'];
  const which = `${labels.join(', ')} ${require} ${present ? 'it ' : ''}in ${their} (mapped as ${[...mappedAs].join('; ')})`;
  const refused = `every such call would answer 400 "${name} cannot be written"`;
  return present
    ? `${name} is read-only, but ${which}: ${refused}; make it "both"`
    : `no writable field ${name}, which ${which}: ${refused}`;
}

/**
 * Writable fields whose attributes overlap: the same path, or one inside the other (`profile` and
 * `profile.class`). A body with both would write one attribute twice and silently keep one value.
 */
function writeClashes(fields: ReadonlyMap<string, CompiledField>): { field: string; message: string }[] {
  const writable = [...fields.values()].filter((field) => field.writable);
  const clashes: { field: string; message: string }[] = [];
  writable.forEach((field, i) => {
    for (const earlier of writable.slice(0, i)) {
      const [shorter, longer] =
        earlier.attribute.length <= field.attribute.length ? [earlier, field] : [field, earlier];
      if (!shorter.attribute.every((segment, k) => longer.attribute[k] === segment)) continue;
      const a = shorter.attribute.join('.');
      const b = longer.attribute.join('.');
      clashes.push({
        field: field.name,
        message:
          a === b
            ? `the writable fields ${earlier.name} and ${field.name} both write the successor attribute ${a}: a body with both would keep only one value; give each its own attribute or make one "read"`
            : `the writable field ${shorter.name} writes ${a}, which holds ${b} that ${longer.name} writes: a body with both would keep only one value; give each its own attribute or make one "read"`,
      });
    }
  });
  return clashes;
}

function compileIdStrategy(strategy: IdStrategy): CompiledIdStrategy {
  switch (strategy.strategy) {
    case 'natural':
      return { ...strategy, attribute: splitPath(strategy.attribute) };
    case 'uuid':
      return strategy;
    case 'table':
      return {
        strategy: 'table',
        assign:
          strategy.assign.rule === 'attribute'
            ? { ...strategy.assign, path: splitPath(strategy.assign.attribute) }
            : strategy.assign,
      };
  }
}

function idAttributesOf(id: CompiledIdStrategy, uuidAttribute: string): string[] {
  switch (id.strategy) {
    case 'natural':
      return [id.attribute.join('.')];
    case 'uuid':
      return [uuidAttribute];
    case 'table':
      return id.assign.rule === 'attribute' ? [uuidAttribute, id.assign.attribute] : [uuidAttribute];
  }
}

function unknownKind(name: string, kinds: ReadonlyMap<string, CompiledKind>): string {
  return `no entity kind ${name} (known: ${[...kinds.keys()].join(', ') || 'none'})`;
}

interface OperationContext {
  kinds: ReadonlyMap<string, CompiledKind>;
  resources: ReadonlyMap<string, CompiledResource>;
  problem: (file: string, path: string, message: string) => void;
  compile: (file: string, at: string, source: string, check: VariableCheck) => Template | undefined;
  commonCheck: (allowed: (path: readonly string[]) => string | undefined) => VariableCheck;
  /** What the legacy operation of this id offers its templates; unknown for an operation the proxy does not serve. */
  shape: RequiredOperation | undefined;
}

function compileOperation(
  id: string,
  table: OperationTable,
  file: string,
  at: string,
  ctx: OperationContext,
): CompiledOperation | undefined {
  const { problem } = ctx;
  const before = { count: 0 };
  const report = (path: string, message: string) => {
    before.count++;
    problem(file, path, message);
  };
  const kind = ctx.kinds.get(table.kind);
  if (!kind) {
    report(`${at}.kind`, unknownKind(table.kind, ctx.kinds));
    return undefined;
  }
  let items: CompiledKind | undefined;
  if (table.items) {
    items = ctx.kinds.get(table.items.kind);
    if (!items) report(`${at}.items.kind`, unknownKind(table.items.kind, ctx.kinds));
  }
  if (table.relation && !table.items)
    report(`${at}.relation`, '"relation" needs "items": it names where the linked items are listed');
  const resource = ctx.resources.get(kind.name);
  const writable = resource
    ? [...resource.fields.values()]
        .filter((field) => field.writable)
        .map((field) => field.attribute.join('.'))
    : undefined;
  const steps: CompiledStep[] = [];
  let usesFields = false;
  const compileRequest = (
    request: StepTable | UndoTable,
    requestAt: string,
    check: VariableCheck,
  ): CompiledRequest | undefined => {
    const path = ctx.compile(file, `${requestAt}.path`, request.path, check);
    const pathProblem = stepPathProblem(request.path);
    if (pathProblem) report(`${requestAt}.path`, pathProblem);
    const query: [string, Template][] = [];
    for (const [param, value] of Object.entries(request.query ?? {})) {
      const compiled = ctx.compile(file, `${requestAt}.query[${JSON.stringify(param)}]`, value, check);
      if (compiled) query.push([param, compiled]);
    }
    let body: JsonTemplate | undefined;
    if (request.body !== undefined) {
      try {
        body = compileJsonTemplate(request.body, check);
      } catch (error) {
        if (!(error instanceof TemplateError)) throw error;
        report(
          `${requestAt}.body${error.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('')}`,
          error.message,
        );
      }
    }
    if (body && jsonUsesVariable(body, 'fields')) usesFields = true;
    if (path && usesVariable(path, 'fields')) report(`${requestAt}.path`, '{fields} belongs in a body');
    const describe =
      request.describe === undefined
        ? undefined
        : ctx.compile(file, `${requestAt}.describe`, request.describe, check);
    if (!path) return undefined;
    return {
      method: request.method,
      path,
      query,
      body,
      contentType: request.contentType ?? 'application/json',
      forEach: request.forEach !== undefined,
      tolerate: new Set(request.tolerate ?? []),
      write: request.method !== 'GET',
      describe,
    };
  };
  table.steps.forEach((step, index) => {
    const stepAt = `${at}.steps[${index}]`;
    // {entity.…}: the path entity, or the entity an earlier step created and returned.
    const created = table.steps.slice(0, index).some((s) => s.returns === 'entity');
    const check = ctx.commonCheck((path) =>
      stepVariable(path, {
        table,
        shape: ctx.shape,
        forEach: step.forEach === 'items',
        entity: table.subject !== undefined || created,
        applied: false,
        writable,
      }),
    );
    const request = compileRequest(step, stepAt, check);
    if (step.forEach && !table.items)
      report(`${stepAt}.forEach`, 'forEach "items" needs "items" on the operation');
    const when = step.when === undefined ? undefined : ctx.compile(file, `${stepAt}.when`, step.when, check);
    let undo: CompiledRequest | undefined;
    if (step.undo) {
      const undoAt = `${stepAt}.undo`;
      if (step.undo.forEach && !table.items)
        report(`${undoAt}.forEach`, 'forEach "applied" needs "items" on the operation');
      if (step.forEach && !table.relation)
        report(
          undoAt,
          'a per-item step with "undo" needs "relation" on the operation, so that a rollback undoes only what the call changed',
        );
      undo = compileRequest(
        step.undo,
        undoAt,
        ctx.commonCheck((path) =>
          stepVariable(path, {
            table,
            shape: ctx.shape,
            forEach: step.undo?.forEach === 'applied',
            entity: table.subject !== undefined || created || step.returns === 'entity',
            applied: true,
            writable,
          }),
        ),
      );
    }
    if (!request) return;
    steps.push({
      ...request,
      collection: step.collection ?? false,
      returnsEntity: step.returns === 'entity',
      when,
      undo,
    });
  });
  const needsFields = usesFields || table.result.type === 'entity' || table.result.type === 'collection';
  if (needsFields && !resource) {
    report(
      `${at}.kind`,
      `kind ${kind.name} has no field table, which this operation needs to translate fields`,
    );
  }
  if (table.result.type === 'collection' && !table.steps.some((s) => s.collection)) {
    report(`${at}.result`, 'a collection result needs a step with "collection": true');
  }
  if (table.result.type === 'entity' && !table.subject && !table.steps.some((s) => s.returns === 'entity')) {
    report(`${at}.result`, 'an entity result needs a subject or a step that "returns": "entity"');
  }
  for (const [path, message] of servedProblems(table, ctx.shape)) report(`${at}${path}`, message);
  if (before.count > 0 || (table.items && !items)) return undefined;
  return {
    id,
    file,
    kind,
    resource,
    subject: table.subject && {
      param: table.subject.param,
      refuseWhen: table.subject.refuseWhen && {
        attribute: splitPath(table.subject.refuseWhen.attribute),
        message: table.subject.refuseWhen.message,
      },
    },
    items,
    steps,
    result: table.result,
    usesFields,
    relation: table.relation
      ? { attribute: splitPath(table.relation.attribute), change: table.relation.change }
      : undefined,
  };
}

/**
 * What the successor client would refuse or misread in a step's path, found before any call: the
 * path is relative to successor.baseUrl (no scheme or host: calls elsewhere are refused), carries
 * no fragment (never sent: dropped without a word), and no `.` or `..` segment (it could lead out
 * of the API's base path). A query in the path is sent, before the `query` parameters.
 */
function stepPathProblem(source: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(source) || source.startsWith('//'))
    return 'a path below successor.baseUrl, without scheme or host (calls to another origin are refused)';
  if (source.replace(/\{[^}]*\}/g, '').includes('#')) return 'no fragment in a path: it is never sent';
  if (hasDotSegment(source)) return 'no "." or ".." segments in a path';
  return undefined;
}

function stepVariable(
  path: readonly string[],
  ctx: {
    table: OperationTable;
    shape: RequiredOperation | undefined;
    forEach: boolean;
    entity: boolean;
    applied: boolean;
    /** The successor attributes of the kind's writable fields, what `{fields.…}` holds; undefined without a field table. */
    writable: readonly string[] | undefined;
  },
): string | undefined {
  const [root, sub, ...rest] = path;
  const refCheck = (what: string): string | undefined =>
    sub !== undefined && REF_VARS.has(sub) && rest.length === 0
      ? undefined
      : `use {${what}.uuid}, {${what}.uuid58}, {${what}.iri} or {${what}.id}`;
  switch (root) {
    case 'entity':
      return ctx.entity
        ? refCheck('entity')
        : '{entity.…} needs a "subject" on the operation or an earlier step that "returns": "entity"';
    case 'items':
      return ctx.table.items ? refCheck('items') : '{items.…} needs "items" on the operation';
    case 'item':
      return ctx.forEach ? refCheck('item') : '{item.…} is only available in a "forEach" step';
    case 'applied':
      if (!ctx.applied) return '{applied.…} is only available in an "undo"';
      return ctx.table.items ? refCheck('applied') : '{applied.…} needs "items" on the operation';
    case 'body':
    case 'params': {
      if (sub === undefined || rest.length > 0) return `use {${root}.<name>}`;
      const { shape } = ctx;
      if (!shape) return undefined;
      const names = root === 'params' ? shape.params : shape.bodyFields;
      if (names.includes(sub)) return undefined;
      const [where, what] = root === 'params' ? ['path', 'parameter'] : ['legacy body', 'field'];
      return `the ${where} of ${shape.label} has no ${what} "${sub}" (${names.length > 0 ? `known: ${names.join(', ')}` : `it has no ${what}s`})`;
    }
    case 'fields': {
      // {fields.<attribute>}: the legacy body translated through the field table, by successor
      // attribute. A misspelt one rendered as missing: a step that silently wrote nothing.
      if (sub === undefined || ctx.writable === undefined) return undefined;
      const wanted = [sub, ...rest].join('.');
      const known = ctx.writable.some(
        (attribute) =>
          attribute === wanted || attribute.startsWith(`${wanted}.`) || wanted.startsWith(`${attribute}.`),
      );
      return known
        ? undefined
        : `no writable field of kind ${ctx.table.kind} writes the attribute "${wanted}" (known: ${ctx.writable.join(', ') || 'none'})`;
    }
    case 'attributes':
      return path.length === 1 ? undefined : `{${root}} has no sub-fields`;
    default:
      return `unknown variable; available: entity, items, item, applied, body, params, fields, attributes, settings, apiBase`;
  }
}
