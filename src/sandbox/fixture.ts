import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { JsonFileError, parseJsonFile } from '../lib/json-syntax.js';
import { normalizeUuid } from '../lib/uuid.js';
import {
  type EntityRecord,
  type GroupRecord,
  type RecordOf,
  type Relation,
  type ResourceKind,
  type SandboxData,
  USER_STATUSES,
  type UserRecord,
} from './data.js';
import {
  accountFromName,
  checkAccount,
  checkEmail,
  checkPassword,
  checkRoleName,
  requiredText,
  sameName,
  Violations,
} from './routes/validation.js';

/** Namespace of the sandbox's name-based (v5) UUIDs. */
export const SANDBOX_NAMESPACE = '6f1b3a52-5d1e-4c0a-9a58-8e1f2b7c4d90';

/** A name-based UUID (RFC 4122 version 5, SHA-1) in the sandbox namespace: stable across runs. */
export function sandboxUuid(name: string): string {
  const hash = createHash('sha1')
    .update(Buffer.from(SANDBOX_NAMESPACE.replaceAll('-', ''), 'hex'))
    .update(name)
    .digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const id = z
  .string()
  .refine((v) => normalizeUuid(v) !== undefined, 'expected a UUID, dashed or base58')
  .optional();
const text = z.string().min(1);
const optionalText = z.string().nullable().optional();
const dateTime = z.iso.datetime({ offset: true });
/** A reference: the entity's UUID (dashed or base58) or its natural key (account, role, privilege key, flag name). */
const ref = z.string().min(1);

const privilegeSchema = z
  .object({
    id,
    privilege: text,
    name: text,
    description: optionalText,
    module: optionalText,
    inverted: z.boolean().optional(),
  })
  .strict();

const groupFlagSchema = z.object({ id, name: text, title: text }).strict();

const roleSchema = z
  .object({ id, role: text, name: text, module: optionalText, privileges: z.array(ref).optional() })
  .strict();

const userSchema = z
  .object({
    id,
    user: text,
    firstname: text,
    lastname: text,
    auxInfo: optionalText,
    importId: optionalText,
    emailAddress: optionalText,
    locked: z.boolean().optional(),
    status: z.enum(USER_STATUSES).optional(),
    type: optionalText,
    created: dateTime.optional(),
    createdBy: ref.nullable().optional(),
    lastLogin: dateTime.nullable().optional(),
    deleted: dateTime.nullable().optional(),
    roles: z.array(ref).optional(),
    groups: z.array(ref).optional(),
    privileges: z.array(ref).optional(),
    password: z.string().optional(),
    adminPassword: z.string().optional(),
  })
  .strict();

const groupSchema = z
  .object({
    id,
    group: text.optional(),
    name: text,
    owner: ref.nullable().optional(),
    home: optionalText,
    created: dateTime.optional(),
    createdBy: ref.nullable().optional(),
    deleted: dateTime.nullable().optional(),
    members: z.array(ref).optional(),
    privileges: z.array(ref).optional(),
    flags: z.array(ref).optional(),
  })
  .strict();

/** The fixture format (see docs/sandbox.md): entities by kind, relations by natural key or UUID. */
export const fixtureSchema = z
  .object({
    privileges: z.array(privilegeSchema).optional(),
    groupFlags: z.array(groupFlagSchema).optional(),
    roles: z.array(roleSchema).optional(),
    users: z.array(userSchema).optional(),
    groups: z.array(groupSchema).optional(),
  })
  .strict();

export type SandboxFixture = z.input<typeof fixtureSchema>;
type ParsedFixture = z.output<typeof fixtureSchema>;

/** A fixture that cannot be loaded: names the source, the JSON path and the reason. */
export class FixtureError extends Error {
  constructor(source: string, path: string, reason: string) {
    super(`sandbox fixture ${source}: ${path ? `${path}: ` : ''}${reason}`);
    this.name = 'FixtureError';
  }
}

/**
 * The API's create rules, applied to every entry with the API's own checks, so that a fixture
 * holds nothing `POST /users`, `/groups` or `/roles` (or a password change) would refuse:
 * non-blank names, account names, role names, e-mail addresses, password length. Returns the
 * first violation as a JSON path below the entry and its message. Uniqueness needs the data
 * set and is `loadFixture`'s.
 */
function firstCreateViolation(fixture: ParsedFixture): { path: string; message: string } | undefined {
  return (
    firstViolation('privileges', fixture.privileges, (v, p) => {
      requiredText(v, 'privilege', p.privilege);
      requiredText(v, 'name', p.name);
    }) ??
    firstViolation('groupFlags', fixture.groupFlags, (v, f) => {
      requiredText(v, 'name', f.name);
      requiredText(v, 'title', f.title);
    }) ??
    firstViolation('roles', fixture.roles, (v, r) => {
      checkRoleName(v, 'role', r.role);
      requiredText(v, 'name', r.name);
    }) ??
    firstViolation('users', fixture.users, (v, u) => {
      if (requiredText(v, 'user', u.user) !== undefined) checkAccount(v, 'user', u.user);
      requiredText(v, 'firstname', u.firstname);
      requiredText(v, 'lastname', u.lastname);
      checkEmail(v, 'emailAddress', u.emailAddress);
      if (u.password !== undefined) checkPassword(v, 'password', u.password);
      if (u.adminPassword !== undefined) checkPassword(v, 'adminPassword', u.adminPassword);
    }) ??
    firstViolation('groups', fixture.groups, (v, g) => {
      requiredText(v, 'name', g.name);
      // As POST /groups: the account given, else the one derived from the name.
      const field = g.group === undefined ? 'name' : 'group';
      const account = g.group ?? accountFromName(g.name);
      if (account === '') v.add(field, 'No account name can be derived from this name.');
      else checkAccount(v, field, account, g.group === undefined);
    })
  );
}

/** The first violation `rules` records for an entry of `$.<name>`, with its JSON path. */
function firstViolation<T>(
  name: string,
  list: readonly T[] | undefined,
  rules: (v: Violations, entry: T) => void,
): { path: string; message: string } | undefined {
  for (const [i, entry] of (list ?? []).entries()) {
    const v = new Violations();
    rules(v, entry);
    const first = v.list[0];
    if (first) return { path: `$.${name}[${i}].${first.propertyPath}`, message: first.message };
  }
  return undefined;
}

/** Reads and validates a fixture from a JSON file or an object. */
export function parseFixture(input: string | SandboxFixture): { fixture: ParsedFixture; source: string } {
  const source = typeof input === 'string' ? input : '(object)';
  let raw: unknown = input;
  if (typeof input === 'string') {
    let content: string;
    try {
      content = readFileSync(input, 'utf8');
    } catch (error) {
      throw new FixtureError(
        source,
        '',
        `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    try {
      raw = parseJsonFile(content);
    } catch (error) {
      if (!(error instanceof JsonFileError)) throw error;
      throw new FixtureError(source, '', error.message);
    }
  }
  const parsed = fixtureSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue
      ? issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')
      : '';
    throw new FixtureError(source, `$${path}`, issue?.message ?? 'invalid');
  }
  const violation = firstCreateViolation(parsed.data);
  if (violation) throw new FixtureError(source, violation.path, violation.message);
  return { fixture: parsed.data, source };
}

/**
 * Loads a fixture into the data set. Entities without `id` get a name-based UUID
 * (`sandboxUuid("<kind>:<natural key>")`); without `created` they are ordered as listed, just
 * before the load time. `createdBy` defaults to the `admin` user when there is one.
 */
export function loadFixture(data: SandboxData, input: string | SandboxFixture, now: number): void {
  const { fixture, source } = parseFixture(input);
  const fail = (path: string, reason: string): never => {
    throw new FixtureError(source, path, reason);
  };
  const total =
    (fixture.privileges?.length ?? 0) +
    (fixture.groupFlags?.length ?? 0) +
    (fixture.roles?.length ?? 0) +
    (fixture.users?.length ?? 0) +
    (fixture.groups?.length ?? 0);
  let sequence = 0;
  const createdAt = (value: string | undefined) => (value ? Date.parse(value) : now - total + sequence++);
  const ms = (value: string | null | undefined) => (value ? Date.parse(value) : null);

  // Every UUID names one entity, whatever its kind (an IRI or a bare UUID in a reference must not
  // be ambiguous): ids taken so far by kind, kept up to date while loading.
  const kinds: ResourceKind[] = ['users', 'groups', 'roles', 'privileges', 'group_flags'];
  const idsTaken = new Map<string, ResourceKind>();
  for (const kind of kinds) for (const id of data.store(kind).keys()) idsTaken.set(id, kind);
  const insert = <K extends ResourceKind>(kind: K, record: RecordOf[K], path: string) => {
    const holder = idsTaken.get(record.id);
    if (holder !== undefined)
      fail(
        `${path}.id`,
        `duplicate id ${record.id}${holder === kind ? '' : ` (already the id of one of the ${holder})`}`,
      );
    idsTaken.set(record.id, kind);
    data.store(kind).set(record.id, record);
  };
  const idFor = (kind: ResourceKind, given: string | undefined, key: string) =>
    (given === undefined ? undefined : normalizeUuid(given)) ?? sandboxUuid(`${kind}:${key}`);

  const byKey: { [K in ResourceKind]: (key: string) => EntityRecord | undefined } = {
    users: (key) => data.userByAccount(key),
    groups: (key) => data.groupByAccount(key),
    roles: (key) => data.roleByName(key),
    privileges: (key) => data.privilegeByKey(key),
    group_flags: (key) => data.groupFlagByName(key),
  };
  const resolve = (kind: ResourceKind, value: string, path: string): string => {
    const uuid = normalizeUuid(value);
    if (uuid !== undefined && data.store(kind).has(uuid)) return uuid;
    return byKey[kind](value)?.id ?? fail(path, `unknown ${kind} "${value}"`);
  };

  fixture.privileges?.forEach((p, i) => {
    const path = `$.privileges[${i}]`;
    if (data.privilegeByKey(p.privilege)) fail(`${path}.privilege`, `duplicate privilege "${p.privilege}"`);
    insert(
      'privileges',
      {
        id: idFor('privileges', p.id, p.privilege),
        created: createdAt(undefined),
        privilege: p.privilege,
        name: p.name,
        description: p.description ?? null,
        module: p.module ?? null,
        inverted: p.inverted ?? false,
      },
      path,
    );
  });
  fixture.groupFlags?.forEach((f, i) => {
    const path = `$.groupFlags[${i}]`;
    if (data.groupFlagByName(f.name)) fail(`${path}.name`, `duplicate group flag "${f.name}"`);
    insert(
      'group_flags',
      { id: idFor('group_flags', f.id, f.name), created: createdAt(undefined), name: f.name, title: f.title },
      path,
    );
  });
  fixture.roles?.forEach((r, i) => {
    const path = `$.roles[${i}]`;
    if (data.roleByName(r.role)) fail(`${path}.role`, `duplicate role "${r.role}"`);
    insert(
      'roles',
      {
        id: idFor('roles', r.id, r.role),
        created: createdAt(undefined),
        role: r.role,
        name: r.name,
        module: r.module ?? null,
      },
      path,
    );
  });
  // Accounts taken so far (users and groups share them, case-insensitively), kept up to date while
  // loading: one look-up per new account rather than a scan of every user, so large fixtures load
  // in linear time.
  const taken = new Set(
    [...data.store('users').values(), ...data.store('groups').values()].map((record) =>
      ('user' in record ? record.user : record.group).toLowerCase(),
    ),
  );
  const takeAccount = (account: string, path: string) => {
    const wanted = account.toLowerCase();
    if (taken.has(wanted)) fail(path, `account "${account}" is already taken`);
    taken.add(wanted);
  };
  const newUsers: UserRecord[] = [];
  fixture.users?.forEach((u, i) => {
    const path = `$.users[${i}]`;
    takeAccount(u.user, `${path}.user`);
    const record: UserRecord = {
      id: idFor('users', u.id, u.user),
      created: createdAt(u.created),
      createdBy: null,
      user: u.user,
      firstname: u.firstname,
      lastname: u.lastname,
      auxInfo: u.auxInfo ?? null,
      importId: u.importId ?? null,
      emailAddress: u.emailAddress ?? null,
      locked: u.locked ?? false,
      status: u.status ?? 'active',
      type: u.type ?? null,
      lastLogin: ms(u.lastLogin),
      deleted: ms(u.deleted),
      deletedBy: null,
    };
    insert('users', record, path);
    newUsers.push(record);
    if (u.password !== undefined) data.setPassword(record.id, u.password);
    if (u.adminPassword !== undefined) data.setAdminPassword(record.id, u.adminPassword);
  });
  // Group names are unique too (case-insensitively), as POST /groups checks.
  const groupNames = new Set([...data.store('groups').values()].map((g) => sameName(g.name)));
  const newGroups: GroupRecord[] = [];
  fixture.groups?.forEach((g, i) => {
    const path = `$.groups[${i}]`;
    if (groupNames.has(sameName(g.name))) fail(`${path}.name`, `duplicate group name "${g.name}"`);
    groupNames.add(sameName(g.name));
    const account = g.group ?? accountFromName(g.name);
    takeAccount(account, `${path}.group`);
    const record: GroupRecord = {
      id: idFor('groups', g.id, account),
      created: createdAt(g.created),
      createdBy: null,
      group: account,
      name: g.name,
      owner: null,
      home: g.home ?? null,
      deleted: ms(g.deleted),
      deletedBy: null,
    };
    insert('groups', record, path);
    newGroups.push(record);
  });

  // Relations and user references last, so entries may refer to entities listed after them.
  const admin = data.userByAccount('admin')?.id ?? null;
  /** Links `ownerId` to every reference in `refs`; `ownerIsLeft` says which side of the relation it is. */
  const linkAll = (
    relation: Relation,
    ownerId: string,
    ownerIsLeft: boolean,
    refs: string[] | undefined,
    path: string,
  ) => {
    const targetKind = ownerIsLeft ? relation.right : relation.left;
    for (const [j, value] of (refs ?? []).entries()) {
      const target = resolve(targetKind, value, `${path}[${j}]`);
      if (ownerIsLeft) relation.link(ownerId, target);
      else relation.link(target, ownerId);
    }
  };
  const userRef = (value: string | null | undefined, fallback: string | null, path: string) =>
    value === undefined ? fallback : value === null ? null : resolve('users', value, path);

  for (const [i, r] of (fixture.roles ?? []).entries()) {
    const role = data.roleByName(r.role);
    if (role) linkAll(data.rolePrivileges, role.id, true, r.privileges, `$.roles[${i}].privileges`);
  }
  for (const [i, u] of (fixture.users ?? []).entries()) {
    const record = newUsers[i];
    if (!record) continue;
    const path = `$.users[${i}]`;
    record.createdBy = userRef(u.createdBy, admin === record.id ? null : admin, `${path}.createdBy`);
    if (record.deleted !== null) record.deletedBy = admin;
    linkAll(data.userRoles, record.id, true, u.roles, `${path}.roles`);
    linkAll(data.memberships, record.id, true, u.groups, `${path}.groups`);
    linkAll(data.userPrivileges, record.id, true, u.privileges, `${path}.privileges`);
  }
  for (const [i, g] of (fixture.groups ?? []).entries()) {
    const record = newGroups[i];
    if (!record) continue;
    const path = `$.groups[${i}]`;
    record.createdBy = userRef(g.createdBy, admin, `${path}.createdBy`);
    if (record.deleted !== null) record.deletedBy = admin;
    record.owner = userRef(g.owner, null, `${path}.owner`);
    linkAll(data.memberships, record.id, false, g.members, `${path}.members`);
    linkAll(data.groupPrivileges, record.id, true, g.privileges, `${path}.privileges`);
    linkAll(data.groupFlagLinks, record.id, true, g.flags, `${path}.flags`);
  }
}
