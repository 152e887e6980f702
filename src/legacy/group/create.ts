import { defineOperation, fieldsNotIn } from '../operation.js';
import { errorResponses } from '../responses.js';
import { locationOf, mappedEntity } from '../translate.js';
import { GROUP_CREATE_FIELDS, GROUP_FIELDS, GROUP_TAG, groupCreateSchema, groupSchema } from './schema.js';

/**
 * POST /Core/Entity/Group: creates a group from its name (the account is derived); 201 with the
 * group and its Location. As the seed says, the new group is answered with `account` set, the
 * lists empty and every other field null, `name` included (a legacy quirk kept on purpose: the
 * seed and SPEC 3 are explicit); GET shows the stored values.
 */
export const groupCreateOperation = defineOperation({
  id: 'group.create',
  method: 'post',
  path: '/Core/Entity/Group',
  summary: 'Creates a group',
  description:
    'The account is derived from the name by the successor. The answer has account set, users, privileges and flags empty, and the other fields null, as the legacy API answered.',
  tag: GROUP_TAG,
  body: {
    kind: 'json',
    schema: groupCreateSchema,
    required: true,
    notWritable: fieldsNotIn(GROUP_FIELDS, groupCreateSchema),
  },
  answer: { result: 'entity', fields: GROUP_CREATE_FIELDS },
  responses: {
    201: { description: 'The created group (Location names it)', schema: groupSchema },
    ...errorResponses(400),
  },
  async handler(c, { body }) {
    const created = await mappedEntity(c, 'group.create', { body, fields: GROUP_CREATE_FIELDS });
    const value = Object.fromEntries(GROUP_FIELDS.map((field) => [field, created.value[field] ?? null]));
    const headers = created.id === null ? undefined : { Location: locationOf(c, created.id) };
    return c.json(value, 201, headers);
  },
});
