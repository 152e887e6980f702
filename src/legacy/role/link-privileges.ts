import { linkOperation } from '../link.js';
import type { LegacyOperation } from '../operation.js';
import { ROLE_FIELDS, ROLE_TAG, roleParams, roleSchema } from './schema.js';

const common = {
  what: 'privileges',
  tag: ROLE_TAG,
  params: roleParams,
  schema: roleSchema,
  fields: ROLE_FIELDS,
} as const;

/** POST /Core/Entity/Role/{id}/link/privileges: grants privileges (JSON array of IDs) to a role. */
export const roleLinkPrivilegesAddOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'role.link.privileges.add',
  method: 'post',
  path: '/Core/Entity/Role/{id}/link/privileges',
});

/** DELETE /Core/Entity/Role/{id}/link/privileges: takes privileges (JSON array of IDs) from a role. */
export const roleLinkPrivilegesRemoveOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'role.link.privileges.remove',
  method: 'delete',
  path: '/Core/Entity/Role/{id}/link/privileges',
});
