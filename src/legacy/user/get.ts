import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedEntity } from '../translate.js';
import { USER_FIELDS, USER_TAG, userParams, userSchema } from './schema.js';

/** GET /Core/Entity/User/{id}: one user with every field (soft-deleted users too, until purged). */
export const userGetOperation = defineOperation({
  id: 'user.get',
  method: 'get',
  path: '/Core/Entity/User/{id}',
  summary: 'Reads a user',
  tag: USER_TAG,
  params: userParams,
  answer: { result: 'entity', fields: USER_FIELDS },
  responses: {
    200: { description: 'The user; absent values are null', schema: userSchema },
    ...errorResponses(404),
  },
  async handler(c, { params }) {
    const user = await mappedEntity(c, 'user.get', { params, fields: USER_FIELDS });
    return c.json(user.value, 200);
  },
});
