import assert from 'node:assert/strict';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../src/sandbox/index.js';

/** Starts a sandbox on a random loopback port and registers nothing: callers close it. */
export function sandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...options });
}

/**
 * The `successor` block of a configuration file that points the proxy at `sb` with its
 * read-write demo client (spread it into a `successor` object to add timeouts or retries).
 */
export function successorConfigFor(sb: RunningSandbox) {
  return {
    baseUrl: sb.apiBaseUrl,
    auth: {
      type: 'oauth2',
      issuer: sb.issuer,
      clientId: sb.clients.readWrite.clientId,
      clientSecret: sb.clients.readWrite.clientSecret,
    },
  };
}

export interface TokenRequest {
  clientId?: string;
  clientSecret?: string;
  scope?: string;
  method?: 'client_secret_post' | 'client_secret_basic';
}

/** Reads the discovery document of a sandbox (a plain fetch, as an RP would). */
export async function discovery(sb: RunningSandbox): Promise<Record<string, unknown>> {
  const res = await fetch(`${sb.issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  return (await res.json()) as Record<string, unknown>;
}

/** Posts a client-credentials token request; returns the status and the parsed body. */
export async function tokenResponse(
  sb: RunningSandbox,
  request: TokenRequest = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const clientId = request.clientId ?? sb.clients.readWrite.clientId;
  const clientSecret = request.clientSecret ?? sb.clients.readWrite.clientSecret;
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (request.scope !== undefined) form.set('scope', request.scope);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (request.method === 'client_secret_basic') {
    const encode = (s: string) => encodeURIComponent(s);
    headers.authorization = `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
  } else {
    form.set('client_id', clientId);
    form.set('client_secret', clientSecret);
  }
  const res = await fetch(sb.tokenEndpoint, { method: 'POST', headers, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** An access token for the read+write client (or the one given). */
export async function accessToken(sb: RunningSandbox, request: TokenRequest = {}): Promise<string> {
  const { status, body } = await tokenResponse(sb, request);
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(typeof body.access_token, 'string');
  return String(body.access_token);
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for an empty body. */
  body: unknown;
}

export interface ApiOptions {
  method?: string;
  token?: string;
  apiKey?: string;
  accept?: string;
  /** A JSON body; sent with `contentType` (default application/json, merge-patch for PATCH). */
  json?: unknown;
  /** A raw body (e.g. malformed JSON). */
  raw?: string;
  contentType?: string;
}

/** Calls the API: `path` relative to the API base (`/users?…`). */
export async function api(sb: RunningSandbox, path: string, options: ApiOptions = {}): Promise<ApiResponse> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.apiKey) headers['x-iserv-authentication'] = options.apiKey;
  if (options.accept) headers.accept = options.accept;
  let body: string | undefined;
  if (options.json !== undefined || options.raw !== undefined) {
    body = options.raw ?? JSON.stringify(options.json);
    headers['content-type'] =
      options.contentType ?? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json');
  }
  const res = await fetch(`${sb.apiBaseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

/** A client bound to one sandbox and one credential. */
export interface Client {
  get(path: string, options?: ApiOptions): Promise<ApiResponse>;
  post(path: string, json?: unknown, options?: ApiOptions): Promise<ApiResponse>;
  patch(path: string, json: unknown, options?: ApiOptions): Promise<ApiResponse>;
  delete(path: string, options?: ApiOptions): Promise<ApiResponse>;
}

/** A client that authenticates with the sandbox's API key (read and write). */
export function keyClient(sb: RunningSandbox, accept = 'application/json'): Client {
  const base = { apiKey: sb.apiKey, accept };
  return {
    get: (path, options) => api(sb, path, { ...base, ...options }),
    post: (path, json, options) =>
      api(sb, path, { ...base, method: 'POST', ...(json === undefined ? {} : { json }), ...options }),
    patch: (path, json, options) => api(sb, path, { ...base, method: 'PATCH', json, ...options }),
    delete: (path, options) => api(sb, path, { ...base, method: 'DELETE', ...options }),
  };
}

/** Narrows a JSON value to an object. */
export function obj(value: unknown): Record<string, unknown> {
  assert.ok(
    typeof value === 'object' && value !== null && !Array.isArray(value),
    `expected an object: ${JSON.stringify(value)}`,
  );
  return value as Record<string, unknown>;
}

/** Narrows a JSON value to an array of objects. */
export function list(value: unknown): Record<string, unknown>[] {
  assert.ok(Array.isArray(value), `expected an array: ${JSON.stringify(value)}`);
  return value.map(obj);
}

/** The id (dashed) of a user by account, failing the test when absent. */
export function userId(sb: RunningSandbox, account: string): string {
  const user = sb.data.userByAccount(account);
  assert.ok(user, `no user ${account}`);
  return user.id;
}

/** The id (dashed) of a group by account, failing the test when absent. */
export function groupId(sb: RunningSandbox, account: string): string {
  const group = sb.data.groupByAccount(account);
  assert.ok(group, `no group ${account}`);
  return group.id;
}

/** Asserts an RFC 7807 problem response with `status`; returns its body. */
export function assertProblem(res: ApiResponse, status: number): Record<string, unknown> {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = obj(res.body);
  assert.equal(body.status, status);
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.detail, 'string');
  assert.equal(typeof body.type, 'string');
  return body;
}

/** The violations of a 422 (or 400) problem as `propertyPath: message` lines. */
export function violationPaths(body: Record<string, unknown>): string[] {
  const violations = body.violations;
  assert.ok(Array.isArray(violations), 'violations present');
  return violations.map((v) => String(obj(v).propertyPath));
}
