// Shared set-up of the mapping and user tests: the real app (createApp) with real services — a
// SQLite store in a temp dir, the real successor client on a real sandbox IDM with its OAuth2
// server, a mapping profile loaded from disk — listening on 127.0.0.1 over real HTTP, and an
// API user created through the store API.
import { cpSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { createApp } from '../src/app.js';
import { addApiUser } from '../src/auth/admin.js';
import { parseConfig } from '../src/config/load.js';
import { type Clock, ManualClock, systemClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import type { MappingHolder } from '../src/mapping/engine.js';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../src/sandbox/index.js';
import { buildServices, type Services } from '../src/services.js';
import type { Store } from '../src/store/types.js';
import type { SuccessorClient } from '../src/successor/client.js';
import { LogSink } from './log-sink.js';
import { successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

/** The default profile shipped in mappings/. */
export const DEFAULT_PROFILE = path.resolve('mappings/iserv-idm-v1');
/** The test profile that maps differently (users by uuid, auxInfo elsewhere, other status values). */
export const ALT_PROFILE = path.resolve('test/fixtures/mappings/alt-uuid');

export interface ProxyOptions {
  /** Profile folder (default: the shipped profile). */
  profile?: string;
  /** Copy the profile into the temp dir first, so the test may edit it. */
  copyProfile?: boolean;
  /** Sandbox options (its clock, retention, faults). */
  sandbox?: SandboxOptions;
  /** Successor client timeouts and retries. */
  timeouts?: { connectMs?: number; totalMs?: number };
  /**
   * More `successor` settings (e.g. `pageSize`, `pageConcurrency`), merged over the test defaults;
   * a function gets the started sandbox (for settings naming it, such as another client).
   */
  successor?: Record<string, unknown> | ((sandbox: RunningSandbox) => Record<string, unknown>);
  retries?: { max?: number; baseDelayMs?: number };
  /** Clock of the proxy (ID cache TTL). */
  clock?: Clock;
  /** Replaces the successor client's fetch (to shape one fault precisely). */
  successorFetch?: typeof fetch;
  /** More configuration sections (e.g. `logging`), merged over the test defaults. */
  config?: Record<string, unknown>;
  /**
   * A second replica of this proxy: on its sandbox and its SQLite store file (its own services, ID
   * cache and API user); closing it leaves the sandbox running.
   */
  replicaOf?: UserProxy;
}

/** One answer of the proxy. */
export interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A proxy on a sandbox, ready for legacy calls. */
export interface UserProxy {
  url: string;
  /** `${url}/iserv/api/Service/Core`. */
  core: string;
  sandbox: RunningSandbox;
  services: Services;
  store: Store;
  mappings: MappingHolder;
  successor: SuccessorClient;
  profileDir: string;
  dir: string;
  logSink: LogSink;
  /** Basic credentials of the test API user. */
  authorization: string;
  /** Calls `core + path` with the API user's credentials; `body` is sent as JSON unless it is a string. */
  call<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Answer<T>>;
  /** Successor API calls counted by the sandbox since `resetCounts()`, token calls left out. */
  apiCalls(): Record<string, number>;
  /** Total successor API calls since `resetCounts()`. */
  apiCallCount(): number;
  resetCounts(): void;
  close(): Promise<void>;
}

/** Starts a sandbox and the proxy on it. */
export async function startUserProxy(options: ProxyOptions = {}): Promise<UserProxy> {
  const sandbox = options.replicaOf?.sandbox ?? (await startSandbox({ port: 0, ...options.sandbox }));
  const dir = tempDir('user');
  let profileDir = options.profile ?? DEFAULT_PROFILE;
  if (options.copyProfile) {
    const copy = path.join(dir, 'mappings', path.basename(profileDir));
    cpSync(profileDir, copy, { recursive: true });
    profileDir = copy;
  }
  const raw = {
    server: { port: 0 },
    successor: {
      ...successorConfigFor(sandbox),
      timeouts: { connectMs: 2_000, totalMs: 5_000, ...options.timeouts },
      retries: { max: 0, baseDelayMs: 10, ...options.retries },
      ...(typeof options.successor === 'function' ? options.successor(sandbox) : options.successor),
    },
    store: { type: 'sqlite', path: path.join(options.replicaOf?.dir ?? dir, 'store.db') },
    mappings: { dir: path.dirname(profileDir), profile: path.basename(profileDir) },
    ...options.config,
  };
  const config = parseConfig(raw, { label: 'test', env: {}, baseDir: dir });
  const logSink = new LogSink();
  const logger = createLogger({ level: 'debug', destination: logSink });
  const clock = options.clock ?? systemClock;
  const services = await buildServices(config, {
    logger,
    clock,
    ...(options.successorFetch ? { successorFetch: options.successorFetch } : {}),
  });
  const { store, successor, mappings } = services;
  const app = createApp(services);
  const server: Server = createServer(getRequestListener(app.fetch));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const apiUser = options.replicaOf ? 'replica' : 'tester';
  const password = (await addApiUser(store, clock, apiUser, ['127.0.0.0/8'])).password;
  const authorization = `Basic ${Buffer.from(`${apiUser}:${password}`).toString('base64')}`;
  const core = `${url}/iserv/api/Service/Core`;
  const apiCalls = () =>
    Object.fromEntries(
      Object.entries(sandbox.counters.snapshot()).filter(([key]) => !key.includes('/token')),
    );
  return {
    url,
    core,
    sandbox,
    services,
    store,
    mappings,
    successor,
    profileDir,
    dir,
    logSink,
    authorization,
    async call<T>(method: string, p: string, body?: unknown, headers: Record<string, string> = {}) {
      const init: RequestInit = { method, headers: { authorization, ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        init.headers = { 'content-type': 'application/json', ...init.headers };
      }
      const response = await fetch(`${core}${p}`, init);
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, body: parsed as T, text };
    },
    apiCalls,
    apiCallCount: () => Object.values(apiCalls()).reduce((sum, n) => sum + n, 0),
    resetCounts: () => sandbox.counters.reset(),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await services.close();
      if (!options.replicaOf) await sandbox.close();
    },
  };
}

/** A sandbox clock tests move (retention purge). */
export function sandboxClock(): ManualClock {
  return new ManualClock(Date.now());
}

/** The sandbox's user record by account name. */
export function sandboxUser(proxy: UserProxy, account: string) {
  return proxy.sandbox.data.userByAccount(account);
}

/** Names (technical keys) of what a sandbox user is linked to. */
export function linksOf(
  proxy: UserProxy,
  account: string,
): { groups: string[]; roles: string[]; privileges: string[] } {
  const data = proxy.sandbox.data;
  const user = data.userByAccount(account);
  if (!user) throw new Error(`no sandbox user ${account}`);
  return {
    groups: data
      .groupsOf(user.id)
      .map((g) => g.group)
      .sort(),
    roles: data
      .rolesOf(user.id)
      .map((r) => r.role)
      .sort(),
    privileges: data
      .resolve('privileges', data.userPrivileges.rightOf(user.id))
      .map((p) => p.privilege)
      .sort(),
  };
}
