import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import { normalizeUuid } from '../lib/uuid.js';

/** User `status` values (the legacy `a` / `r` / `i`). */
export const USER_STATUSES = ['active', 'registered', 'inactive'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

/** What every stored entity has: its dashed UUID and a creation time (ms) that orders collections. */
export interface EntityRecord {
  id: string;
  created: number;
}

export interface UserRecord extends EntityRecord {
  user: string;
  firstname: string;
  lastname: string;
  auxInfo: string | null;
  importId: string | null;
  emailAddress: string | null;
  locked: boolean;
  status: UserStatus;
  type: string | null;
  createdBy: string | null;
  lastLogin: number | null;
  deleted: number | null;
  deletedBy: string | null;
}

export interface GroupRecord extends EntityRecord {
  group: string;
  name: string;
  owner: string | null;
  home: string | null;
  createdBy: string | null;
  deleted: number | null;
  deletedBy: string | null;
}

export interface RoleRecord extends EntityRecord {
  role: string;
  name: string;
  module: string | null;
}

export interface PrivilegeRecord extends EntityRecord {
  privilege: string;
  name: string;
  description: string | null;
  module: string | null;
  inverted: boolean;
}

export interface GroupFlagRecord extends EntityRecord {
  name: string;
  title: string;
}

/** The collections the API serves, by their path segment. */
export const RESOURCE_KINDS = ['users', 'groups', 'roles', 'privileges', 'group_flags'] as const;
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

/** Record type of each resource kind. */
export interface RecordOf {
  users: UserRecord;
  groups: GroupRecord;
  roles: RoleRecord;
  privileges: PrivilegeRecord;
  group_flags: GroupFlagRecord;
}

/**
 * A many-to-many relation stored once, as pairs (left, right), with an index on each side, so
 * a link made from one side is visible from the other.
 */
export class Relation {
  private readonly forward = new Map<string, Set<string>>();
  private readonly backward = new Map<string, Set<string>>();

  constructor(
    readonly left: ResourceKind,
    readonly right: ResourceKind,
  ) {}

  /** Links `left` to `right`; false when they were linked already. */
  link(left: string, right: string): boolean {
    if (this.has(left, right)) return false;
    add(this.forward, left, right);
    add(this.backward, right, left);
    return true;
  }

  /** Removes the link; false when there was none. */
  unlink(left: string, right: string): boolean {
    if (!this.has(left, right)) return false;
    remove(this.forward, left, right);
    remove(this.backward, right, left);
    return true;
  }

  /** Whether the pair is linked. */
  has(left: string, right: string): boolean {
    return this.forward.get(left)?.has(right) ?? false;
  }

  /** Right-hand ids linked to `left`. */
  rightOf(left: string): string[] {
    return [...(this.forward.get(left) ?? [])];
  }

  /** Left-hand ids linked to `right`. */
  leftOf(right: string): string[] {
    return [...(this.backward.get(right) ?? [])];
  }

  /** Removes every link of an entity on either side (used when it is purged). */
  drop(id: string): void {
    for (const right of this.rightOf(id)) this.unlink(id, right);
    for (const left of this.leftOf(id)) this.unlink(left, id);
  }

  /** Number of links. */
  get size(): number {
    let n = 0;
    for (const set of this.forward.values()) n += set.size;
    return n;
  }
}

function add(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

function remove(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}

interface Secret {
  salt: Uint8Array;
  hash: Uint8Array;
}

function hashSecret(value: string, salt: Uint8Array = randomBytes(16)): Secret {
  return { salt, hash: createHash('sha256').update(salt).update(value).digest() };
}

function matches(secret: Secret | undefined, value: string): boolean {
  if (!secret) return false;
  return timingSafeEqual(secret.hash, hashSecret(value, secret.salt).hash);
}

/** Password state of a user, visible to tests through `data`, never through the API. */
export interface PasswordState {
  hasPassword: boolean;
  hasAdminPassword: boolean;
  /** Set by the reset endpoint: the password is a temporary one. */
  passwordIsTemporary: boolean;
}

/** Orders entities by creation time, then UUID: the stable order of every collection. */
export function byCreation(a: EntityRecord, b: EntityRecord): number {
  return a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * The sandbox's in-memory IDM: entities by dashed UUID, relations stored once, password state.
 * Tests reach it as `RunningSandbox.data`.
 */
export class SandboxData {
  readonly users = new Map<string, UserRecord>();
  readonly groups = new Map<string, GroupRecord>();
  readonly roles = new Map<string, RoleRecord>();
  readonly privileges = new Map<string, PrivilegeRecord>();
  readonly groupFlags = new Map<string, GroupFlagRecord>();

  /** user → group */
  readonly memberships = new Relation('users', 'groups');
  /** user → role */
  readonly userRoles = new Relation('users', 'roles');
  /** user → privilege (direct user privileges) */
  readonly userPrivileges = new Relation('users', 'privileges');
  /** group → privilege */
  readonly groupPrivileges = new Relation('groups', 'privileges');
  /** group → group flag */
  readonly groupFlagLinks = new Relation('groups', 'group_flags');
  /** role → privilege */
  readonly rolePrivileges = new Relation('roles', 'privileges');

  private readonly passwords = new Map<string, Secret>();
  private readonly adminPasswords = new Map<string, Secret>();
  private readonly temporary = new Set<string>();

  constructor(
    readonly clock: Clock,
    /** Soft-deleted users and groups are purged this long after their deletion. */
    readonly retentionMs: number,
  ) {}

  /** Every relation, for integrity work (purge) and generic code. */
  get relations(): Relation[] {
    return [
      this.memberships,
      this.userRoles,
      this.userPrivileges,
      this.groupPrivileges,
      this.groupFlagLinks,
      this.rolePrivileges,
    ];
  }

  /** The map holding entities of one kind. */
  store<K extends ResourceKind>(kind: K): Map<string, RecordOf[K]> {
    const stores: { [P in ResourceKind]: Map<string, RecordOf[P]> } = {
      users: this.users,
      groups: this.groups,
      roles: this.roles,
      privileges: this.privileges,
      group_flags: this.groupFlags,
    };
    return stores[kind];
  }

  /** Finds an entity by its UUID, dashed or base58. */
  find<K extends ResourceKind>(kind: K, id: string): RecordOf[K] | undefined {
    const uuid = normalizeUuid(id);
    return uuid === undefined ? undefined : this.store(kind).get(uuid);
  }

  /** All entities of a kind in collection order. */
  list<K extends ResourceKind>(kind: K): RecordOf[K][] {
    return [...this.store(kind).values()].sort(byCreation);
  }

  /** A user by account name (exact). */
  userByAccount(account: string): UserRecord | undefined {
    for (const user of this.users.values()) if (user.user === account) return user;
    return undefined;
  }

  /** A group by account name (exact). */
  groupByAccount(account: string): GroupRecord | undefined {
    for (const group of this.groups.values()) if (group.group === account) return group;
    return undefined;
  }

  /** A role by its technical name, e.g. `ROLE_ADMIN`. */
  roleByName(role: string): RoleRecord | undefined {
    for (const record of this.roles.values()) if (record.role === role) return record;
    return undefined;
  }

  /** A privilege by its technical key. */
  privilegeByKey(privilege: string): PrivilegeRecord | undefined {
    for (const record of this.privileges.values()) if (record.privilege === privilege) return record;
    return undefined;
  }

  /** A group flag by its technical name, e.g. `has_home`. */
  groupFlagByName(name: string): GroupFlagRecord | undefined {
    for (const record of this.groupFlags.values()) if (record.name === name) return record;
    return undefined;
  }

  /** Whether an account name is taken by a user or a group (they share one namespace). */
  accountTaken(account: string, except?: string): boolean {
    const wanted = account.toLowerCase();
    for (const user of this.users.values())
      if (user.id !== except && user.user.toLowerCase() === wanted) return true;
    for (const group of this.groups.values())
      if (group.id !== except && group.group.toLowerCase() === wanted) return true;
    return false;
  }

  /** Sets (or, with null, clears) a user's password. */
  setPassword(userId: string, password: string | null, temporary = false): void {
    if (password === null) this.passwords.delete(userId);
    else this.passwords.set(userId, hashSecret(password));
    if (temporary && password !== null) this.temporary.add(userId);
    else this.temporary.delete(userId);
  }

  /** Sets (or, with null, revokes) a user's admin password. */
  setAdminPassword(userId: string, password: string | null): void {
    if (password === null) this.adminPasswords.delete(userId);
    else this.adminPasswords.set(userId, hashSecret(password));
  }

  /** Whether `password` is the user's current password. */
  verifyPassword(userId: string, password: string): boolean {
    return matches(this.passwords.get(userId), password);
  }

  /** Whether `password` is the user's current admin password. */
  verifyAdminPassword(userId: string, password: string): boolean {
    return matches(this.adminPasswords.get(userId), password);
  }

  /** The password state of a user. */
  passwordState(userId: string): PasswordState {
    return {
      hasPassword: this.passwords.has(userId),
      hasAdminPassword: this.adminPasswords.has(userId),
      passwordIsTemporary: this.temporary.has(userId),
    };
  }

  /** Removes an entity for good, with its links and the references other entities hold to it. */
  purge(kind: ResourceKind, id: string): boolean {
    if (!this.store(kind).delete(id)) return false;
    for (const relation of this.relations)
      if (relation.left === kind || relation.right === kind) relation.drop(id);
    if (kind === 'users') {
      this.passwords.delete(id);
      this.adminPasswords.delete(id);
      this.temporary.delete(id);
      for (const user of this.users.values()) {
        if (user.createdBy === id) user.createdBy = null;
        if (user.deletedBy === id) user.deletedBy = null;
      }
      for (const group of this.groups.values()) {
        if (group.owner === id) group.owner = null;
        if (group.createdBy === id) group.createdBy = null;
        if (group.deletedBy === id) group.deletedBy = null;
      }
    }
    return true;
  }

  /** Purges soft-deleted users and groups whose retention has run out (by the injected clock). */
  purgeExpired(): number {
    const cutoff = this.clock.now() - this.retentionMs;
    let purged = 0;
    for (const user of [...this.users.values()])
      if (user.deleted !== null && user.deleted <= cutoff && this.purge('users', user.id)) purged++;
    for (const group of [...this.groups.values()])
      if (group.deleted !== null && group.deleted <= cutoff && this.purge('groups', group.id)) purged++;
    return purged;
  }

  /** Groups a user is a member of, in collection order. */
  groupsOf(userId: string): GroupRecord[] {
    return this.resolve('groups', this.memberships.rightOf(userId));
  }

  /** Members of a group, in collection order. */
  membersOf(groupId: string): UserRecord[] {
    return this.resolve('users', this.memberships.leftOf(groupId));
  }

  /** Roles of a user, in collection order. */
  rolesOf(userId: string): RoleRecord[] {
    return this.resolve('roles', this.userRoles.rightOf(userId));
  }

  /** Users holding a role, in collection order. */
  usersWithRole(roleId: string): UserRecord[] {
    return this.resolve('users', this.userRoles.leftOf(roleId));
  }

  /** Resolves ids of one kind to records in collection order, skipping unknown ids. */
  resolve<K extends ResourceKind>(kind: K, ids: Iterable<string>): RecordOf[K][] {
    const store = this.store(kind);
    const out: RecordOf[K][] = [];
    for (const id of ids) {
      const record = store.get(id);
      if (record) out.push(record);
    }
    return out.sort(byCreation);
  }
}
