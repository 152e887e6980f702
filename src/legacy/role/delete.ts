import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedNone } from '../translate.js';
import { ROLE_TAG, roleParams } from './schema.js';

/** DELETE /Core/Entity/Role/{id}: deletes a role (403 for protected roles such as ROLE_ADMIN). */
export const roleDeleteOperation = defineOperation({
  id: 'role.delete',
  method: 'delete',
  path: '/Core/Entity/Role/{id}',
  summary: 'Deletes a role',
  description: 'The role is deleted for good, with its links to users and privileges.',
  tag: ROLE_TAG,
  params: roleParams,
  answer: { result: 'none' },
  responses: {
    204: { description: 'Deleted' },
    ...errorResponses(forbidden(ROLE_TAG, 'deleted'), 404),
  },
  async handler(c, { params }) {
    await mappedNone(c, 'role.delete', { params });
    return c.body(null, 204);
  },
});
