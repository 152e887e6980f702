import type { LegacyOperation } from '../operation.js';
import { userAdminPasswordSetOperation } from './admin-password.js';
import { userAdminPasswordResetOperation } from './admin-password-reset.js';
import { userAdminPasswordRevokeOperation } from './admin-password-revoke.js';
import { userCreateOperation } from './create.js';
import { userDeleteOperation } from './delete.js';
import { userGetOperation } from './get.js';
import { userLinkGroupsAddOperation, userLinkGroupsRemoveOperation } from './link-groups.js';
import { userLinkPrivilegesAddOperation, userLinkPrivilegesRemoveOperation } from './link-privileges.js';
import { userLinkRolesAddOperation, userLinkRolesRemoveOperation } from './link-roles.js';
import { userListOperation } from './list.js';
import { userPasswordSetOperation } from './password.js';
import { userPasswordResetOperation } from './password-reset.js';
import { userRestoreOperation } from './restore.js';
import { userUpdateOperation } from './update.js';

/** The 17 User operations of seed 4.1. */
export const USER_OPERATIONS: readonly LegacyOperation[] = [
  userListOperation,
  userCreateOperation,
  userGetOperation,
  userUpdateOperation,
  userDeleteOperation,
  userLinkGroupsAddOperation,
  userLinkGroupsRemoveOperation,
  userLinkRolesAddOperation,
  userLinkRolesRemoveOperation,
  userLinkPrivilegesAddOperation,
  userLinkPrivilegesRemoveOperation,
  userRestoreOperation,
  userPasswordSetOperation,
  userPasswordResetOperation,
  userAdminPasswordSetOperation,
  userAdminPasswordResetOperation,
  userAdminPasswordRevokeOperation,
];
