import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedNone } from '../translate.js';
import { USER_TAG, userParams } from './schema.js';

/** DELETE /Core/Entity/User/{id}: soft-deletes a user (deleted/deletedBy set; restorable until purged). */
export const userDeleteOperation = defineOperation({
  id: 'user.delete',
  method: 'delete',
  path: '/Core/Entity/User/{id}',
  summary: 'Deletes a user (soft delete)',
  tag: USER_TAG,
  params: userParams,
  answer: { result: 'none' },
  responses: {
    204: { description: 'Deleted; GET still shows the user with deleted/deletedBy until it is purged' },
    ...errorResponses(forbidden(USER_TAG, 'deleted'), 404),
  },
  async handler(c, { params }) {
    await mappedNone(c, 'user.delete', { params });
    return c.body(null, 204);
  },
});
