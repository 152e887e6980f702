// Shared set-up of the SSO tests: the real server (startServer) with a SQLite file in a temp dir
// and the real sandbox IDM with its oidc-provider, an API user created through the store, and a
// browser in miniature (redirects followed by hand, cookies kept) for the browser-facing pages.
import assert from 'node:assert/strict';
import path from 'node:path';
import { addApiUser } from '../src/auth/admin.js';
import { parseConfig } from '../src/config/load.js';
import { type Clock, systemClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { type RunningServer, startServer } from '../src/server.js';
import { LogSink } from './log-sink.js';
import { successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

/** The answer of POST /Service/Sso/authenticate. */
export interface SsoAnswer {
  username: string;
  token: string;
  return_to: string;
}

/** A proxy started for SSO tests. */
export interface SsoProxy {
  server: RunningServer;
  /** The embedded sandbox (sandbox mode) or the one given. */
  sandbox: RunningSandbox;
  url: string;
  dir: string;
  dbPath: string;
  logSink: LogSink;
  authorization: string;
  /** `POST {url}/iserv/api/Service/Sso/authenticate` with the API user's credentials and a form body. */
  authenticate(
    form: Record<string, string> | undefined,
    init?: RequestInit,
  ): Promise<{ status: number; headers: Headers; body: unknown; text: string }>;
  /** Authenticates `username` and returns the parsed 200 answer (fails the test otherwise). */
  token(username: string): Promise<SsoAnswer>;
  close(): Promise<void>;
}

export interface SsoProxyOptions {
  /** Extra config keys (merged shallowly per top-level block). */
  config?: Record<string, Record<string, unknown>>;
  /** Environment for secret references. */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Production mode on this sandbox instead of sandbox mode. */
  sandbox?: RunningSandbox;
}

/** Starts the proxy: sandbox mode (embedded sandbox) unless `sandbox` is given. */
export async function startSsoProxy(options: SsoProxyOptions = {}): Promise<SsoProxy> {
  const dir = tempDir('sso');
  const dbPath = path.join(dir, 'store.db');
  const extra = options.config ?? {};
  const external = options.sandbox;
  const raw = {
    server: { port: 0, shutdownTimeoutMs: 2000, ...extra.server },
    store: { type: 'sqlite', path: dbPath },
    mappings: { dir: path.resolve('mappings'), ...extra.mappings },
    ...(external
      ? {
          successor: {
            ...successorConfigFor(external),
            retries: { max: 0, baseDelayMs: 10 },
          },
        }
      : { sandbox: { enabled: true, ...extra.sandbox } }),
    ...(extra.sso === undefined ? {} : { sso: extra.sso }),
    ...(extra.legacy === undefined ? {} : { legacy: extra.legacy }),
  };
  const config = parseConfig(raw, { label: 'sso test', env: options.env ?? {}, baseDir: dir });
  const logSink = new LogSink();
  const clock = options.clock ?? systemClock;
  const server = await startServer({
    config,
    logger: createLogger({ level: 'debug', destination: logSink }),
    clock,
  });
  const sandbox = external ?? server.sandbox;
  assert.ok(sandbox, 'a sandbox');
  const { password } = await addApiUser(server.services.store, clock, 'portal-app', ['127.0.0.0/8']);
  const authorization = `Basic ${Buffer.from(`portal-app:${password}`).toString('base64')}`;
  const endpoint = `${server.url}/iserv/api/Service/Sso/authenticate`;

  async function authenticate(form: Record<string, string> | undefined, init: RequestInit = {}) {
    const response = await fetch(endpoint, {
      method: 'POST',
      ...(form === undefined ? {} : { body: new URLSearchParams(form) }),
      ...init,
      headers: { authorization, ...(init.headers as Record<string, string> | undefined) },
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

  return {
    server,
    sandbox,
    url: server.url,
    dir,
    dbPath,
    logSink,
    authorization,
    authenticate,
    async token(username) {
      const answer = await authenticate({ username });
      assert.equal(answer.status, 200, answer.text);
      return answer.body as SsoAnswer;
    },
    async close() {
      await server.close();
    },
  };
}

/** One hop of the browser: the response, its Location resolved, its body when it has no Location. */
export interface Hop {
  url: URL;
  status: number;
  headers: Headers;
  location: URL | undefined;
  text: string;
}

/** RFC 6265 5.1.4: whether a cookie with `Path=cookiePath` goes along to `requestPath`. */
function pathMatches(cookiePath: string, requestPath: string): boolean {
  if (requestPath === cookiePath) return true;
  return (
    requestPath.startsWith(cookiePath) && (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/')
  );
}

/** RFC 6265 5.1.4: the path of a cookie set without `Path`: the directory of the request's path. */
function defaultPath(requestPath: string): string {
  const last = requestPath.lastIndexOf('/');
  return last <= 0 ? '/' : requestPath.slice(0, last);
}

/**
 * A browser in miniature: follows redirects by hand with `redirect: 'manual'`, keeps cookies
 * (by name, like a browser does for one host across ports) and sends each only to the paths its
 * `Path` matches, as a browser does, and records every hop.
 */
export class Browser {
  readonly cookies = new Map<string, string>();
  /** The `Path` of each cookie in `cookies`. */
  readonly #paths = new Map<string, string>();
  readonly hops: Hop[] = [];

  /** One request, cookies sent and stored. */
  async get(url: URL | string, options: { cookies?: boolean } = {}): Promise<Hop> {
    const target = new URL(url);
    const cookie = [...this.cookies]
      .filter(([name]) => pathMatches(this.#paths.get(name) ?? '/', target.pathname))
      .map(([k, v]) => `${k}=${v}`)
      .join('; ');
    const response = await fetch(target, {
      redirect: 'manual',
      headers: options.cookies === false || cookie === '' ? {} : { cookie },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const index = pair.indexOf('=');
      const name = pair.slice(0, index);
      const value = pair.slice(index + 1);
      const path =
        attributes.find((a) => /^path=\//i.test(a))?.slice('path='.length) ?? defaultPath(target.pathname);
      if (value === '' || /max-age=0/i.test(line)) {
        // A browser deletes the cookie of this name and path only.
        if (this.#paths.get(name) === path) {
          this.cookies.delete(name);
          this.#paths.delete(name);
        }
      } else {
        this.cookies.set(name, value);
        this.#paths.set(name, path);
      }
    }
    const header = response.headers.get('location');
    const hop: Hop = {
      url: target,
      status: response.status,
      headers: response.headers,
      location: header === null ? undefined : new URL(header, target),
      text: await response.text(),
    };
    this.hops.push(hop);
    return hop;
  }

  /**
   * Follows redirects from `url` until a response without a redirect, or until the next URL
   * satisfies `stopBefore` (then that URL is returned unvisited as `next`).
   */
  async follow(
    url: URL | string,
    stopBefore?: (next: URL) => boolean,
  ): Promise<{ last: Hop; next: URL | undefined }> {
    let current = new URL(url);
    for (let hop = 0; hop < 15; hop++) {
      const answer = await this.get(current);
      if (answer.status < 300 || answer.status >= 400 || !answer.location) {
        return { last: answer, next: undefined };
      }
      if (stopBefore?.(answer.location)) return { last: answer, next: answer.location };
      current = answer.location;
    }
    return assert.fail(`too many redirects from ${url}`);
  }
}
