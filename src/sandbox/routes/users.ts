import { z } from 'zod';
import { newUuid } from '../../lib/uuid.js';
import { USER_STATUSES, type UserRecord, type UserStatus } from '../data.js';
import { actorId, PROTECTED, queryFlag, temporaryPassword } from './common.js';
import { linkRoutes } from './links.js';
import { itemRoute, listRoute } from './read.js';
import {
  assertNotProtected,
  collectionResponse,
  createdResponse,
  entityParam,
  itemResponse,
  jsonResponse,
  noContent,
} from './respond.js';
import { defineRoute, JSON_BODY, MERGE_PATCH, type RouteDef } from './route.js';
import { checkAccount, checkEmail, checkPassword, requiredText, Violations } from './validation.js';

const TAG = 'User';

const writable = {
  user: z.string(),
  firstname: z.string(),
  lastname: z.string(),
  auxInfo: z.string().nullable(),
  importId: z.string().nullable(),
  emailAddress: z.string().nullable(),
  locked: z.boolean(),
  // Free strings here so that a wrong value is a 422 violation, not a 400 type error.
  status: z.string(),
  type: z.string().nullable(),
};

const createSchema = z.object(writable).partial().strict();
const patchSchema = z
  .object({
    ...writable,
    user: writable.user.nullable(),
    firstname: writable.firstname.nullable(),
    lastname: writable.lastname.nullable(),
  })
  .partial()
  .strict();
const passwordSchema = z.object({ password: z.string().optional() }).strict();

function isStatus(value: string): value is UserStatus {
  return (USER_STATUSES as readonly string[]).includes(value);
}

function checkStatus(v: Violations, value: string | undefined): UserStatus | undefined {
  if (value === undefined) return undefined;
  if (isStatus(value)) return value;
  v.add(
    'status',
    `The value you selected is not a valid choice. Choose one of: ${USER_STATUSES.join(', ')}.`,
  );
  return undefined;
}

const userPasswordRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    path: '/users/{id}/password',
    summary: 'Sets the password of a user',
    tag: TAG,
    body: { schema: passwordSchema, mediaTypes: JSON_BODY, required: ['password'] },
    response: { status: 204, body: 'none' },
    async handle(ctx) {
      const user = entityParam(ctx, 'users');
      const body = await ctx.body();
      const v = new Violations();
      if (checkPassword(v, 'password', body.password)) ctx.data.setPassword(user.id, body.password);
      v.throwIfAny();
      return noContent();
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/users/{id}/password/reset',
    summary: 'Resets the password of a user to a random temporary one and returns it',
    tag: TAG,
    response: { status: 200, body: 'password' },
    handle(ctx) {
      const user = entityParam(ctx, 'users');
      const password = temporaryPassword();
      ctx.data.setPassword(user.id, password, true);
      return jsonResponse(ctx, { password });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/users/{id}/admin_password',
    summary: 'Sets the administrator password of a user (does not grant ROLE_ADMIN)',
    tag: TAG,
    body: { schema: passwordSchema, mediaTypes: JSON_BODY, required: ['password'] },
    response: { status: 204, body: 'none' },
    async handle(ctx) {
      const user = entityParam(ctx, 'users');
      const body = await ctx.body();
      const v = new Violations();
      if (checkPassword(v, 'password', body.password)) ctx.data.setAdminPassword(user.id, body.password);
      v.throwIfAny();
      return noContent();
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/users/{id}/admin_password/reset',
    summary: 'Resets the administrator password of a user to a random one and returns it',
    tag: TAG,
    response: { status: 200, body: 'password' },
    handle(ctx) {
      const user = entityParam(ctx, 'users');
      const password = temporaryPassword();
      ctx.data.setAdminPassword(user.id, password);
      return jsonResponse(ctx, { password });
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/users/{id}/admin_password',
    summary: 'Revokes the administrator password of a user (keeps ROLE_ADMIN)',
    tag: TAG,
    response: { status: 204, body: 'none' },
    handle(ctx) {
      const user = entityParam(ctx, 'users');
      ctx.data.setAdminPassword(user.id, null);
      return noContent();
    },
  }),
];

/** Users: collection, item, create, merge-patch, soft delete/restore/purge, passwords, relation sub-resources. */
export const userRoutes: RouteDef[] = [
  listRoute('users', TAG, 'Lists users'),
  defineRoute({
    method: 'POST',
    path: '/users',
    summary: 'Creates a user',
    tag: TAG,
    body: { schema: createSchema, mediaTypes: JSON_BODY, required: ['user', 'firstname', 'lastname'] },
    attributesOf: 'users',
    response: { status: 201, body: 'item', kind: 'users' },
    async handle(ctx) {
      const body = await ctx.body();
      const v = new Violations();
      const account = requiredText(v, 'user', body.user);
      const firstname = requiredText(v, 'firstname', body.firstname);
      const lastname = requiredText(v, 'lastname', body.lastname);
      if (account !== undefined) {
        checkAccount(v, 'user', account);
        if (ctx.data.accountTaken(account)) v.add('user', 'This account name is already in use.');
      }
      const status = checkStatus(v, body.status);
      checkEmail(v, 'emailAddress', body.emailAddress);
      if (account === undefined || firstname === undefined || lastname === undefined || v.list.length > 0) {
        return v.fail();
      }
      const record: UserRecord = {
        id: newUuid(),
        created: ctx.settings.clock.now(),
        createdBy: actorId(ctx.data),
        user: account,
        firstname,
        lastname,
        auxInfo: body.auxInfo ?? null,
        importId: body.importId ?? null,
        emailAddress: body.emailAddress ?? null,
        locked: body.locked ?? false,
        status: status ?? 'active',
        type: body.type ?? null,
        lastLogin: null,
        deleted: null,
        deletedBy: null,
      };
      ctx.data.users.set(record.id, record);
      return createdResponse(ctx, 'users', record);
    },
  }),
  itemRoute('users', TAG, 'Reads a user (soft-deleted users too, until purged)'),
  defineRoute({
    method: 'PATCH',
    path: '/users/{id}',
    summary: 'Updates a user (JSON merge patch)',
    tag: TAG,
    body: { schema: patchSchema, mediaTypes: MERGE_PATCH },
    attributesOf: 'users',
    response: { status: 200, body: 'item', kind: 'users' },
    async handle(ctx) {
      const user = entityParam(ctx, 'users');
      assertNotProtected(user.user === PROTECTED.user, 'User', user.user, 'updated');
      const body = await ctx.body();
      const v = new Violations();
      const has = (key: keyof typeof body) => Object.hasOwn(body, key);
      const account = has('user') ? requiredText(v, 'user', body.user) : undefined;
      if (account !== undefined) {
        checkAccount(v, 'user', account);
        if (ctx.data.accountTaken(account, user.id)) v.add('user', 'This account name is already in use.');
      }
      const firstname = has('firstname') ? requiredText(v, 'firstname', body.firstname) : undefined;
      const lastname = has('lastname') ? requiredText(v, 'lastname', body.lastname) : undefined;
      const status = checkStatus(v, body.status);
      checkEmail(v, 'emailAddress', body.emailAddress);
      v.throwIfAny();
      if (account !== undefined) user.user = account;
      if (firstname !== undefined) user.firstname = firstname;
      if (lastname !== undefined) user.lastname = lastname;
      if (status !== undefined) user.status = status;
      if (body.auxInfo !== undefined) user.auxInfo = body.auxInfo;
      if (body.importId !== undefined) user.importId = body.importId;
      if (body.emailAddress !== undefined) user.emailAddress = body.emailAddress;
      if (body.locked !== undefined) user.locked = body.locked;
      if (body.type !== undefined) user.type = body.type;
      return itemResponse(ctx, 'users', user);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/users/{id}',
    summary: 'Soft-deletes a user (sets deleted, deletedBy); with purge=true removes it for good',
    tag: TAG,
    query: [{ name: 'purge', description: 'true: delete for good instead of soft delete', type: 'boolean' }],
    response: { status: 204, body: 'none' },
    handle(ctx) {
      const user = entityParam(ctx, 'users');
      assertNotProtected(user.user === PROTECTED.user, 'User', user.user, 'deleted');
      if (queryFlag(ctx.query, 'purge')) {
        ctx.data.purge('users', user.id);
      } else if (user.deleted === null) {
        user.deleted = ctx.settings.clock.now();
        user.deletedBy = actorId(ctx.data);
      }
      return noContent();
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/users/{id}/restore',
    summary: 'Restores a soft-deleted user (204 also when it was not deleted)',
    tag: TAG,
    response: { status: 204, body: 'none' },
    handle(ctx) {
      const user = entityParam(ctx, 'users');
      user.deleted = null;
      user.deletedBy = null;
      return noContent();
    },
  }),
  ...userPasswordRoutes,
  defineRoute({
    method: 'GET',
    path: '/users/{id}/groups',
    summary: 'Lists the groups of a user',
    tag: TAG,
    collectionOf: 'groups',
    attributesOf: 'groups',
    response: { status: 200, body: 'collection', kind: 'groups' },
    handle: (ctx) => collectionResponse(ctx, 'groups', ctx.data.groupsOf(entityParam(ctx, 'users').id)),
  }),
  ...linkRoutes({
    owner: 'users',
    segment: 'groups',
    target: 'groups',
    bodyKey: 'addedGroups',
    idParam: 'groupId',
    tag: TAG,
    relation: (data) => data.memberships,
  }),
  ...linkRoutes({
    owner: 'users',
    segment: 'roles',
    target: 'roles',
    bodyKey: 'addedRoles',
    idParam: 'roleId',
    tag: TAG,
    relation: (data) => data.userRoles,
  }),
  ...linkRoutes({
    owner: 'users',
    segment: 'privileges',
    target: 'privileges',
    bodyKey: 'addedPrivileges',
    idParam: 'privilegeId',
    tag: TAG,
    relation: (data) => data.userPrivileges,
  }),
];
