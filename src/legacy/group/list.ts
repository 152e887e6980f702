import { z } from 'zod';
import { defineOperation, hasExtended } from '../operation.js';
import { errorResponses } from '../responses.js';
import { streamedList } from '../stream.js';
import {
  GROUP_EXTENDED_FIELDS,
  GROUP_LIST_FIELDS,
  GROUP_TAG,
  groupListItemSchema,
  groupListQuery,
} from './schema.js';

/** The fields of `?extended=1`: one constant list, so the mapping engine works its attributes out once. */
const EXTENDED_FIELDS: readonly string[] = [...GROUP_LIST_FIELDS, ...GROUP_EXTENDED_FIELDS];

/** GET /Core/Entity/Group: every group as a list item; `extended` adds users, privileges, flags. */
export const groupListOperation = defineOperation({
  id: 'group.list',
  method: 'get',
  path: '/Core/Entity/Group',
  summary: 'Lists groups',
  description:
    'One successor collection read per page, however many groups: related IDs come embedded through the attribute selection, never one call per group. Deleted groups are left out.',
  tag: GROUP_TAG,
  query: groupListQuery,
  answer: { result: 'collection', fields: EXTENDED_FIELDS },
  responses: {
    200: { description: 'The groups', schema: z.array(groupListItemSchema) },
    ...errorResponses(),
  },
  async handler(c) {
    const fields = hasExtended(c) ? EXTENDED_FIELDS : GROUP_LIST_FIELDS;
    return streamedList(c, 'group.list', fields);
  },
});
