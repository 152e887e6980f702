/** API-user names: 1–64 characters of letters, digits, `.`, `_` and `-` (no `:`, which Basic auth forbids). */
export const API_USER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** True when `name` can be an API user's name. */
export function isValidApiUserName(name: string): boolean {
  return API_USER_NAME.test(name);
}
