import { defineOperation, fieldsNotIn } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedEntity } from '../translate.js';
import {
  USER_FIELDS,
  USER_TAG,
  USER_WRITABLE_FIELDS,
  userParams,
  userUpdateSchema,
  userWritableSchema,
} from './schema.js';

/** PUT /Core/Entity/User/{id}: changes any writable field; answers exactly the writable fields. */
export const userUpdateOperation = defineOperation({
  id: 'user.update',
  method: 'put',
  path: '/Core/Entity/User/{id}',
  summary: 'Updates a user',
  tag: USER_TAG,
  params: userParams,
  body: {
    kind: 'json',
    schema: userUpdateSchema,
    required: true,
    notWritable: fieldsNotIn(USER_FIELDS, userUpdateSchema),
  },
  answer: { result: 'entity', fields: USER_WRITABLE_FIELDS },
  responses: {
    200: { description: 'The writable fields of the updated user', schema: userWritableSchema },
    ...errorResponses(400, forbidden(USER_TAG, 'updated', { untilRestored: true }), 404),
  },
  async handler(c, { params, body }) {
    const user = await mappedEntity(c, 'user.update', { params, body, fields: USER_WRITABLE_FIELDS });
    return c.json(user.value, 200);
  },
});
