import type { LegacyOperation } from '../operation.js';
import { roleCreateOperation } from './create.js';
import { roleDeleteOperation } from './delete.js';
import { roleGetOperation } from './get.js';
import { roleLinkPrivilegesAddOperation, roleLinkPrivilegesRemoveOperation } from './link-privileges.js';
import { roleListOperation } from './list.js';

/** The 6 Role operations of seed 4.3 (no update: PUT answers 405). */
export const ROLE_OPERATIONS: readonly LegacyOperation[] = [
  roleListOperation,
  roleCreateOperation,
  roleGetOperation,
  roleDeleteOperation,
  roleLinkPrivilegesAddOperation,
  roleLinkPrivilegesRemoveOperation,
];
