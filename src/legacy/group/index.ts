import type { LegacyOperation } from '../operation.js';
import { groupCreateOperation } from './create.js';
import { groupDeleteOperation } from './delete.js';
import { groupGetOperation } from './get.js';
import {
  groupLinkAssignedFlagsAddOperation,
  groupLinkAssignedFlagsRemoveOperation,
} from './link-assigned-flags.js';
import {
  groupLinkAssignedPrivilegesAddOperation,
  groupLinkAssignedPrivilegesRemoveOperation,
} from './link-assigned-privileges.js';
import { groupLinkUsersAddOperation, groupLinkUsersRemoveOperation } from './link-users.js';
import { groupListOperation } from './list.js';
import { groupUpdateOperation } from './update.js';

/** The 11 Group operations of seed 4.2. */
export const GROUP_OPERATIONS: readonly LegacyOperation[] = [
  groupListOperation,
  groupCreateOperation,
  groupGetOperation,
  groupUpdateOperation,
  groupDeleteOperation,
  groupLinkUsersAddOperation,
  groupLinkUsersRemoveOperation,
  groupLinkAssignedPrivilegesAddOperation,
  groupLinkAssignedPrivilegesRemoveOperation,
  groupLinkAssignedFlagsAddOperation,
  groupLinkAssignedFlagsRemoveOperation,
];
