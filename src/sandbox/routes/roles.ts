import { z } from 'zod';
import { newUuid } from '../../lib/uuid.js';
import type { RoleRecord } from '../data.js';
import { PROTECTED } from './common.js';
import { linkRoutes } from './links.js';
import { itemRoute, listRoute } from './read.js';
import {
  assertNotProtected,
  collectionResponse,
  createdResponse,
  entityParam,
  noContent,
} from './respond.js';
import { defineRoute, JSON_BODY, type RouteDef } from './route.js';
import { checkRoleName, requiredText, Violations } from './validation.js';

const TAG = 'Role';

const createSchema = z
  .object({ role: z.string(), name: z.string(), module: z.string().nullable() })
  .partial()
  .strict();

/** Roles: collection, item, create, delete, users of a role, role privileges. */
export const roleRoutes: RouteDef[] = [
  listRoute('roles', TAG, 'Lists roles'),
  defineRoute({
    method: 'POST',
    path: '/roles',
    summary: 'Creates a role',
    tag: TAG,
    body: { schema: createSchema, mediaTypes: JSON_BODY, required: ['role', 'name'] },
    attributesOf: 'roles',
    response: { status: 201, body: 'item', kind: 'roles' },
    async handle(ctx) {
      const body = await ctx.body();
      const v = new Violations();
      const role = requiredText(v, 'role', body.role);
      if (role !== undefined) {
        if (checkRoleName(v, 'role', role) && ctx.data.roleByName(role))
          v.add('role', 'A role with this name already exists.');
      }
      const name = requiredText(v, 'name', body.name);
      if (role === undefined || name === undefined || v.list.length > 0) return v.fail();
      const record: RoleRecord = {
        id: newUuid(),
        created: ctx.settings.clock.now(),
        role,
        name,
        module: body.module ?? null,
      };
      ctx.data.roles.set(record.id, record);
      return createdResponse(ctx, 'roles', record);
    },
  }),
  itemRoute('roles', TAG, 'Reads a role'),
  defineRoute({
    method: 'DELETE',
    path: '/roles/{id}',
    summary: 'Deletes a role (for good; ROLE_ADMIN is protected)',
    tag: TAG,
    response: { status: 204, body: 'none' },
    handle(ctx) {
      const role = entityParam(ctx, 'roles');
      assertNotProtected(role.role === PROTECTED.role, 'Role', role.role, 'deleted');
      ctx.data.purge('roles', role.id);
      return noContent();
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/roles/{id}/users',
    summary: 'Lists the users holding a role',
    tag: TAG,
    collectionOf: 'users',
    attributesOf: 'users',
    response: { status: 200, body: 'collection', kind: 'users' },
    handle: (ctx) => collectionResponse(ctx, 'users', ctx.data.usersWithRole(entityParam(ctx, 'roles').id)),
  }),
  ...linkRoutes({
    owner: 'roles',
    segment: 'privileges',
    target: 'privileges',
    bodyKey: 'addedPrivileges',
    idParam: 'privilegeId',
    tag: TAG,
    relation: (data) => data.rolePrivileges,
  }),
];
