import { z } from 'zod';
import { legacyId } from '../limits.js';
import { extendedQuery } from '../operation.js';

/**
 * The legacy contract of the Privilege resource (seed 2 and 4.4): read-only, linkable to roles
 * and groups. How each field maps to the successor lives in the mapping tables.
 */

const ids = (what: string) => z.array(z.string()).describe(`${what} IDs`);

/** The fields of a privilege list item, in the seed's order (groups and roles always), then `_id`. */
export const PRIVILEGE_LIST_FIELDS = ['title', 'module', 'groups', 'roles', '_id'] as const;

/** Every field of a single privilege (seed table order), then `_id`. */
export const PRIVILEGE_FIELDS = ['module', 'description', 'inverted', 'groups', 'roles', '_id'] as const;

/** A privilege list item: groups and roles are always included. */
export const privilegeListItemSchema = z
  .object({
    title: z.string().nullable().describe('Title'),
    module: z.string().nullable(),
    groups: ids('Group'),
    roles: ids('Role'),
    _id: z.string().describe('Legacy ID (the technical key by default)'),
  })
  .describe('PrivilegeListItem');

/** A single privilege: every field of the seed's table, absent values as null. */
export const privilegeSchema = z
  .object({
    module: z.string().nullable().describe('Module'),
    description: z.string().nullable().describe('Description'),
    inverted: z.boolean().describe('Applies to: true when holding it takes a right away'),
    groups: ids('Group'),
    roles: ids('Role'),
    _id: z.string().describe('Legacy ID'),
  })
  .describe('Privilege');

/** Path parameters of the operations on one privilege. */
export const privilegeParams = z.object({ id: legacyId('Legacy privilege ID') });

/** Query of the list operation. */
export const privilegeListQuery = extendedQuery(
  'Accepted like on every list: groups and roles are always included',
);

/** OpenAPI tag of the privilege operations. */
export const PRIVILEGE_TAG = 'Privilege';
