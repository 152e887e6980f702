import { defineOperation } from '../operation.js';
import { errorResponses, forbidden } from '../responses.js';
import { mappedNone } from '../translate.js';
import { GROUP_TAG, groupParams } from './schema.js';

/** DELETE /Core/Entity/Group/{id}: deletes a group (soft delete in the successor; 403 for protected groups). */
export const groupDeleteOperation = defineOperation({
  id: 'group.delete',
  method: 'delete',
  path: '/Core/Entity/Group/{id}',
  summary: 'Deletes a group',
  description:
    'The successor soft-deletes the group: it leaves the list at once, GET still shows it with deleted/deletedBy until it is purged.',
  tag: GROUP_TAG,
  params: groupParams,
  answer: { result: 'none' },
  responses: {
    204: { description: 'Deleted' },
    ...errorResponses(forbidden(GROUP_TAG, 'deleted'), 404),
  },
  async handler(c, { params }) {
    await mappedNone(c, 'group.delete', { params });
    return c.body(null, 204);
  },
});
