import { z } from 'zod';
import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedList } from '../translate.js';
import {
  PRIVILEGE_LIST_FIELDS,
  PRIVILEGE_TAG,
  privilegeListItemSchema,
  privilegeListQuery,
} from './schema.js';

/** GET /Core/Entity/Privilege: every privilege with its groups and roles (with or without `extended`). */
export const privilegeListOperation = defineOperation({
  id: 'privilege.list',
  method: 'get',
  path: '/Core/Entity/Privilege',
  summary: 'Lists privileges',
  description:
    'Groups and roles are always included. One successor collection read per page, related IDs embedded: never one call per privilege.',
  tag: PRIVILEGE_TAG,
  query: privilegeListQuery,
  answer: { result: 'collection', fields: PRIVILEGE_LIST_FIELDS },
  responses: {
    200: { description: 'The privileges', schema: z.array(privilegeListItemSchema) },
    ...errorResponses(),
  },
  async handler(c) {
    return c.json(await mappedList(c, 'privilege.list', { fields: PRIVILEGE_LIST_FIELDS }), 200);
  },
});
