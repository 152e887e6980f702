import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedNone } from '../translate.js';
import { USER_TAG, userParams } from './schema.js';

/** POST /Core/User/{id}/adminpassword/revoke: removes a user's administrator password (the admin role stays). */
export const userAdminPasswordRevokeOperation = defineOperation({
  id: 'user.adminpassword.revoke',
  method: 'post',
  path: '/Core/User/{id}/adminpassword/revoke',
  summary: 'Revokes the administrator password of a user',
  description: 'Removes only that password; the admin role is kept (removing it is a separate step).',
  tag: USER_TAG,
  params: userParams,
  answer: { result: 'none' },
  responses: {
    204: { description: 'Revoked' },
    ...errorResponses(forbidden(USER_TAG, 'changed', { untilRestored: true }), 404),
  },
  async handler(c, { params }) {
    await mappedNone(c, 'user.adminpassword.revoke', { params });
    return c.body(null, 204);
  },
});
