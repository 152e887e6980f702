import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import type { SandboxData } from '../data.js';

/** Entities that answer 403 to PATCH and DELETE: the admin user, the admins group, ROLE_ADMIN. */
export const PROTECTED = { user: 'admin', group: 'admins', role: 'ROLE_ADMIN' } as const;

/** The user API writes are attributed to (`createdBy`, `deletedBy`): the seeded `admin`, if present. */
export function actorId(data: SandboxData): string | null {
  return data.userByAccount(PROTECTED.user)?.id ?? null;
}

/** Whether a boolean query flag such as `purge` is set (`true` or `1`). */
export function queryFlag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  return value === 'true' || value === '1';
}

/** A random temporary password: 12 base58 characters (about 70 bits). */
export function temporaryPassword(): string {
  return bs58.encode(randomBytes(16)).slice(0, 12);
}
