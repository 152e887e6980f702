import { z } from 'zod';
import { legacyDate } from '../field-shapes.js';
import { wellFormed } from '../limits.js';
import { formText } from '../operation.js';

/**
 * The legacy contract of single sign-on (seed 4.5): form field `username` in, `username`,
 * `token`, `return_to` out. How the user is looked up lives in the mapping tables.
 */

/** The tag of the SSO operation in the interactive docs. */
export const SSO_TAG = 'Single sign-on';

/** The form of `POST /Service/Sso/authenticate`. */
export const ssoAuthenticateForm = z
  .strictObject({
    // Well-formed as any name: a control character is refused here, not sent to the successor.
    username: wellFormed(formText().min(1).max(255)).describe(
      'The user to authenticate (legacy username), exactly once',
    ),
  })
  .describe('SsoAuthenticateForm');

/** The answer of `POST /Service/Sso/authenticate`. */
export const ssoAuthenticationSchema = z
  .object({
    username: z.string().describe('The authenticated username'),
    token: z
      .string()
      .describe('Single-use authentication token (random, 256 bits, base64url) allowing automatic login'),
    return_to: z
      .string()
      .describe('Target URL to redirect the user to; it carries the token and consumes it on first use'),
  })
  .describe('SsoAuthentication');

/**
 * Legacy fields of the user read that decides about SSO: the field table maps them (the last
 * three exist for SSO only and appear in no legacy answer).
 */
export const SSO_USER_FIELDS = ['username', 'deleted', 'locked', 'uuid'] as const;

/** The legacy types of {@link SSO_USER_FIELDS}, which the profile's field table must give. */
export const ssoUserFields = z.object({
  username: z.string(),
  deleted: legacyDate.nullable(),
  locked: z.boolean(),
  uuid: z.string(),
});
