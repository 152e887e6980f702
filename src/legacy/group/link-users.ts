import { linkOperation } from '../link.js';
import type { LegacyOperation } from '../operation.js';
import { GROUP_FIELDS, GROUP_TAG, groupParams, groupSchema } from './schema.js';

const common = {
  what: 'users',
  tag: GROUP_TAG,
  params: groupParams,
  schema: groupSchema,
  fields: GROUP_FIELDS,
} as const;

/** POST /Core/Entity/Group/{id}/link/users: adds members (JSON array of user IDs) to a group. */
export const groupLinkUsersAddOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'group.link.users.add',
  method: 'post',
  path: '/Core/Entity/Group/{id}/link/users',
});

/** DELETE /Core/Entity/Group/{id}/link/users: removes members (JSON array of user IDs) from a group. */
export const groupLinkUsersRemoveOperation: LegacyOperation = linkOperation({
  ...common,
  id: 'group.link.users.remove',
  method: 'delete',
  path: '/Core/Entity/Group/{id}/link/users',
});
