import { linkOperation } from '../link.js';
import type { LegacyOperation } from '../operation.js';
import { PRIVILEGE_FIELDS, PRIVILEGE_TAG, privilegeParams, privilegeSchema } from './schema.js';

const common = {
  what: 'roles',
  tag: PRIVILEGE_TAG,
  params: privilegeParams,
  schema: privilegeSchema,
  fields: PRIVILEGE_FIELDS,
} as const;

/** POST /Core/Entity/Privilege/{id}/link/roles: grants a privilege to roles (JSON array of role IDs). */
export const privilegeLinkRolesAddOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'privilege.link.roles.add',
  method: 'post',
  path: '/Core/Entity/Privilege/{id}/link/roles',
});

/** DELETE /Core/Entity/Privilege/{id}/link/roles: takes a privilege from roles (JSON array of role IDs). */
export const privilegeLinkRolesRemoveOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'privilege.link.roles.remove',
  method: 'delete',
  path: '/Core/Entity/Privilege/{id}/link/roles',
});
