import { z } from 'zod';
import { legacyDate } from '../field-shapes.js';
import { ACCOUNT_MAX, legacyId, legacyText } from '../limits.js';
import { extendedQuery } from '../operation.js';

/**
 * The legacy contract of the Group resource (seed 2 and 4.2): what callers send and get. How
 * each field maps to the successor lives in the mapping tables, not here.
 */

const ids = (what: string) => z.array(z.string()).describe(`${what} IDs`);

/** The fields of a group list item, in the seed's order, then `_id`. */
export const GROUP_LIST_FIELDS = ['account', 'name', 'owner', 'createdBy', 'created', '_id'] as const;

/** The related-ID fields a list adds with `extended`. */
export const GROUP_EXTENDED_FIELDS = ['users', 'privileges', 'flags'] as const;

/** Every field of a single group (seed table order), then `_id`. */
export const GROUP_FIELDS = [
  'name',
  'account',
  'home',
  'owner',
  'created',
  'createdBy',
  'deleted',
  'deletedBy',
  'flags',
  'users',
  'privileges',
  '_id',
] as const;

/**
 * The fields a created group is answered with (seed 2: `account` set, the lists empty, the
 * other fields null); `name` is kept as sent, `_id` names the new group. The rest is null.
 */
export const GROUP_CREATE_FIELDS = ['account', 'flags', 'users', 'privileges', '_id'] as const;

/** The writable fields of PUT, which it answers with. */
export const GROUP_WRITABLE_FIELDS = ['name', 'account'] as const;

/** A group list item (`extended` adds users, privileges, flags). */
export const groupListItemSchema = z
  .object({
    account: z.string().describe('Account'),
    name: z.string().nullable(),
    owner: z.string().nullable().describe('Legacy user ID of the owner'),
    createdBy: z.string().nullable().describe('Legacy user ID of the creating user'),
    created: legacyDate.nullable(),
    _id: z.string().describe('Legacy ID'),
    users: ids('Member user').optional(),
    privileges: ids('Privilege').optional(),
    flags: ids('Group flag').optional(),
  })
  .describe('GroupListItem');

/** A single group: every field, absent values as null. */
export const groupSchema = z
  .object({
    name: z.string().nullable().describe('Name'),
    account: z.string().describe('Account'),
    home: z.string().nullable().describe('Directory'),
    owner: z.string().nullable().describe('Legacy user ID of the owner'),
    created: legacyDate.nullable(),
    createdBy: z.string().nullable(),
    deleted: legacyDate.nullable().describe('Deleted on (soft delete)'),
    deletedBy: z.string().nullable(),
    flags: ids('Group flag'),
    users: ids('Member user'),
    privileges: ids('Privilege'),
    _id: z.string().describe('Legacy ID'),
  })
  .describe('Group');

// The account is derived from the name on create, so the name has the account's limit, on
// create and update alike.
const name = legacyText(ACCOUNT_MAX).describe('Name');
const account = legacyText(ACCOUNT_MAX).describe('Account');

/** The body of POST (create): only `name`; unknown fields are a 400. */
export const groupCreateSchema = z.strictObject({ name }).describe('GroupCreate');

/** The body of PUT (update): `name` and/or `account`; unknown fields are a 400. */
export const groupUpdateSchema = z
  .strictObject({ name: name.optional(), account: account.optional() })
  .describe('GroupUpdate');

/** What PUT answers: the writable fields. */
export const groupWritableSchema = z
  .object({ name: z.string().nullable(), account: z.string() })
  .describe('GroupWritable');

/** Path parameters of the operations on one group. */
export const groupParams = z.object({ id: legacyId('Legacy group ID') });

/** Query of the list operation. */
export const groupListQuery = extendedQuery('When present, users, privileges and flags are included');

/** OpenAPI tag of the group operations. */
export const GROUP_TAG = 'Group';
