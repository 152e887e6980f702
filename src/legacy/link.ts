import type { z } from 'zod';
import { defineOperation, type LegacyOperation } from './operation.js';
import { errorResponses } from './responses.js';
import { mappedEntity } from './translate.js';
import { linkBodySchema } from './user/schema.js';

/**
 * A link operation of the group, role or privilege resource: the body is a JSON array of legacy
 * IDs, every one resolved before anything is written (unknown → 400, nothing changed); answers
 * the updated entity. A successor failure between the writes of one call is reported with what
 * was and was not applied, and rolled back where the mapping tables say how. The literal path
 * stays in each operation's file, so that one grep of it finds the handler.
 */
export function linkOperation(spec: {
  id: string;
  method: 'post' | 'delete';
  path: string;
  /** What the body lists, plural, for the docs (e.g. users). */
  what: string;
  /** OpenAPI tag: the resource name, which the docs use in lower case for the path entity. */
  tag: string;
  params: z.ZodType<{ id: string }>;
  schema: z.ZodType;
  fields: readonly string[];
}): LegacyOperation {
  const adding = spec.method === 'post';
  const entity = spec.tag.toLowerCase();
  return defineOperation({
    id: spec.id,
    method: spec.method,
    path: spec.path,
    summary: adding ? `Adds ${spec.what} to a ${entity}` : `Removes ${spec.what} from a ${entity}`,
    description: `${
      adding
        ? `Links the ${spec.what} whose IDs the body lists; already linked ones are fine.`
        : `Unlinks the ${spec.what} whose IDs the body lists; ones that are not linked are fine.`
    } Every ID is checked before anything is written. If the successor fails between the writes of one call, the error says which IDs were applied and which not, and the applied ones are rolled back where the successor allows it.`,
    tag: spec.tag,
    params: spec.params,
    body: { kind: 'json', schema: linkBodySchema, required: true, description: `Legacy ${spec.what} IDs` },
    answer: { result: 'entity', fields: spec.fields },
    responses: {
      200: { description: `The updated ${entity}`, schema: spec.schema },
      ...errorResponses(400, 404),
    },
    async handler(c, { params, body }) {
      const updated = await mappedEntity(c, spec.id, { params, body, fields: spec.fields });
      return c.json(updated.value, 200);
    },
  });
}
