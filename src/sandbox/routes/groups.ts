import { z } from 'zod';
import { newUuid } from '../../lib/uuid.js';
import type { GroupRecord, SandboxData } from '../data.js';
import { actorId, PROTECTED, queryFlag } from './common.js';
import { linkRoutes, resolveReferences } from './links.js';
import { itemRoute, listRoute } from './read.js';
import {
  assertNotProtected,
  collectionResponse,
  createdResponse,
  entityParam,
  itemResponse,
  noContent,
} from './respond.js';
import { defineRoute, JSON_BODY, MERGE_PATCH, type RouteDef } from './route.js';
import { accountFromName, checkAccount, requiredText, sameName, Violations } from './validation.js';

const TAG = 'Group';

const createSchema = z
  .object({ name: z.string(), group: z.string(), owner: z.string().nullable() })
  .partial()
  .strict();
const patchSchema = z
  .object({ name: z.string().nullable(), group: z.string().nullable(), owner: z.string().nullable() })
  .partial()
  .strict();

/** Whether another group has this name: case aside, and a decomposed umlaut the same as a composed one. */
function nameTaken(data: SandboxData, name: string, except?: string): boolean {
  const wanted = sameName(name);
  for (const group of data.groups.values())
    if (group.id !== except && sameName(group.name) === wanted) return true;
  return false;
}

/** Validates an `owner` reference (IRI, UUID or null); returns the owner id, null, or undefined when invalid. */
function resolveOwner(v: Violations, data: SandboxData, value: string | null): string | null | undefined {
  if (value === null) return null;
  const [owner] = resolveReferences(v, data, 'owner', 'users', [value]);
  if (!owner) {
    // resolveReferences reports "owner[0]"; the property is a single reference.
    const last = v.list[v.list.length - 1];
    if (last) last.propertyPath = 'owner';
    return undefined;
  }
  return owner.id;
}

/** Groups: collection, item, create, merge-patch (name, account, owner), soft delete/restore/purge, sub-resources. */
export const groupRoutes: RouteDef[] = [
  listRoute('groups', TAG, 'Lists groups'),
  defineRoute({
    method: 'POST',
    path: '/groups',
    summary: 'Creates a group; the account is derived from the name when absent',
    tag: TAG,
    body: { schema: createSchema, mediaTypes: JSON_BODY, required: ['name'] },
    attributesOf: 'groups',
    response: { status: 201, body: 'item', kind: 'groups' },
    async handle(ctx) {
      const body = await ctx.body();
      const v = new Violations();
      const name = requiredText(v, 'name', body.name);
      if (name !== undefined && nameTaken(ctx.data, name))
        v.add('name', 'A group with this name already exists.');
      const field = body.group === undefined ? 'name' : 'group';
      const account =
        body.group === undefined ? (name === undefined ? undefined : accountFromName(name)) : body.group;
      if (account !== undefined) {
        if (account === '') v.add(field, 'No account name can be derived from this name.');
        else {
          checkAccount(v, field, account, body.group === undefined);
          if (ctx.data.accountTaken(account))
            v.add(
              field,
              body.group === undefined
                ? `The account derived from this value ("${account}") is already in use.`
                : 'This account name is already in use.',
            );
        }
      }
      const owner = body.owner === undefined ? null : resolveOwner(v, ctx.data, body.owner);
      if (name === undefined || account === undefined || owner === undefined || v.list.length > 0)
        return v.fail();
      const record: GroupRecord = {
        id: newUuid(),
        created: ctx.settings.clock.now(),
        createdBy: actorId(ctx.data),
        group: account,
        name,
        owner,
        home: null,
        deleted: null,
        deletedBy: null,
      };
      ctx.data.groups.set(record.id, record);
      return createdResponse(ctx, 'groups', record);
    },
  }),
  itemRoute('groups', TAG, 'Reads a group (soft-deleted groups too, until purged)'),
  defineRoute({
    method: 'PATCH',
    path: '/groups/{id}',
    summary: 'Updates a group (JSON merge patch): name, group (account), owner (IRI or null)',
    tag: TAG,
    body: { schema: patchSchema, mediaTypes: MERGE_PATCH },
    attributesOf: 'groups',
    response: { status: 200, body: 'item', kind: 'groups' },
    async handle(ctx) {
      const group = entityParam(ctx, 'groups');
      assertNotProtected(group.group === PROTECTED.group, 'Group', group.group, 'updated');
      const body = await ctx.body();
      const v = new Violations();
      const name = Object.hasOwn(body, 'name') ? requiredText(v, 'name', body.name) : undefined;
      if (name !== undefined && nameTaken(ctx.data, name, group.id)) {
        v.add('name', 'A group with this name already exists.');
      }
      const account = Object.hasOwn(body, 'group') ? requiredText(v, 'group', body.group) : undefined;
      if (account !== undefined) {
        checkAccount(v, 'group', account);
        if (ctx.data.accountTaken(account, group.id)) v.add('group', 'This account name is already in use.');
      }
      const owner = body.owner === undefined ? undefined : resolveOwner(v, ctx.data, body.owner);
      v.throwIfAny();
      if (name !== undefined) group.name = name;
      if (account !== undefined) group.group = account;
      if (owner !== undefined) group.owner = owner;
      return itemResponse(ctx, 'groups', group);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/groups/{id}',
    summary: 'Soft-deletes a group (sets deleted, deletedBy); with purge=true removes it for good',
    tag: TAG,
    query: [{ name: 'purge', description: 'true: delete for good instead of soft delete', type: 'boolean' }],
    response: { status: 204, body: 'none' },
    handle(ctx) {
      const group = entityParam(ctx, 'groups');
      assertNotProtected(group.group === PROTECTED.group, 'Group', group.group, 'deleted');
      if (queryFlag(ctx.query, 'purge')) {
        ctx.data.purge('groups', group.id);
      } else if (group.deleted === null) {
        group.deleted = ctx.settings.clock.now();
        group.deletedBy = actorId(ctx.data);
      }
      return noContent();
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/groups/{id}/restore',
    summary: 'Restores a soft-deleted group (204 also when it was not deleted)',
    tag: TAG,
    response: { status: 204, body: 'none' },
    handle(ctx) {
      const group = entityParam(ctx, 'groups');
      group.deleted = null;
      group.deletedBy = null;
      return noContent();
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/groups/{id}/members',
    summary: 'Lists the members of a group',
    tag: TAG,
    collectionOf: 'users',
    attributesOf: 'users',
    response: { status: 200, body: 'collection', kind: 'users' },
    handle: (ctx) => collectionResponse(ctx, 'users', ctx.data.membersOf(entityParam(ctx, 'groups').id)),
  }),
  ...linkRoutes({
    owner: 'groups',
    segment: 'members',
    target: 'users',
    bodyKey: 'addedMembers',
    idParam: 'userId',
    tag: TAG,
    relation: (data) => data.memberships,
  }),
  ...linkRoutes({
    owner: 'groups',
    segment: 'privileges',
    target: 'privileges',
    bodyKey: 'addedPrivileges',
    idParam: 'privilegeId',
    tag: TAG,
    relation: (data) => data.groupPrivileges,
  }),
  ...linkRoutes({
    owner: 'groups',
    segment: 'group_flags',
    target: 'group_flags',
    bodyKey: 'addedFlags',
    idParam: 'flagId',
    tag: TAG,
    relation: (data) => data.groupFlagLinks,
  }),
];
