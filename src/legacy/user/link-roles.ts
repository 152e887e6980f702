import type { LegacyOperation } from '../operation.js';
import { userLinkOperation } from './link.js';

/** POST /Core/Entity/User/{id}/link/roles: adds roles (JSON array of IDs) to a user. */
export const userLinkRolesAddOperation: LegacyOperation = userLinkOperation({
  id: 'user.link.roles.add',
  method: 'post',
  path: '/Core/Entity/User/{id}/link/roles',
  what: 'roles',
});

/** DELETE /Core/Entity/User/{id}/link/roles: removes roles (JSON array of IDs) from a user. */
export const userLinkRolesRemoveOperation: LegacyOperation = userLinkOperation({
  id: 'user.link.roles.remove',
  method: 'delete',
  path: '/Core/Entity/User/{id}/link/roles',
  what: 'roles',
});
