import { defineOperation, fieldsNotIn } from '../operation.js';
import { errorResponses } from '../responses.js';
import { locationOf, mappedEntity } from '../translate.js';
import { ROLE_FIELDS, ROLE_TAG, roleCreateSchema, roleSchema } from './schema.js';

/**
 * POST /Core/Entity/Role: creates a role from `name`, `module` and optional `privileges`; 201 with
 * the role and its Location. The technical key (its legacy ID) is derived from the name by the
 * rule in the mapping tables (default: `Fachschaft Mathe` → `ROLE_FACHSCHAFT_MATHE`).
 */
export const roleCreateOperation = defineOperation({
  id: 'role.create',
  method: 'post',
  path: '/Core/Entity/Role',
  summary: 'Creates a role',
  description:
    'Body: name, module and optionally privileges (privilege IDs, all checked before anything is written). The legacy ID is the technical key derived from the name (by default ROLE_ + the name in upper case ASCII, other characters as _). If granting the privileges fails, the role is removed again and the error says so.',
  tag: ROLE_TAG,
  body: {
    kind: 'json',
    schema: roleCreateSchema,
    required: true,
    notWritable: fieldsNotIn(ROLE_FIELDS, roleCreateSchema),
  },
  answer: { result: 'entity', fields: ROLE_FIELDS },
  responses: {
    201: { description: 'The created role (Location names it)', schema: roleSchema },
    ...errorResponses(400),
  },
  async handler(c, { body }) {
    const created = await mappedEntity(c, 'role.create', { body, fields: ROLE_FIELDS });
    const headers = created.id === null ? undefined : { Location: locationOf(c, created.id) };
    return c.json(created.value, 201, headers);
  },
});
