// What the bench sends: the successor API's paths and the attributes the proxy asks for (so that a
// direct call is the proxy's own), the legacy paths, and look-ups in the sandbox (a token, IDs).
import type { SandboxProcess } from './processes.js';

export const API = '/iserv/idm/api/v1';
export const LEGACY = '/iserv/api/Service/Core/Entity';
/** The successor's Accept, as the proxy sends it. */
export const ACCEPT = 'application/ld+json, application/json';
/** The attributes the proxy asks for, per legacy answer (from the default mapping profile). */
export const USER_ITEM =
  'hexUuid,user,firstname,lastname,status,type,importId,auxInfo,created,createdBy.user,lastLogin,deleted,deletedBy.user,roles.role,groups.group,privileges.privilege';
export const USER_LIST = 'hexUuid,user,firstname,lastname,status,created,createdBy.user,lastLogin';
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
