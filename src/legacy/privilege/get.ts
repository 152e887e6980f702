import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedEntity } from '../translate.js';
import { PRIVILEGE_FIELDS, PRIVILEGE_TAG, privilegeParams, privilegeSchema } from './schema.js';

/** GET /Core/Entity/Privilege/{id}: one privilege with every field of the seed's table. */
export const privilegeGetOperation = defineOperation({
  id: 'privilege.get',
  method: 'get',
  path: '/Core/Entity/Privilege/{id}',
  summary: 'Reads a privilege',
  tag: PRIVILEGE_TAG,
  params: privilegeParams,
  answer: { result: 'entity', fields: PRIVILEGE_FIELDS },
  responses: {
    200: { description: 'The privilege; absent values are null', schema: privilegeSchema },
    ...errorResponses(404),
  },
  async handler(c, { params }) {
    const privilege = await mappedEntity(c, 'privilege.get', { params, fields: PRIVILEGE_FIELDS });
    return c.json(privilege.value, 200);
  },
});
