import { linkOperation } from '../link.js';
import type { LegacyOperation } from '../operation.js';
import { GROUP_FIELDS, GROUP_TAG, groupParams, groupSchema } from './schema.js';

const common = {
  what: 'group flags',
  tag: GROUP_TAG,
  params: groupParams,
  schema: groupSchema,
  fields: GROUP_FIELDS,
} as const;

/** POST /Core/Entity/Group/{id}/link/assignedFlags: sets group flags (JSON array of flag IDs) on a group. */
export const groupLinkAssignedFlagsAddOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'group.link.assignedFlags.add',
  method: 'post',
  path: '/Core/Entity/Group/{id}/link/assignedFlags',
});

/** DELETE /Core/Entity/Group/{id}/link/assignedFlags: clears group flags (JSON array of flag IDs) on a group. */
export const groupLinkAssignedFlagsRemoveOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'group.link.assignedFlags.remove',
  method: 'delete',
  path: '/Core/Entity/Group/{id}/link/assignedFlags',
});
