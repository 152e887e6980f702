import { z } from 'zod';
import { legacyIdProblem } from '../lib/legacy-id.js';

/**
 * The file formats of a mapping profile (`mappings/<profile>/**.json`). Every file names its
 * table type in `table`, so one JSON Schema (`mappings/mapping.schema.json`) serves them all.
 * Cross-references (kinds, value tables, template variables) are checked later, in compile.ts.
 */

const kindName = z
  .string()
  .regex(/^[a-z][A-Za-z0-9_-]*$/, 'an entity kind name: lower-case letter, then letters, digits, _ or -')
  .describe('Entity kind, e.g. user, group, role, privilege, flag');

const attributePath = z
  .string()
  .regex(
    /^[A-Za-z_@$][A-Za-z0-9_@$-]*(\.[A-Za-z_@$][A-Za-z0-9_@$-]*)*$/,
    'a successor attribute path: names separated by dots, e.g. "firstname" or "profile.class"',
  )
  .describe('Successor attribute (dot path for nested objects)');

const template = z
  .string()
  .describe('Template: text with {placeholders}; a string that is one placeholder yields the raw value');

const legacyName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a legacy field name');

const queryTemplate = z
  .record(z.string().min(1), template)
  .describe('Query parameters: name → template (a template yielding a list sends name=a&name=b)');

/**
 * Upper bound of `cache.max`. lru-cache allocates its slots up front (key, value, links, TTL and
 * start time: about 45 bytes each, with a TTL): 1,000,000 reserve some 45 MB in 0.2 s on every
 * start and reload; 10,000,000 take 350 MB and over a second, and larger values exhaust the heap.
 */
export const ID_CACHE_MAX = 1_000_000;

const schemaRef = z.string().optional().describe('Path of mapping.schema.json, for editors');

/** `profile.json`: what the profile is, settings templates can use, successor conventions, the ID cache. */
export const profileFileSchema = z.strictObject({
  $schema: schemaRef,
  table: z.literal('profile'),
  name: z.string().min(1).describe('Profile name, shown in logs and by mappings check'),
  description: z.string().optional(),
  settings: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string())
    .default({})
    .describe('Named values templates can use as {settings.name}, e.g. adminRole'),
  successor: z
    .strictObject({
      attributesParam: z
        .string()
        .min(1)
        .describe('Query parameter that selects attributes, e.g. _attributes'),
      attributesSeparator: z.string().min(1).describe('Separator of the attribute list, e.g. ","'),
      maxIdsPerQuery: z
        .int()
        .min(1)
        .max(1000)
        .default(100)
        .describe('Most IDs one filter query carries (longer lists are split, keeping URLs short)'),
      maxIdBytesPerQuery: z
        .int()
        .min(256)
        .max(65_536)
        .default(4096)
        .describe(
          "Most bytes of URL-encoded IDs one filter query carries: long IDs split a list further, keeping the URL within the successor's limit (8 KB on common web servers)",
        ),
      paging: z
        .strictObject({
          page: z.string().min(1).describe('Query parameter with the 1-based page number, e.g. page'),
          itemsPerPage: z.string().min(1).describe('Query parameter with the page size, e.g. itemsPerPage'),
        })
        .describe('How collections are paged: every collection read (and the readiness read) uses these'),
      openApi: z
        .array(z.string().regex(/^\//, 'must start with "/"'))
        .min(1)
        .describe(
          "Paths (relative to the base URL) of the successor's OpenAPI document, tried in order by mappings check --live",
        ),
      readinessPath: z
        .string()
        .regex(/^\//, 'must start with "/"')
        .describe('Collection GET /readyz reads (one item) to see that the successor answers, e.g. /users'),
    })
    .describe('Conventions of the successor API'),
  cache: z
    .strictObject({
      ttlSeconds: z.int().min(0).describe('How long a resolved natural ID is trusted (0: no cache)'),
      max: z
        .int()
        .min(1)
        .max(ID_CACHE_MAX, `must be at most ${ID_CACHE_MAX.toLocaleString('en')}`)
        .describe(
          `Most resolutions kept, at most ${ID_CACHE_MAX}: the cache reserves room for all of them at once (about 45 bytes each)`,
        ),
    })
    .describe('The cache of natural-ID resolutions'),
});

const entitySchema = z.strictObject({
  label: z.string().min(1).describe('Name used in error messages, e.g. "group flag"'),
  collection: z
    .string()
    .regex(/^\//, 'must start with "/"')
    .describe('Collection path relative to the successor base URL, e.g. /users'),
  item: template.describe('Item path template; variables {uuid}, {uuid58}'),
  iri: template.describe(
    'IRI template used in request bodies; variables {apiBase}, {uuid}, {uuid58}, e.g. {apiBase}/users/{uuid58}',
  ),
  uuidAttribute: attributePath.describe('Attribute holding the dashed (or base58) UUID, e.g. hexUuid'),
  uuidFilter: z
    .strictObject({
      param: z.string().min(1).describe('Query parameter filtering by UUIDs, e.g. uuid'),
      separator: z.string().min(1).describe('Separator of many UUIDs in one parameter, e.g. ","'),
    })
    .describe('How to read many entities by UUID in one call'),
  readQuery: queryTemplate
    .optional()
    .describe('Extra query parameters of every resolution read (e.g. to include soft-deleted entities)'),
});

/** `entities.json`: per kind, where its entities live and how they are addressed. */
export const entitiesFileSchema = z.strictObject({
  $schema: schemaRef,
  table: z.literal('entities'),
  kinds: z.record(kindName, entitySchema),
});

const naturalIdSchema = z.strictObject({
  strategy: z.literal('natural'),
  attribute: attributePath.describe('Successor attribute that is the legacy ID, e.g. user'),
  filter: z.string().min(1).describe('Query parameter to find one entity by that attribute, e.g. user'),
  filterMany: z
    .string()
    .min(1)
    .describe('Query parameter (repeated) to find many entities in one call, e.g. user[]'),
});

const assignRuleSchema = z
  .discriminatedUnion('rule', [
    z.strictObject({
      rule: z
        .literal('uuid')
        .describe('The legacy ID is the dashed UUID (<uuid>-2, -3, … when another entity has it as its ID)'),
    }),
    z.strictObject({
      rule: z.literal('attribute'),
      attribute: attributePath.describe(
        'Copy this successor attribute (falls back to the UUID when taken, then to <uuid>-2, -3, …)',
      ),
    }),
    z.strictObject({
      rule: z.literal('sequence'),
      prefix: z
        .string()
        .default('')
        // The IDs it makes must be ones a legacy path can name: an ID "G/1" was assigned for good
        // and answered 404 at every address.
        .superRefine((prefix, check) => {
          const problem = legacyIdProblem(`${prefix}1`) ?? legacyIdProblem(`${prefix}${'9'.repeat(20)}`);
          if (problem !== undefined)
            check.addIssue({ code: 'custom', message: `the IDs it makes ${problem}` });
        })
        .describe('Text before the number'),
      start: z.int().min(0).default(1).describe('First number when the table has none yet'),
    }),
  ])
  .describe('How entities without a table row get their legacy ID (created through the proxy or first seen)');

const tableIdSchema = z.strictObject({
  strategy: z.literal('table'),
  assign: assignRuleSchema,
});

/** One kind's ID strategy. */
export const idStrategySchema = z.discriminatedUnion('strategy', [
  naturalIdSchema,
  z.strictObject({
    strategy: z.literal('uuid').describe('The legacy ID is the dashed UUID (base58 accepted)'),
  }),
  tableIdSchema,
]);

/** `ids.json`: the ID mapping table of every kind. */
export const idsFileSchema = z.strictObject({
  $schema: schemaRef,
  table: z.literal('ids'),
  kinds: z.record(kindName, idStrategySchema),
});

const scalar = z.union([z.string(), z.number(), z.boolean()]);

/** A value table file: legacy values ↔ successor values of one field. */
export const valuesFileSchema = z.strictObject({
  $schema: schemaRef,
  table: z.literal('values'),
  name: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_-]*$/)
    .describe('Name fields refer to'),
  description: z.string().optional(),
  entries: z
    .array(z.strictObject({ legacy: z.string(), successor: scalar }))
    .min(1)
    .describe('One-to-one pairs: written as listed, read back to the same legacy value'),
  readAlso: z
    .array(z.strictObject({ successor: scalar, legacy: z.string() }))
    .optional()
    .describe('Further successor values read as a legacy value (never written)'),
  fallback: z
    .string()
    .nullable()
    .default(null)
    .describe('Legacy value for a successor value the table does not know (default null)'),
});

const formatSchema = z
  .enum(['string', 'date', 'date-time', 'boolean'])
  .describe('Conversion: date → YYYY-MM-DD, date-time → ISO 8601 with offset, boolean, string');

const fieldSchema = z
  .strictObject({
    attribute: attributePath,
    direction: z.enum(['read', 'write', 'both']).describe('read: in responses; write: accepted in bodies'),
    format: formatSchema.optional(),
    values: z.string().optional().describe('Value table translating this field'),
    ref: kindName.optional().describe('The attribute references entities of this kind: legacy IDs'),
    many: z.boolean().optional().describe('With ref: a list of references'),
    contains: z
      .strictObject({
        key: attributePath.describe('Sub-attribute of the related entities to compare'),
        value: template.describe('Value to look for, e.g. {settings.adminRole}'),
      })
      .optional()
      .describe('Derived boolean: whether the related list has an entry whose key equals value'),
    default: z
      .json()
      .optional()
      .describe('Legacy value used on read when the successor value is missing or null'),
  })
  .superRefine((field, ctx) => {
    const problem = (message: string, path: string) =>
      ctx.addIssue({ code: 'custom', message, path: [path] });
    if (field.many !== undefined && field.ref === undefined) problem('"many" needs "ref"', 'many');
    if (field.contains && field.ref) problem('"contains" and "ref" exclude each other', 'contains');
    if (field.contains && field.direction !== 'read')
      problem('a derived field can only be read', 'direction');
    if (field.values && (field.ref || field.contains))
      problem('"values" applies to plain fields only', 'values');
    if (field.format && field.ref) problem('"format" does not apply to references', 'format');
  });

/** A field table: legacy fields of one legacy resource ↔ successor attributes of one kind. */
export const fieldsFileSchema = z.strictObject({
  $schema: schemaRef,
  table: z.literal('fields'),
  resource: z
    .string()
    .regex(/^[a-z][A-Za-z0-9_-]*$/)
    .describe('Legacy resource, e.g. user'),
  kind: kindName.describe('Entity kind the resource maps to'),
  fields: z.record(legacyName, fieldSchema),
});

const upstreamCode = z.enum(['not_found', 'conflict', 'validation']);

const requestShape = {
  method: z.enum(['GET', 'POST', 'PATCH', 'PUT', 'DELETE']),
  path: template.describe('Path relative to the successor base URL, e.g. /users/{entity.uuid}/restore'),
  query: queryTemplate.optional(),
  body: z.json().optional().describe('JSON body template, e.g. {"addedThings": "{items.iri}"} or "{fields}"'),
  contentType: z.enum(['application/json', 'application/merge-patch+json']).optional(),
  tolerate: z
    .array(upstreamCode)
    .optional()
    .describe('Successor failures that count as success (e.g. not_found for idempotent unlinks)'),
  describe: template
    .optional()
    .describe(
      'How an error message names this write when a call fails half-way, e.g. "grant privileges {body.privileges} to role {entity.id}" (default: method, kind and legacy ID)',
    ),
};

const undoSchema = z
  .strictObject({
    ...requestShape,
    forEach: z
      .literal('applied')
      .optional()
      .describe('Run once per item this step changed ({item.…}); without it, once with {applied.…} lists'),
  })
  .describe(
    'How to reverse this write when a later write of the same call fails: {applied.…} are the items this step changed',
  );

const stepSchema = z
  .strictObject({
    ...requestShape,
    forEach: z.literal('items').optional().describe('Run once per item of the request body ({item.…})'),
    collection: z.boolean().optional().describe('GET every page of a collection (the result of a list)'),
    returns: z
      .literal('entity')
      .optional()
      .describe(
        'The answer is the entity after this step, with the asked {attributes}; without a subject it becomes {entity.…} for later steps',
      ),
    when: template
      .optional()
      .describe('Run the step only when this template yields a value that is not missing, null, "" or []'),
    undo: undoSchema.optional(),
  })
  .superRefine((step, ctx) => {
    if (step.collection && step.method !== 'GET')
      ctx.addIssue({ code: 'custom', message: 'only a GET can read a collection', path: ['collection'] });
    if (step.collection && step.forEach)
      ctx.addIssue({ code: 'custom', message: 'a collection read cannot run per item', path: ['forEach'] });
    if (step.returns && step.forEach)
      ctx.addIssue({
        code: 'custom',
        message: 'a per-item step cannot return the entity',
        path: ['returns'],
      });
    if (step.undo && step.method === 'GET')
      ctx.addIssue({ code: 'custom', message: 'a read changes nothing: it needs no undo', path: ['undo'] });
  });

const resultSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none').describe('No content') }),
  z.strictObject({ type: z.literal('entity').describe('The subject entity after the steps') }),
  z.strictObject({ type: z.literal('collection').describe('The entities of the collection step') }),
  z.strictObject({
    type: z.literal('object'),
    fields: z
      .record(legacyName, attributePath)
      .describe('Legacy key → attribute path in the last answer, e.g. {"<legacy key>": "<path>"}'),
  }),
]);

const operationSchema = z.strictObject({
  description: z.string().optional(),
  kind: kindName.describe('Entity kind the operation is about'),
  subject: z
    .strictObject({
      param: z.string().min(1).describe('Path parameter holding the legacy ID, e.g. id'),
      refuseWhen: z
        .strictObject({
          attribute: attributePath.describe("The path entity's attribute, e.g. deleted"),
          message: z.string().min(1).describe('What the legacy caller is told, with the 403'),
        })
        .optional()
        .describe(
          'Refuse the operation (legacy 403, nothing written) when this attribute of the path entity is set (not missing, null, false, "" or [])',
        ),
    })
    .optional()
    .describe('The path entity: resolved first, unknown → 404'),
  items: z
    .strictObject({ kind: kindName })
    .optional()
    .describe('The request body is a list of legacy IDs of this kind: all resolved first, unknown → 400'),
  relation: z
    .strictObject({
      attribute: attributePath.describe("The subject's attribute listing the linked items, e.g. members"),
      change: z
        .enum(['add', 'remove'])
        .describe('Whether the operation links (add) or unlinks (remove) the items'),
    })
    .optional()
    .describe(
      'The relation a link operation changes: read before writing, so that a rollback undoes exactly what the call changed',
    ),
  steps: z.array(stepSchema).describe('Successor requests, in order'),
  result: resultSchema,
});

/** An operation table: legacy operation id (e.g. user.link.groups.add) → how it runs on the successor. */
export const operationsFileSchema = z.strictObject({
  $schema: schemaRef,
  table: z.literal('operations'),
  operations: z.record(z.string().regex(/^[a-z][A-Za-z0-9_.-]*$/), operationSchema),
});

/** Any file of a profile, told apart by `table`. */
export const mappingFileSchema = z.discriminatedUnion('table', [
  profileFileSchema,
  entitiesFileSchema,
  idsFileSchema,
  valuesFileSchema,
  fieldsFileSchema,
  operationsFileSchema,
]);

/** Any parsed table file. */
export type MappingFile = z.output<typeof mappingFileSchema>;
/** A parsed profile.json. */
export type ProfileFile = z.output<typeof profileFileSchema>;
/** A parsed entities.json. */
export type EntitiesFile = z.output<typeof entitiesFileSchema>;
/** One kind in entities.json. */
export type EntityTable = z.output<typeof entitySchema>;
/** One kind in ids.json. */
export type IdStrategy = z.output<typeof idStrategySchema>;
/** How a `table` kind assigns legacy IDs to entities without a row. */
export type AssignRule = z.output<typeof assignRuleSchema>;
/** A parsed value table. */
export type ValuesFile = z.output<typeof valuesFileSchema>;
/** A parsed field table. */
export type FieldsFile = z.output<typeof fieldsFileSchema>;
/** One legacy field of a field table. */
export type FieldTable = z.output<typeof fieldSchema>;
/** One legacy operation of an operation table. */
export type OperationTable = z.output<typeof operationSchema>;
/** One successor request of an operation. */
export type StepTable = z.output<typeof stepSchema>;
/** The request that reverses a step. */
export type UndoTable = z.output<typeof undoSchema>;
/** A successor failure code a step may tolerate. */
export type UpstreamTolerance = z.output<typeof upstreamCode>;
/** Any JSON value (body templates, defaults). */
export type JsonValue = z.output<ReturnType<typeof z.json>>;

/** The JSON Schema of every mapping file, for editors (`mappings/mapping.schema.json`). */
export function mappingJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(mappingFileSchema, { io: 'input', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
}
