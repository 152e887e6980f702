// Shared set-up of the authentication, error-model and docs tests: the real server (startServer
// in production mode: SQLite file in a temp dir, the real successor client on the real sandbox
// IDM) listening on 127.0.0.1, plus the same services on ::1 and dual-stack :: when asked.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { createApp } from '../src/app.js';
import { addApiUser } from '../src/auth/admin.js';
import { type AppConfig, parseConfig } from '../src/config/load.js';
import type { Clock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/index.js';
import { startServer } from '../src/server.js';
import type { Services } from '../src/services.js';
import { LogSink } from './log-sink.js';
import { successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

let sandbox: Promise<RunningSandbox> | undefined;

/** One sandbox IDM per test file (each file runs in its own process). */
export function sharedSandbox(): Promise<RunningSandbox> {
  sandbox ??= startSandbox({});
  return sandbox;
}

/** Stops the shared sandbox, if one was started. */
export async function closeSharedSandbox(): Promise<void> {
  if (sandbox) await (await sandbox).close();
  sandbox = undefined;
}

/** Where a harness listens: IPv4 loopback, IPv6 loopback, and dual-stack `::` (IPv4 peers appear as ::ffff:…). */
export type ListenHost = '127.0.0.1' | '::1' | '::';

export interface HarnessOptions {
  /** Config keys merged over the defaults (server, auth, legacy …). */
  config?: Record<string, unknown>;
  clock?: Clock;
  hosts?: ListenHost[];
  /** Reuse a directory (and so the SQLite file) of an earlier harness: a restart. */
  dir?: string;
  logSink?: LogSink;
  /** The sandbox to use as successor (default: the file's shared one). */
  sandbox?: RunningSandbox;
}

/** The proxy app, listening. */
export interface AuthHarness {
  dir: string;
  /** The config file written for CLI runs (`--config`). */
  configFile: string;
  config: AppConfig;
  services: Services;
  /** Base URL per listening host, e.g. `http://[::1]:1234`. */
  urls: Partial<Record<ListenHost, string>>;
  /** The URL on 127.0.0.1 (through `::` when only the dual-stack listener runs). */
  url: string;
  logSink: LogSink;
  addUser(name: string, ranges: string[]): Promise<string>;
  close(): Promise<void>;
}

function merge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object'
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

/** Starts the app on a real store and the sandbox successor; production mode (no demo user). */
export async function startHarness(options: HarnessOptions = {}): Promise<AuthHarness> {
  const idm = options.sandbox ?? (await sharedSandbox());
  const dir = options.dir ?? tempDir('auth');
  const raw = merge(
    {
      server: { port: 0 },
      successor: successorConfigFor(idm),
      store: { type: 'sqlite', path: path.join(dir, 'store.db') },
      mappings: { dir: path.resolve('mappings') },
    },
    options.config ?? {},
  );
  const configFile = path.join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify(raw, null, 2));
  const config = parseConfig(raw, { label: configFile, env: {}, baseDir: dir, file: configFile });
  const logSink = options.logSink ?? new LogSink();
  const logger = createLogger({ level: 'debug', destination: logSink });
  const clock = options.clock ?? { now: () => Date.now() };
  // The real start-up path (store, successor client, mappings) listening on 127.0.0.1 …
  const running = await startServer({
    config: { ...config, server: { ...config.server, host: '127.0.0.1' } },
    logger,
    clock,
  });
  const services = running.services;
  const servers: Server[] = [];
  const urls: Partial<Record<ListenHost, string>> = {};
  for (const host of options.hosts ?? ['127.0.0.1']) {
    if (host === '127.0.0.1') {
      urls[host] = running.url;
      continue;
    }
    // … plus the same services behind another app instance on the IPv6 / dual-stack sockets.
    const server = createServer(getRequestListener(createApp(services).fetch));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    servers.push(server);
    const { port } = server.address() as AddressInfo;
    urls[host] = host === '::1' ? `http://[::1]:${port}` : `http://127.0.0.1:${port}`;
  }
  const url = urls['127.0.0.1'] ?? urls['::'] ?? urls['::1'] ?? '';
  return {
    dir,
    configFile,
    config,
    services,
    urls,
    url,
    logSink,
    addUser: async (name, ranges) => (await addApiUser(services.store, clock, name, ranges)).password,
    async close() {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      await running.close();
    },
  };
}

/** The `Authorization` header value for Basic credentials. */
export function basic(name: string, password: string): string {
  return `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
}

/** A GET with Basic credentials (when given) and extra headers; resolves to status, headers and parsed body. */
export async function call(
  url: string,
  options: {
    user?: string;
    password?: string;
    headers?: Record<string, string>;
    method?: string;
    body?: string | Uint8Array;
  } = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.user !== undefined) headers.authorization = basic(options.user, options.password ?? '');
  const response = await fetch(url, {
    method: options.method ?? 'GET',
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
    redirect: 'manual',
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** The OpenAPI document path: a cheap authenticated GET that answers 200 once authentication passes. */
export const PROTECTED = '/iserv/api/docs/openapi.json';
