import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedEntity } from '../translate.js';
import { ROLE_FIELDS, ROLE_TAG, roleParams, roleSchema } from './schema.js';

/** GET /Core/Entity/Role/{id}: one role with every field. */
export const roleGetOperation = defineOperation({
  id: 'role.get',
  method: 'get',
  path: '/Core/Entity/Role/{id}',
  summary: 'Reads a role',
  tag: ROLE_TAG,
  params: roleParams,
  answer: { result: 'entity', fields: ROLE_FIELDS },
  responses: {
    200: { description: 'The role; absent values are null', schema: roleSchema },
    ...errorResponses(404),
  },
  async handler(c, { params }) {
    const role = await mappedEntity(c, 'role.get', { params, fields: ROLE_FIELDS });
    return c.json(role.value, 200);
  },
});
