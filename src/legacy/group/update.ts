import { defineOperation, fieldsNotIn } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedEntity } from '../translate.js';
import {
  GROUP_FIELDS,
  GROUP_TAG,
  GROUP_WRITABLE_FIELDS,
  groupParams,
  groupUpdateSchema,
  groupWritableSchema,
} from './schema.js';

/** PUT /Core/Entity/Group/{id}: changes name and/or account; answers `{name, account}`. */
export const groupUpdateOperation = defineOperation({
  id: 'group.update',
  method: 'put',
  path: '/Core/Entity/Group/{id}',
  summary: 'Updates a group',
  description: 'Changing the account changes the legacy ID of the group when IDs are account names.',
  tag: GROUP_TAG,
  params: groupParams,
  body: {
    kind: 'json',
    schema: groupUpdateSchema,
    required: true,
    notWritable: fieldsNotIn(GROUP_FIELDS, groupUpdateSchema),
  },
  answer: { result: 'entity', fields: GROUP_WRITABLE_FIELDS },
  responses: {
    200: { description: 'The name and account of the updated group', schema: groupWritableSchema },
    ...errorResponses(400, forbidden(GROUP_TAG, 'updated'), 404),
  },
  async handler(c, { params, body }) {
    const group = await mappedEntity(c, 'group.update', { params, body, fields: GROUP_WRITABLE_FIELDS });
    return c.json(group.value, 200);
  },
});
