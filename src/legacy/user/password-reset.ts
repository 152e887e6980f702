import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedObject } from '../translate.js';
import { passwordAnswerSchema, USER_TAG, userParams } from './schema.js';

/** POST /Core/User/{id}/password/reset: gives a user a temporary password and answers it. */
export const userPasswordResetOperation = defineOperation({
  id: 'user.password.reset',
  method: 'post',
  path: '/Core/User/{id}/password/reset',
  summary: 'Resets the password of a user to a temporary one',
  tag: USER_TAG,
  params: userParams,
  answer: { result: 'object' },
  secretAnswer: true,
  responses: {
    200: { description: 'The temporary password', schema: passwordAnswerSchema },
    ...errorResponses(forbidden(USER_TAG, 'changed', { untilRestored: true }), 404),
  },
  async handler(c, { params }) {
    return c.json(await mappedObject(c, 'user.password.reset', { params }), 200);
  },
});
