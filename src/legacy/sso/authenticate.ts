import { LegacyError } from '../../http/legacy-error.js';
import { publicUrlOf } from '../../http/public-url.js';
import { quoteInput } from '../../lib/quote.js';
import { normalizeUuid } from '../../lib/uuid.js';
import { TranslationError } from '../../mapping/errors.js';
import { continueUrl } from '../../sso/tokens.js';
import { UpstreamError } from '../../successor/errors.js';
import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedEntity } from '../translate.js';
import {
  SSO_TAG,
  SSO_USER_FIELDS,
  ssoAuthenticateForm,
  ssoAuthenticationSchema,
  ssoUserFields,
} from './schema.js';

/**
 * POST /Service/Sso/authenticate: issues a single-use SSO token for an existing user that is
 * neither deleted nor locked. The token is stored only as a hash; `return_to` is the proxy's
 * `/sso/continue`, which consumes it and sends the browser on to the portal login.
 */
export const ssoAuthenticateOperation = defineOperation({
  id: 'sso.authenticate',
  method: 'post',
  path: '/Sso/authenticate',
  summary: 'Issues a single-sign-on token for a user',
  description:
    'Form data (`application/x-www-form-urlencoded` or `multipart/form-data`) with the field `username`. ' +
    'The user must exist and be neither deleted nor locked. The token is valid once, for `sso.ttlSeconds` ' +
    '(default 60); send the browser to `return_to`.',
  tag: SSO_TAG,
  body: {
    kind: 'form',
    schema: ssoAuthenticateForm,
    required: true,
    description: 'The user to authenticate',
  },
  // The handler resolves the form's username as the path entity would be: `{params.username}`.
  mappingInput: { params: ['username'], bodyFields: [] },
  answer: { result: 'entity', fields: SSO_USER_FIELDS },
  answerFields: ssoUserFields,
  responses: {
    200: { description: 'The token and where to send the browser', schema: ssoAuthenticationSchema },
    ...errorResponses([
      400,
      'Refused: the body is not form data with exactly the text field `username`, given once (JSON, a missing, empty or repeated `username`, `username[]`, another field or a file part), or the user is unknown, deleted or locked (`Unknown user "x"`, `User "x" is deleted`, `User "x" is locked`; `errors[0].path` is `body.username`)',
    ]),
  },
  async handler(c, { body }) {
    const requested = body.username;
    let found: Awaited<ReturnType<typeof mappedEntity>>;
    try {
      found = await mappedEntity(c, 'sso.authenticate', {
        params: { username: requested },
        fields: SSO_USER_FIELDS,
      });
    } catch (error) {
      // The seed answers 400 for every SSO failure: an unknown user is not a missing path entity.
      if (error instanceof TranslationError && error.code === 'not_found') {
        throw new LegacyError(400, `Unknown user ${quoteInput(requested)}`, [
          { path: 'body.username', message: 'no such user' },
        ]);
      }
      throw error;
    }
    const user = found.value;
    const username = typeof user.username === 'string' && user.username !== '' ? user.username : requested;
    // A plain field (no format, no value table) passes the successor's value on as it comes, which
    // the profile check cannot see: a `locked` that is no boolean cannot say "not locked". No token
    // then, and the log says why. A `deleted` must have its date format (the profile check refuses
    // a legacy date without it), so its guard here is the second line, as is the empty date's.
    notOfType(user.deleted, 'string', 'deleted', username);
    notOfType(user.locked, 'boolean', 'locked', username);
    // An empty deletion date is none, as a `date` format reads it.
    if (typeof user.deleted === 'string' && user.deleted !== '') {
      throw new LegacyError(400, `User ${quoteInput(username)} is deleted`, [
        { path: 'body.username', message: 'the user is deleted' },
      ]);
    }
    if (user.locked === true) {
      throw new LegacyError(400, `User ${quoteInput(username)} is locked`, [
        { path: 'body.username', message: 'the user is locked' },
      ]);
    }
    const userUuid = typeof user.uuid === 'string' ? normalizeUuid(user.uuid) : undefined;
    if (!userUuid) {
      throw new UpstreamError(
        'bad_response',
        `the successor's user ${quoteInput(username)} has no UUID where the field table of sso.authenticate says (field uuid)`,
      );
    }
    const issued = await c
      .get('services')
      .ssoTokens.issue({ username, userUuid, apiUser: c.get('apiUser') ?? '' }, c.get('requestId'));
    c.header('Cache-Control', 'no-store');
    return c.json(
      { username, token: issued.token, return_to: continueUrl(publicUrlOf(c), issued.token) },
      200,
    );
  },
});

/**
 * Throws the 502 of an answer the proxy cannot use when the user's `field` holds something other
 * than a value of `type` or nothing (null, absent).
 */
function notOfType(value: unknown, type: 'string' | 'boolean', field: string, username: string): void {
  if (value === null || value === undefined || typeof value === type) return;
  throw new UpstreamError(
    'bad_response',
    `the successor's user ${quoteInput(username)} has ${field} ${quoteInput(JSON.stringify(value))}, which is no ${type}: give the field ${field} of the user field table ${type === 'boolean' ? 'format "boolean"' : 'format "date-time"'}`,
  );
}
