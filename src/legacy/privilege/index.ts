import type { LegacyOperation } from '../operation.js';
import { privilegeGetOperation } from './get.js';
import { privilegeLinkGroupsAddOperation, privilegeLinkGroupsRemoveOperation } from './link-groups.js';
import { privilegeLinkRolesAddOperation, privilegeLinkRolesRemoveOperation } from './link-roles.js';
import { privilegeListOperation } from './list.js';

/** The 6 Privilege operations of seed 4.4 (no create, update or delete: 405). */
export const PRIVILEGE_OPERATIONS: readonly LegacyOperation[] = [
  privilegeListOperation,
  privilegeGetOperation,
  privilegeLinkRolesAddOperation,
  privilegeLinkRolesRemoveOperation,
  privilegeLinkGroupsAddOperation,
  privilegeLinkGroupsRemoveOperation,
];
