import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedObject } from '../translate.js';
import { passwordAnswerSchema, USER_TAG, userParams } from './schema.js';

/** POST /Core/User/{id}/adminpassword/reset: gives a user a temporary administrator password and answers it. */
export const userAdminPasswordResetOperation = defineOperation({
  id: 'user.adminpassword.reset',
  method: 'post',
  path: '/Core/User/{id}/adminpassword/reset',
  summary: 'Resets the administrator password of a user to a temporary one',
  tag: USER_TAG,
  params: userParams,
  answer: { result: 'object' },
  secretAnswer: true,
  responses: {
    200: { description: 'The temporary administrator password', schema: passwordAnswerSchema },
    ...errorResponses(forbidden(USER_TAG, 'changed', { untilRestored: true }), 404),
  },
  async handler(c, { params }) {
    return c.json(await mappedObject(c, 'user.adminpassword.reset', { params }), 200);
  },
});
