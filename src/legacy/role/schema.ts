import { z } from 'zod';
import { legacyId, legacyText, ROLE_NAME_MAX, TEXT_MAX } from '../limits.js';
import { extendedQuery } from '../operation.js';
import { linkBodySchema } from '../user/schema.js';

/**
 * The legacy contract of the Role resource (seed 2 and 4.3): what callers send and get. How each
 * field maps to the successor, and how a new role's technical key is derived from its name, lives
 * in the mapping tables.
 */

const ids = (what: string) => z.array(z.string()).describe(`${what} IDs`);

/** The fields of a role list item, in the seed's order, then `_id`. */
export const ROLE_LIST_FIELDS = ['name', 'module', '_id'] as const;

/** The related-ID fields a list adds with `extended`. */
export const ROLE_EXTENDED_FIELDS = ['privileges'] as const;

/** Every field of a single role (seed table order), then `_id`. */
export const ROLE_FIELDS = ['name', 'module', 'privileges', '_id'] as const;

/** A role list item (`extended` adds privileges). */
export const roleListItemSchema = z
  .object({
    name: z.string().nullable(),
    module: z.string().nullable(),
    _id: z.string().describe('Legacy ID (the technical key, e.g. ROLE_ADMIN, by default)'),
    privileges: ids('Privilege').optional(),
  })
  .describe('RoleListItem');

/** A single role: every field, absent values as null. */
export const roleSchema = z
  .object({
    name: z.string().nullable().describe('Name'),
    module: z.string().nullable().describe('Module'),
    privileges: ids('Privilege'),
    _id: z.string().describe('Legacy ID'),
  })
  .describe('Role');

/**
 * The body of POST (create). The seed does not show it; the proxy takes `name`, `module` and
 * optionally `privileges` (privilege IDs, all checked before anything is written). Unknown
 * fields are a 400.
 */
export const roleCreateSchema = z
  .strictObject({
    name: legacyText(ROLE_NAME_MAX).describe('Name; the technical key (the legacy ID) is derived from it'),
    module: legacyText(TEXT_MAX).describe('Module, e.g. Core'),
    privileges: linkBodySchema.optional().describe('Privilege IDs to grant to the new role'),
  })
  .describe('RoleCreate');

/** Path parameters of the operations on one role. */
export const roleParams = z.object({ id: legacyId('Legacy role ID') });

/** Query of the list operation. */
export const roleListQuery = extendedQuery('When present, privileges are included');

/** OpenAPI tag of the role operations. */
export const ROLE_TAG = 'Role';
