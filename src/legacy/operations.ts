import { z } from 'zod';
import type { RequiredOperation } from '../mapping/engine.js';
import type { SecretBodies } from '../migration/recording.js';
import { fieldShapes, requiredFields } from './field-shapes.js';
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

/**
 * The operations whose request body is a secret whole (`body.secret`: the password operations),
 * and those whose answer carries one (`secretAnswer`: the password resets). The migration tools
 * write such a request body only as `"[redacted]"`, and such an answer with every value
 * `"[redacted]"`, whatever their shape, also when they come from a recording the proxy did not
 * write (compare's samples, replay's answers).
 */
export const SECRET_BODIES: SecretBodies = {
  requests: new Set(
    LEGACY_OPERATIONS.filter((operation) => operation.body?.secret).map((operation) => operation.id),
  ),
  answers: new Set(
    LEGACY_OPERATIONS.filter((operation) => operation.secretAnswer).map((operation) => operation.id),
  ),
};

/**
 * What every mapping profile must map: each operation's id, named by its method and path, with
 * its path parameters and body fields (what `{params.…}` and `{body.…}` of its steps may name),
 * and what its handler takes from the answer.
 */
export const REQUIRED_OPERATIONS: readonly RequiredOperation[] = LEGACY_OPERATIONS.map((operation) => {
  // A body that is no object (a link body's array of IDs) has no fields to name.
  const bodyFields =
    operation.mappingInput?.bodyFields ??
    (operation.body?.schema instanceof z.ZodObject ? Object.keys(operation.body.schema.shape) : []);
  return {
    id: operation.id,
    label: `${operation.method.toUpperCase()} ${operation.path}`,
    params:
      operation.mappingInput?.params ??
      [...operation.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((match) => match[1] ?? ''),
    bodyFields,
    requiredBodyFields: requiredFields(operation.body?.schema).filter((name) => bodyFields.includes(name)),
    answer: operation.answer,
    answerShapes: fieldShapes(
      operation.answerFields ?? (operation.responses[200] ?? operation.responses[201])?.schema,
    ),
    bodyShapes: fieldShapes(operation.body?.schema),
  };
});
