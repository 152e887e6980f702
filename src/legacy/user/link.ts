import { defineOperation, type LegacyOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedEntity } from '../translate.js';
import { linkBodySchema, USER_FIELDS, USER_TAG, userParams, userSchema } from './schema.js';

/**
 * One user link operation: the body is a JSON array of legacy IDs; every one is resolved before
 * anything is written (unknown → 400, nothing changed); answers the updated user. The literal
 * path stays in each operation's file so that one grep of it finds the handler.
 */
export function userLinkOperation(spec: {
  id: string;
  method: 'post' | 'delete';
  path: string;
  what: string;
}): LegacyOperation {
  const adding = spec.method === 'post';
  return defineOperation({
    id: spec.id,
    method: spec.method,
    path: spec.path,
    summary: adding ? `Adds ${spec.what} to a user` : `Removes ${spec.what} from a user`,
    description: adding
      ? `Links the ${spec.what} whose IDs the body lists; already linked ones are fine.`
      : `Unlinks the ${spec.what} whose IDs the body lists; ones that are not linked are fine.`,
    tag: USER_TAG,
    params: userParams,
    body: { kind: 'json', schema: linkBodySchema, required: true, description: `Legacy ${spec.what} IDs` },
    answer: { result: 'entity', fields: USER_FIELDS },
    responses: {
      200: { description: 'The updated user', schema: userSchema },
      ...errorResponses(400, forbidden(USER_TAG, 'changed', { untilRestored: true }), 404),
    },
    async handler(c, { params, body }) {
      const user = await mappedEntity(c, spec.id, { params, body, fields: USER_FIELDS });
      return c.json(user.value, 200);
    },
  });
}
