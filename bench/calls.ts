// What the bench sends: the successor API's paths and the attributes the proxy asks for (so that a
// direct call is the proxy's own), the legacy paths, look-ups in the sandbox (a token, IDs), and
// the load scenarios (`npm run bench` runs them all, bench/side-by-side.ts one).
import type { SandboxProcess } from './processes.js';

export const API = '/iserv/idm/api/v1';
export const LEGACY = '/iserv/api/Service/Core/Entity';
/** The successor's Accept, as the proxy sends it. */
export const ACCEPT = 'application/ld+json, application/json';
/** The attributes the proxy asks for, per legacy answer (from the default mapping profile). */
export const USER_ITEM =
  'hexUuid,user,firstname,lastname,status,type,importId,auxInfo,created,createdBy.user,lastLogin,deleted,deletedBy.user,roles.role,groups.group,privileges.privilege';
export const USER_LIST = 'hexUuid,user,firstname,lastname,status,created,createdBy.user,lastLogin';
/** Page size of the collection reads (the proxy's `successor.pageSize` and the direct reads'). */
export const PAGE_SIZE = 500;
export const USER_EXTENDED =
  'hexUuid,user,firstname,lastname,status,created,createdBy.user,lastLogin,roles.role,groups.group,privileges.privilege';

/** A bearer token of the sandbox's read-write client, as a client calling the successor directly holds one. */
export async function bearerToken(sandbox: Pick<SandboxProcess, 'tokenEndpoint'>): Promise<string> {
  const response = await fetch(sandbox.tokenEndpoint, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: 'idm-compat',
      client_secret: 'sandbox-secret',
      scope: 'iserv:idm:api-read iserv:idm:api-write',
    }),
  });
  return ((await response.json()) as { access_token: string }).access_token;
}

/** The successor UUID of the first member of a sandbox collection matching `query` (e.g. `user=admin`). */
export async function sandboxHexUuid(
  sandbox: Pick<SandboxProcess, 'apiBaseUrl'>,
  token: string,
  collection: string,
  query: string,
): Promise<string> {
  const response = await fetch(`${sandbox.apiBaseUrl}/${collection}?${query}&_attributes=hexUuid`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  const [first] = (await response.json()) as { hexUuid: string }[];
  if (!first) throw new Error(`no ${collection} ${query} in the sandbox`);
  return first.hexUuid;
}

/** One request of a scenario; the target adds its own headers (credentials, Accept). */
export interface Call {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: string;
  contentType?: string;
}

export interface LoadScenario {
  name: string;
  /** The successor calls a client would make itself; the hop forwards these too. */
  direct: Call[];
  proxy: Call[];
}

/** A scenario's calls as autocannon's requests, with the target's headers (and the body's type). */
export function cannonRequests(calls: readonly Call[], headers: Record<string, string>) {
  return calls.map((call) => ({
    method: call.method,
    path: call.path,
    headers: callHeaders(call, headers),
    ...(call.body === undefined ? {} : { body: call.body }),
  }));
}

/** A call's headers: the target's, and the body's type when it has one. */
export function callHeaders(call: Call, headers: Record<string, string>): Record<string, string> {
  return call.contentType ? { ...headers, 'content-type': call.contentType } : headers;
}

/** The load scenarios on the demo data; IDs are looked up in the sandbox first. */
export async function loadScenarios(
  sandbox: Pick<SandboxProcess, 'apiBaseUrl'>,
  token: string,
): Promise<LoadScenario[]> {
  const find = (collection: string, query: string) => sandboxHexUuid(sandbox, token, collection, query);
  const admin = await find('users', 'user=admin');
  const lea = await find('users', 'user=lea.braun');
  const group = await find('groups', 'group=klasse.5a');
  const json = 'application/json';
  return [
    {
      name: 'get one user (warm)',
      direct: [{ method: 'GET', path: `${API}/users/${admin}?_attributes=${encodeURIComponent(USER_ITEM)}` }],
      proxy: [{ method: 'GET', path: `${LEGACY}/User/admin` }],
    },
    {
      name: 'list users',
      direct: [
        {
          method: 'GET',
          path: `${API}/users?deleted=false&_attributes=${encodeURIComponent(USER_LIST)}&itemsPerPage=${PAGE_SIZE}`,
        },
      ],
      proxy: [{ method: 'GET', path: `${LEGACY}/User` }],
    },
    {
      name: 'list users extended',
      direct: [
        {
          method: 'GET',
          path: `${API}/users?deleted=false&_attributes=${encodeURIComponent(USER_EXTENDED)}&itemsPerPage=${PAGE_SIZE}`,
        },
      ],
      proxy: [{ method: 'GET', path: `${LEGACY}/User?extended=1` }],
    },
    {
      // Every connection links the group and unlinks it again; both are idempotent, so the
      // connections may interleave. Direct: the two writes; the proxy's unlink also reads which
      // groups were linked (for an exact rollback) and reads the user back (its answer).
      name: 'link + unlink a group',
      direct: [
        {
          method: 'POST',
          path: `${API}/users/${lea}/groups?_attributes=${encodeURIComponent(USER_ITEM)}`,
          body: JSON.stringify({ addedGroups: [`${API}/groups/${group}`] }),
          contentType: json,
        },
        { method: 'DELETE', path: `${API}/users/${lea}/groups/${group}` },
      ],
      proxy: [
        {
          method: 'POST',
          path: `${LEGACY}/User/lea.braun/link/groups`,
          body: '["klasse.5a"]',
          contentType: json,
        },
        {
          method: 'DELETE',
          path: `${LEGACY}/User/lea.braun/link/groups`,
          body: '["klasse.5a"]',
          contentType: json,
        },
      ],
    },
    {
      name: 'SSO authenticate',
      direct: [
        {
          method: 'GET',
          path: `${API}/users?user=lena.mueller&_attributes=${encodeURIComponent('hexUuid,user,deleted,locked')}&itemsPerPage=100`,
        },
      ],
      proxy: [
        {
          method: 'POST',
          path: '/iserv/api/Service/Sso/authenticate',
          body: 'username=lena.mueller',
          contentType: 'application/x-www-form-urlencoded',
        },
      ],
    },
  ];
}
