import assert from 'node:assert/strict';
// What the sandbox holds, read directly from its data (not through the proxy), for the group,
// role, privilege and relation tests: links by natural keys, and a snapshot of everything to
// prove that a refused call changed nothing.
import type { UserProxy } from './user-helpers.js';

/** A legacy error body. */
export type ErrorBody = { code: number; message: string; errors?: { path: string; message: string }[] };

/** Members (accounts), privileges (keys) and flags (names) of a sandbox group, sorted. */
export function groupLinks(
  proxy: UserProxy,
  account: string,
): { users: string[]; privileges: string[]; flags: string[] } {
  const data = proxy.sandbox.data;
  const group = data.groupByAccount(account);
  if (!group) throw new Error(`no sandbox group ${account}`);
  return {
    users: data
      .membersOf(group.id)
      .map((u) => u.user)
      .sort(),
    privileges: data
      .resolve('privileges', data.groupPrivileges.rightOf(group.id))
      .map((p) => p.privilege)
      .sort(),
    flags: data
      .resolve('group_flags', data.groupFlagLinks.rightOf(group.id))
      .map((f) => f.name)
      .sort(),
  };
}

/** Privileges (keys) of a sandbox role, sorted. */
export function rolePrivileges(proxy: UserProxy, role: string): string[] {
  const data = proxy.sandbox.data;
  const record = data.roleByName(role);
  if (!record) throw new Error(`no sandbox role ${role}`);
  return data
    .resolve('privileges', data.rolePrivileges.rightOf(record.id))
    .map((p) => p.privilege)
    .sort();
}

/** Groups (accounts) and roles (keys) holding a sandbox privilege, sorted. */
export function privilegeLinks(proxy: UserProxy, key: string): { groups: string[]; roles: string[] } {
  const data = proxy.sandbox.data;
  const privilege = data.privilegeByKey(key);
  if (!privilege) throw new Error(`no sandbox privilege ${key}`);
  return {
    groups: data
      .resolve('groups', data.groupPrivileges.leftOf(privilege.id))
      .map((g) => g.group)
      .sort(),
    roles: data
      .resolve('roles', data.rolePrivileges.leftOf(privilege.id))
      .map((r) => r.role)
      .sort(),
  };
}

/**
 * Every entity and every link of the sandbox as sorted text (natural keys, no UUIDs), so that
 * `assert.equal(snapshot(p), before)` proves a call changed nothing.
 */
export function snapshot(proxy: UserProxy): string {
  const data = proxy.sandbox.data;
  const keyOf = (kind: string, id: string): string => {
    switch (kind) {
      case 'users':
        return data.users.get(id)?.user ?? id;
      case 'groups':
        return data.groups.get(id)?.group ?? id;
      case 'roles':
        return data.roles.get(id)?.role ?? id;
      case 'privileges':
        return data.privileges.get(id)?.privilege ?? id;
      default:
        return data.groupFlags.get(id)?.name ?? id;
    }
  };
  const lines: string[] = [];
  for (const user of data.users.values())
    lines.push(`user ${user.user} ${user.firstname} ${user.lastname} ${user.status} ${user.deleted}`);
  for (const group of data.groups.values())
    lines.push(`group ${group.group} ${group.name} ${group.owner} ${group.deleted}`);
  for (const role of data.roles.values()) lines.push(`role ${role.role} ${role.name} ${role.module}`);
  for (const relation of data.relations) {
    for (const left of [...data.store(relation.left).keys()]) {
      for (const right of relation.rightOf(left))
        lines.push(
          `${relation.left}>${relation.right} ${keyOf(relation.left, left)} ${keyOf(relation.right, right)}`,
        );
    }
  }
  return lines.sort().join('\n');
}

/** Whether every successor call counted was a read. */
export function onlyReads(calls: Record<string, number>): boolean {
  return Object.keys(calls).every((key) => key.startsWith('GET '));
}

/**
 * Sends each `[method, path, allowed]` with `body` (none for GET) and asserts a legacy 405 whose
 * `Allow` lists exactly `allowed`, and that nothing changed in the successor.
 */
export async function assertMethodsNotAllowed(
  proxy: UserProxy,
  cases: readonly (readonly [method: string, path: string, allowed: string])[],
  body: unknown,
): Promise<void> {
  const before = snapshot(proxy);
  for (const [method, path, allowed] of cases) {
    const answer = await proxy.call<ErrorBody>(method, path, method === 'GET' ? undefined : body);
    assert.equal(answer.status, 405, `${method} ${path}: ${answer.text}`);
    assert.equal(answer.body.code, 405);
    assert.deepEqual(new Set(answer.headers.get('allow')?.split(', ')), new Set(allowed.split(', ')));
  }
  assert.equal(snapshot(proxy), before, 'nothing changed');
}
