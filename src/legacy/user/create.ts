import { defineOperation, fieldsNotIn } from '../operation.js';
import { errorResponses } from '../responses.js';
import { locationOf, mappedEntity } from '../translate.js';
import { USER_FIELDS, USER_TAG, userCreateSchema, userSchema } from './schema.js';

/** POST /Core/Entity/User: creates a user; 201 with the full user and its Location. */
export const userCreateOperation = defineOperation({
  id: 'user.create',
  method: 'post',
  path: '/Core/Entity/User',
  summary: 'Creates a user',
  tag: USER_TAG,
  body: {
    kind: 'json',
    schema: userCreateSchema,
    required: true,
    notWritable: fieldsNotIn(USER_FIELDS, userCreateSchema),
  },
  answer: { result: 'entity', fields: USER_FIELDS },
  responses: {
    201: { description: 'The created user (Location names it)', schema: userSchema },
    ...errorResponses(400),
  },
  async handler(c, { body }) {
    const created = await mappedEntity(c, 'user.create', { body, fields: USER_FIELDS });
    const headers = created.id === null ? undefined : { Location: locationOf(c, created.id) };
    return c.json(created.value, 201, headers);
  },
});
