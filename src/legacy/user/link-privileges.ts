import type { LegacyOperation } from '../operation.js';
import { userLinkOperation } from './link.js';

/** POST /Core/Entity/User/{id}/link/privileges: adds privileges (JSON array of IDs) to a user. */
export const userLinkPrivilegesAddOperation: LegacyOperation = userLinkOperation({
  id: 'user.link.privileges.add',
  method: 'post',
  path: '/Core/Entity/User/{id}/link/privileges',
  what: 'privileges',
});

/** DELETE /Core/Entity/User/{id}/link/privileges: removes privileges (JSON array of IDs) from a user. */
export const userLinkPrivilegesRemoveOperation: LegacyOperation = userLinkOperation({
  id: 'user.link.privileges.remove',
  method: 'delete',
  path: '/Core/Entity/User/{id}/link/privileges',
  what: 'privileges',
});
