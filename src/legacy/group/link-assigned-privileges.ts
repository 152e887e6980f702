import { linkOperation } from '../link.js';
import type { LegacyOperation } from '../operation.js';
import { GROUP_FIELDS, GROUP_TAG, groupParams, groupSchema } from './schema.js';

const common = {
  what: 'privileges',
  tag: GROUP_TAG,
  params: groupParams,
  schema: groupSchema,
  fields: GROUP_FIELDS,
} as const;

/** POST /Core/Entity/Group/{id}/link/assignedPrivileges: grants privileges (JSON array of IDs) to a group. */
export const groupLinkAssignedPrivilegesAddOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'group.link.assignedPrivileges.add',
  method: 'post',
  path: '/Core/Entity/Group/{id}/link/assignedPrivileges',
});

/** DELETE /Core/Entity/Group/{id}/link/assignedPrivileges: takes privileges (JSON array of IDs) from a group. */
export const groupLinkAssignedPrivilegesRemoveOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'group.link.assignedPrivileges.remove',
  method: 'delete',
  path: '/Core/Entity/Group/{id}/link/assignedPrivileges',
});
