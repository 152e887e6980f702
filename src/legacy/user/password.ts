import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedNone } from '../translate.js';
import { passwordBodySchema, USER_TAG, userParams } from './schema.js';

/** POST /Core/User/{id}/password: sets a user's password. */
export const userPasswordSetOperation = defineOperation({
  id: 'user.password.set',
  method: 'post',
  path: '/Core/User/{id}/password',
  summary: 'Sets the password of a user',
  tag: USER_TAG,
  params: userParams,
  body: { kind: 'json', schema: passwordBodySchema, required: true, secret: true },
  answer: { result: 'none' },
  responses: {
    204: { description: 'Set' },
    ...errorResponses(400, forbidden(USER_TAG, 'changed', { untilRestored: true }), 404),
  },
  async handler(c, { params, body }) {
    await mappedNone(c, 'user.password.set', { params, body });
    return c.body(null, 204);
  },
});
