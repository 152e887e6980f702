import { linkOperation } from '../link.js';
import type { LegacyOperation } from '../operation.js';
import { PRIVILEGE_FIELDS, PRIVILEGE_TAG, privilegeParams, privilegeSchema } from './schema.js';

const common = {
  what: 'groups',
  tag: PRIVILEGE_TAG,
  params: privilegeParams,
  schema: privilegeSchema,
  fields: PRIVILEGE_FIELDS,
} as const;

/** POST /Core/Entity/Privilege/{id}/link/groups: grants a privilege to groups (JSON array of group IDs). */
export const privilegeLinkGroupsAddOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'privilege.link.groups.add',
  method: 'post',
  path: '/Core/Entity/Privilege/{id}/link/groups',
});

/** DELETE /Core/Entity/Privilege/{id}/link/groups: takes a privilege from groups (JSON array of group IDs). */
export const privilegeLinkGroupsRemoveOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'privilege.link.groups.remove',
  method: 'delete',
  path: '/Core/Entity/Privilege/{id}/link/groups',
});
