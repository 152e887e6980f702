import type { LegacyOperation } from '../operation.js';
import { userLinkOperation } from './link.js';

/** POST /Core/Entity/User/{id}/link/groups: adds groups (JSON array of IDs) to a user. */
export const userLinkGroupsAddOperation: LegacyOperation = userLinkOperation({
  id: 'user.link.groups.add',
  method: 'post',
  path: '/Core/Entity/User/{id}/link/groups',
  what: 'groups',
});

/** DELETE /Core/Entity/User/{id}/link/groups: removes groups (JSON array of IDs) from a user. */
export const userLinkGroupsRemoveOperation: LegacyOperation = userLinkOperation({
  id: 'user.link.groups.remove',
  method: 'delete',
  path: '/Core/Entity/User/{id}/link/groups',
  what: 'groups',
});
