import { defineOperation } from '../operation.js';
import { errorResponses } from '../responses.js';
import { mappedEntity } from '../translate.js';
import { GROUP_FIELDS, GROUP_TAG, groupParams, groupSchema } from './schema.js';

/** GET /Core/Entity/Group/{id}: one group with every field (deleted groups too, until purged). */
export const groupGetOperation = defineOperation({
  id: 'group.get',
  method: 'get',
  path: '/Core/Entity/Group/{id}',
  summary: 'Reads a group',
  tag: GROUP_TAG,
  params: groupParams,
  answer: { result: 'entity', fields: GROUP_FIELDS },
  responses: {
    200: { description: 'The group; absent values are null', schema: groupSchema },
    ...errorResponses(404),
  },
  async handler(c, { params }) {
    const group = await mappedEntity(c, 'group.get', { params, fields: GROUP_FIELDS });
    return c.json(group.value, 200);
  },
});
