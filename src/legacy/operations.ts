import type { RequiredOperation } from '../mapping/engine.js';
import { GROUP_OPERATIONS } from './group/index.js';
import type { LegacyOperation } from './operation.js';
import { PRIVILEGE_OPERATIONS } from './privilege/index.js';
import { ROLE_OPERATIONS } from './role/index.js';
import { SSO_OPERATIONS } from './sso/index.js';
import { USER_OPERATIONS } from './user/index.js';

/** Every legacy v1.6.0 operation the proxy serves; each resource folder contributes its own. */
export const LEGACY_OPERATIONS: readonly LegacyOperation[] = [
  ...USER_OPERATIONS,
  ...GROUP_OPERATIONS,
  ...ROLE_OPERATIONS,
  ...PRIVILEGE_OPERATIONS,
  ...SSO_OPERATIONS,
];

/** What every mapping profile must map: each operation's id, named by its method and path. */
export const REQUIRED_OPERATIONS: readonly RequiredOperation[] = LEGACY_OPERATIONS.map((operation) => ({
  id: operation.id,
  label: `${operation.method.toUpperCase()} ${operation.path}`,
}));
