import { z } from 'zod';
import { defineOperation, hasExtended } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedList } from '../translate.js';
import {
  ROLE_EXTENDED_FIELDS,
  ROLE_LIST_FIELDS,
  ROLE_TAG,
  roleListItemSchema,
  roleListQuery,
} from './schema.js';

/** The fields of the `extended` list, one constant (the mapping works out what a field list needs once per list). */
const EXTENDED_FIELDS: readonly string[] = [...ROLE_LIST_FIELDS, ...ROLE_EXTENDED_FIELDS];

/** GET /Core/Entity/Role: every role as a list item; `extended` adds privileges. */
export const roleListOperation = defineOperation({
  id: 'role.list',
  method: 'get',
  path: '/Core/Entity/Role',
  summary: 'Lists roles',
  description: 'One successor collection read per page, privilege IDs embedded: never one call per role.',
  tag: ROLE_TAG,
  query: roleListQuery,
  answer: { result: 'collection', fields: EXTENDED_FIELDS },
  responses: {
    200: { description: 'The roles', schema: z.array(roleListItemSchema) },
    ...errorResponses(),
  },
  async handler(c) {
    const fields = hasExtended(c) ? EXTENDED_FIELDS : ROLE_LIST_FIELDS;
    return c.json(await mappedList(c, 'role.list', { fields }), 200);
  },
});
