import { normalizeUuid, uuidToBase58 } from '../lib/uuid.js';
import {
  type EntityRecord,
  type GroupFlagRecord,
  type GroupRecord,
  type PrivilegeRecord,
  type ResourceKind,
  type RoleRecord,
  type SandboxData,
  USER_STATUSES,
  type UserRecord,
} from './data.js';

/** The API's base path on the sandbox's server, as on the real one. */
export const API_BASE = '/iserv/idm/api/v1';

/** The IRI of an entity: `/iserv/idm/api/v1/<collection>/<base58 uuid>`. */
export function iri(kind: ResourceKind, id: string): string {
  return `${API_BASE}/${kind}/${uuidToBase58(id)}`;
}

const IRI_PATTERN = /^(?:https?:\/\/[^/]+)?\/iserv\/idm\/api\/v1\/([a-z_]+)\/([^/?#]+)$/;

/**
 * The dashed UUID a reference points at, if it names an entity of `kind`: an IRI (relative or
 * absolute, id dashed or base58) or a bare UUID. Says nothing about whether the entity exists.
 */
export function parseReference(value: string, kind: ResourceKind): string | undefined {
  const match = IRI_PATTERN.exec(value);
  if (match) return match[1] === kind && match[2] ? normalizeUuid(match[2]) : undefined;
  return normalizeUuid(value);
}

/** Formats a time (ms) as the API does: ISO 8601 with a numeric offset, `2026-01-01T08:00:00+00:00`. */
export function formatDateTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

export type ScalarType = 'string' | 'boolean' | 'date-time';
export type ScalarValue = string | boolean | null;

/** A plain value field. Getters use method syntax on purpose: see `ResourceDef`. */
export interface ScalarField<R> {
  kind: 'scalar';
  type: ScalarType;
  nullable: boolean;
  description: string;
  enum?: readonly string[];
  /** `exists`: the `deleted=true|false` filter; otherwise strings/booleans get exact (+ icontains) filters. */
  filter?: 'exists' | 'none';
  get(record: R): ScalarValue;
}

/** A reference to one entity (IRI, or an embedded object with `_attributes=field.sub`). */
export interface RefField<R> {
  kind: 'ref';
  target: ResourceKind;
  description: string;
  get(record: R, data: SandboxData): string | null;
}

/** A to-many relation (IRI array, or embedded objects with `_attributes=field.sub`). */
export interface RefsField<R> {
  kind: 'refs';
  target: ResourceKind;
  description: string;
  /** Linked ids, in no particular order (rendering sorts them). */
  get(record: R, data: SandboxData): string[];
}

export type FieldDef<R> = ScalarField<R> | RefField<R> | RefsField<R>;

/**
 * One resource: the single source of truth for rendering, `_attributes`, filters and the
 * OpenAPI schema. Field getters are declared as methods, which TypeScript checks bivariantly,
 * so a `ResourceDef<UserRecord>` can be handled as a `ResourceDef<EntityRecord>` by generic code
 * (it is only ever given records of its own kind).
 */
export interface ResourceDef<R extends EntityRecord> {
  kind: ResourceKind;
  /** JSON-LD `@type` and OpenAPI schema name. */
  type: string;
  /** For messages: "User", "Group", … */
  label: string;
  fields: Record<string, FieldDef<R>>;
}

export type AnyResource = ResourceDef<EntityRecord>;

const str = <R>(description: string, get: (r: R) => string): ScalarField<R> => ({
  kind: 'scalar',
  type: 'string',
  nullable: false,
  description,
  get,
});
const optStr = <R>(description: string, get: (r: R) => string | null): ScalarField<R> => ({
  kind: 'scalar',
  type: 'string',
  nullable: true,
  description,
  get,
});
const date = <R>(description: string, get: (r: R) => number | null, nullable = true): ScalarField<R> => ({
  kind: 'scalar',
  type: 'date-time',
  nullable,
  description,
  filter: 'none',
  get: (r) => {
    const ms = get(r);
    return ms === null ? null : formatDateTime(ms);
  },
});
const bool = <R>(description: string, get: (r: R) => boolean): ScalarField<R> => ({
  kind: 'scalar',
  type: 'boolean',
  nullable: false,
  description,
  get,
});
const ids = <R extends EntityRecord>(): Record<'hexUuid' | 'uuid', ScalarField<R>> => ({
  hexUuid: str('UUID, dashed hex form', (r) => r.id),
  uuid: str('UUID, base58 form', (r) => uuidToBase58(r.id)),
});
const ref = <R>(target: ResourceKind, description: string, get: (r: R) => string | null): RefField<R> => ({
  kind: 'ref',
  target,
  description,
  get,
});
const refs = <R>(
  target: ResourceKind,
  description: string,
  get: (r: R, data: SandboxData) => string[],
): RefsField<R> => ({ kind: 'refs', target, description, get });

const userResource: ResourceDef<UserRecord> = {
  kind: 'users',
  type: 'User',
  label: 'User',
  fields: {
    ...ids<UserRecord>(),
    user: str('Account name', (r) => r.user),
    firstname: str('First name', (r) => r.firstname),
    lastname: str('Last name', (r) => r.lastname),
    auxInfo: optStr('Auxiliary information (e.g. class)', (r) => r.auxInfo),
    importId: optStr('ID from the import source', (r) => r.importId),
    emailAddress: optStr('External e-mail address', (r) => r.emailAddress),
    locked: bool('Whether the account is locked', (r) => r.locked),
    deleted: {
      ...date<UserRecord>('When the user was soft-deleted, else null', (r) => r.deleted),
      filter: 'exists',
    },
    status: { ...str<UserRecord>('Account status', (r) => r.status), enum: USER_STATUSES },
    type: optStr('User type', (r) => r.type),
    created: date('Creation time', (r) => r.created, false),
    createdBy: ref('users', 'User who created this user', (r) => r.createdBy),
    lastLogin: date('Last login', (r) => r.lastLogin),
    deletedBy: ref('users', 'User who deleted this user', (r) => r.deletedBy),
    groups: refs('groups', 'Groups the user is a member of', (r, d) => d.memberships.rightOf(r.id)),
    roles: refs('roles', 'Roles of the user', (r, d) => d.userRoles.rightOf(r.id)),
    privileges: refs('privileges', 'Privileges granted to the user directly', (r, d) =>
      d.userPrivileges.rightOf(r.id),
    ),
  },
};

const groupResource: ResourceDef<GroupRecord> = {
  kind: 'groups',
  type: 'Group',
  label: 'Group',
  fields: {
    ...ids<GroupRecord>(),
    group: str('Account name of the group', (r) => r.group),
    name: str('Display name', (r) => r.name),
    owner: ref('users', 'Owner of the group', (r) => r.owner),
    home: optStr('Home directory', (r) => r.home),
    created: date('Creation time', (r) => r.created, false),
    createdBy: ref('users', 'User who created the group', (r) => r.createdBy),
    deleted: {
      ...date<GroupRecord>('When the group was soft-deleted, else null', (r) => r.deleted),
      filter: 'exists',
    },
    deletedBy: ref('users', 'User who deleted the group', (r) => r.deletedBy),
    privileges: refs('privileges', 'Privileges granted to the group', (r, d) =>
      d.groupPrivileges.rightOf(r.id),
    ),
    flags: refs('group_flags', 'Group flags', (r, d) => d.groupFlagLinks.rightOf(r.id)),
    members: refs('users', 'Members of the group', (r, d) => d.memberships.leftOf(r.id)),
  },
};

const roleResource: ResourceDef<RoleRecord> = {
  kind: 'roles',
  type: 'Role',
  label: 'Role',
  fields: {
    ...ids<RoleRecord>(),
    role: str('Technical name, e.g. ROLE_ADMIN', (r) => r.role),
    name: str('Display name', (r) => r.name),
    module: optStr('Module that defines the role', (r) => r.module),
    privileges: refs('privileges', 'Privileges of the role', (r, d) => d.rolePrivileges.rightOf(r.id)),
  },
};

const privilegeResource: ResourceDef<PrivilegeRecord> = {
  kind: 'privileges',
  type: 'Privilege',
  label: 'Privilege',
  fields: {
    ...ids<PrivilegeRecord>(),
    name: str('Label', (r) => r.name),
    privilege: str('Technical key', (r) => r.privilege),
    description: optStr('Description', (r) => r.description),
    module: optStr('Module that defines the privilege', (r) => r.module),
    inverted: bool('Whether holding it takes a right away', (r) => r.inverted),
    groups: refs('groups', 'Groups holding the privilege', (r, d) => d.groupPrivileges.leftOf(r.id)),
    roles: refs('roles', 'Roles holding the privilege', (r, d) => d.rolePrivileges.leftOf(r.id)),
  },
};

const groupFlagResource: ResourceDef<GroupFlagRecord> = {
  kind: 'group_flags',
  type: 'GroupFlag',
  label: 'Group flag',
  fields: {
    ...ids<GroupFlagRecord>(),
    name: str('Technical name, e.g. has_home', (r) => r.name),
    title: str('Title', (r) => r.title),
  },
};

/** Every resource by kind. */
export const RESOURCES: { [K in ResourceKind]: AnyResource } = {
  users: userResource,
  groups: groupResource,
  roles: roleResource,
  privileges: privilegeResource,
  group_flags: groupFlagResource,
};
