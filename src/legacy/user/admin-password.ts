import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedNone } from '../translate.js';
import { passwordBodySchema, USER_TAG, userParams } from './schema.js';

/** POST /Core/User/{id}/adminpassword: sets a user's administrator password (does not grant ROLE_ADMIN). */
export const userAdminPasswordSetOperation = defineOperation({
  id: 'user.adminpassword.set',
  method: 'post',
  path: '/Core/User/{id}/adminpassword',
  summary: 'Sets the administrator password of a user',
  description: 'Does not by itself grant access to the admin section: the user also needs the admin role.',
  tag: USER_TAG,
  params: userParams,
  body: { kind: 'json', schema: passwordBodySchema, required: true, secret: true },
  answer: { result: 'none' },
  responses: {
    204: { description: 'Set' },
    ...errorResponses(400, forbidden(USER_TAG, 'changed', { untilRestored: true }), 404),
  },
  async handler(c, { params, body }) {
    await mappedNone(c, 'user.adminpassword.set', { params, body });
    return c.body(null, 204);
  },
});
