import { z } from 'zod';
import { defineOperation, hasExtended } from '../operation.js';
import { errorResponses } from '../responses.js';
import { streamedList } from '../stream.js';
import {
  USER_EXTENDED_FIELDS,
  USER_LIST_FIELDS,
  USER_TAG,
  userListItemSchema,
  userListQuery,
} from './schema.js';

/** The fields of `?extended=1`: one constant list, so the mapping engine works its attributes out once. */
const EXTENDED_FIELDS: readonly string[] = [...USER_LIST_FIELDS, ...USER_EXTENDED_FIELDS];

/** GET /Core/Entity/User: every user as a list item; `extended` adds roles, groups, privileges. */
export const userListOperation = defineOperation({
  id: 'user.list',
  method: 'get',
  path: '/Core/Entity/User',
  summary: 'Lists users',
  description:
    'One successor collection read, however many users: related IDs come embedded through the attribute selection, never one call per user.',
  tag: USER_TAG,
  query: userListQuery,
  answer: { result: 'collection', fields: EXTENDED_FIELDS },
  responses: {
    200: { description: 'The users', schema: z.array(userListItemSchema) },
    ...errorResponses(),
  },
  async handler(c) {
    const fields = hasExtended(c) ? EXTENDED_FIELDS : USER_LIST_FIELDS;
    return streamedList(c, 'user.list', fields);
  },
});
