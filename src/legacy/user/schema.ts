import { z } from 'zod';
import { legacyDate, legacyDateTime } from '../field-shapes.js';
import { ACCOUNT_MAX, legacyId, legacyText, TEXT_MAX } from '../limits.js';
import { extendedQuery } from '../operation.js';

/**
 * The legacy contract of the User resource (seed 2 and 4.1): what callers send and get. How
 * each field maps to the successor lives in the mapping tables, not here.
 */

const ids = (what: string) => z.array(z.string()).describe(`${what} IDs`);

/** The fields of a user list item, in the seed's order, then `_id`. */
export const USER_LIST_FIELDS = [
  'username',
  'firstname',
  'lastname',
  'status',
  'created',
  'createdBy',
  'lastlogin',
  '_id',
] as const;

/** The related-ID fields a list adds with `extended`. */
export const USER_EXTENDED_FIELDS = ['roles', 'groups', 'privileges'] as const;

/** Every field of a single user (seed table order), then `_id`. */
export const USER_FIELDS = [
  'username',
  'firstname',
  'lastname',
  'status',
  'type',
  'importId',
  'auxInfo',
  'created',
  'createdBy',
  'lastlogin',
  'deleted',
  'deletedBy',
  'roles',
  'groups',
  'admin',
  'privileges',
  '_id',
] as const;

/** The writable fields, which PUT answers with. */
export const USER_WRITABLE_FIELDS = [
  'username',
  'firstname',
  'lastname',
  'status',
  'type',
  'importId',
  'auxInfo',
] as const;

const status = z.enum(['a', 'r', 'i']).describe('Status: a, r or i');

/** A user list item (`extended` adds roles, groups, privileges). */
export const userListItemSchema = z
  .object({
    username: z.string().describe('Account'),
    firstname: z.string().nullable(),
    lastname: z.string().nullable(),
    status: status.nullable(),
    created: legacyDate.nullable(),
    createdBy: z.string().nullable().describe('Legacy ID of the creating user'),
    lastlogin: legacyDateTime.nullable(),
    _id: z.string().describe('Legacy ID'),
    roles: ids('Role').optional(),
    groups: ids('Group').optional(),
    privileges: ids('Privilege').optional(),
  })
  .describe('UserListItem');

/** A single user: every field, absent values as null. */
export const userSchema = z
  .object({
    username: z.string().describe('Account'),
    firstname: z.string().nullable(),
    lastname: z.string().nullable(),
    status: status.nullable(),
    type: z.string().nullable().describe('User type'),
    importId: z.string().nullable().describe('Import ID'),
    auxInfo: z.string().nullable().describe('Class/Information'),
    created: legacyDate.nullable(),
    createdBy: z.string().nullable(),
    lastlogin: legacyDateTime.nullable(),
    deleted: legacyDate.nullable().describe('Deleted on (soft delete)'),
    deletedBy: z.string().nullable(),
    roles: ids('Role'),
    groups: ids('Group'),
    admin: z.boolean().describe('Has the administrator role'),
    privileges: ids('Privilege'),
    _id: z.string().describe('Legacy ID'),
  })
  .describe('User');

// One schema per writable field, shared by create and update, so that both enforce the same limits.
const username = legacyText(ACCOUNT_MAX).describe('Account');
const firstname = legacyText(TEXT_MAX);
const lastname = legacyText(TEXT_MAX);
const optionalText = legacyText(TEXT_MAX, { empty: true }).nullable();
const type = optionalText.describe('User type');
const importId = optionalText.describe('Import ID');
const auxInfo = optionalText.describe('Class/Information');

/** The body of POST (create): unknown fields are a 400. */
export const userCreateSchema = z
  .strictObject({
    username,
    firstname,
    lastname,
    status: status.optional(),
    type: type.optional(),
    importId: importId.optional(),
    auxInfo: auxInfo.optional(),
  })
  .describe('UserCreate');

/** The body of PUT (update): any writable field; unknown fields are a 400. */
export const userUpdateSchema = z
  .strictObject({
    username: username.optional(),
    firstname: firstname.optional(),
    lastname: lastname.optional(),
    status: status.optional(),
    type: type.optional(),
    importId: importId.optional(),
    auxInfo: auxInfo.optional(),
  })
  .describe('UserUpdate');

/** What PUT answers: exactly the writable fields. */
export const userWritableSchema = z
  .object({
    username: z.string(),
    firstname: z.string().nullable(),
    lastname: z.string().nullable(),
    status: status.nullable(),
    type: z.string().nullable(),
    importId: z.string().nullable(),
    auxInfo: z.string().nullable(),
  })
  .describe('UserWritable');

/** The body of the link operations: a JSON array of legacy ID strings. */
export const linkBodySchema = z.array(legacyId('A legacy ID')).max(1000).describe('IDs to link or unlink');

/** The body of the password operations. */
export const passwordBodySchema = z
  .strictObject({ password: z.string().min(1, 'must not be empty').max(4096) })
  .describe('Password');

/** The answer of the password reset operations: a temporary password. */
export const passwordAnswerSchema = z.object({ password: z.string() }).describe('TemporaryPassword');

/** Path parameters of the operations on one user. */
export const userParams = z.object({ id: legacyId('Legacy user ID') });

/** Query of the list operation. */
export const userListQuery = extendedQuery('When present, roles, groups and privileges are included');

/** OpenAPI tag of the user operations. */
export const USER_TAG = 'User';
