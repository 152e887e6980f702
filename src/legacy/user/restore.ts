import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedNone } from '../translate.js';
import { USER_TAG, userParams } from './schema.js';

/** POST /Core/User/{id}/restore: brings a soft-deleted user back (until it is purged). */
export const userRestoreOperation = defineOperation({
  id: 'user.restore',
  method: 'post',
  path: '/Core/User/{id}/restore',
  summary: 'Restores a deleted user',
  tag: USER_TAG,
  params: userParams,
  answer: { result: 'none' },
  responses: {
    204: { description: 'Restored' },
    ...errorResponses(404),
  },
  async handler(c, { params }) {
    await mappedNone(c, 'user.restore', { params });
    return c.body(null, 204);
  },
});
