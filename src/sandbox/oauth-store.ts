import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';

interface Entry {
  payload: AdapterPayload;
  expiresAt: number;
}

/**
 * oidc-provider storage for one sandbox instance. The library's own memory adapter shares one
 * module-level store between all providers in the process (and warns on every start); the
 * sandbox needs each instance isolated, so several can run in one test process.
 */
export function createOAuthStore(): AdapterFactory {
  const entries = new Map<string, Entry>();
  const byUid = new Map<string, string>();
  const byUserCode = new Map<string, string>();
  const byGrant = new Map<string, Set<string>>();

  const read = (key: string): AdapterPayload | undefined => {
    const entry = entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return entry.payload;
  };

  return (model: string): Adapter => {
    const keyOf = (id: string) => `${model}:${id}`;
    return {
      async upsert(id, payload, expiresIn) {
        const key = keyOf(id);
        const expiresAt =
          typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY;
        entries.set(key, { payload, expiresAt });
        if (payload.uid) byUid.set(payload.uid, id);
        if (payload.userCode) byUserCode.set(payload.userCode, id);
        if (payload.grantId) {
          const keys = byGrant.get(payload.grantId) ?? new Set<string>();
          keys.add(key);
          byGrant.set(payload.grantId, keys);
        }
      },
      async find(id) {
        return read(keyOf(id));
      },
      async findByUid(uid) {
        const id = byUid.get(uid);
        return id === undefined ? undefined : read(keyOf(id));
      },
      async findByUserCode(userCode) {
        const id = byUserCode.get(userCode);
        return id === undefined ? undefined : read(keyOf(id));
      },
      async consume(id) {
        const entry = entries.get(keyOf(id));
        if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        entries.delete(keyOf(id));
      },
      async revokeByGrantId(grantId) {
        for (const key of byGrant.get(grantId) ?? []) entries.delete(key);
        byGrant.delete(grantId);
      },
    };
  };
}
