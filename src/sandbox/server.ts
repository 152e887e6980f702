import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { systemClock } from '../lib/clock.js';
import { silentLogger } from '../lib/logger.js';
import { createSandboxApp } from './app.js';
import { createControlApp } from './control.js';
import { Counters } from './counters.js';
import { SandboxData, type UserRecord } from './data.js';
import { Faults } from './faults.js';
import { loadFixture } from './fixture.js';
import type { ClientCredentials, RunningSandbox, SandboxOptions } from './index.js';
import {
  AUTH_PREFIX,
  createOAuthServer,
  DEFAULT_CLIENTS,
  type LoginAccount,
  type LoginAccounts,
  READ_SCOPE,
  type SandboxClientConfig,
  TOKEN_ROUTE,
  WRITE_SCOPE,
} from './oauth.js';
import { API_BASE } from './resources.js';
import { apiRoutes } from './routes/index.js';
import { demoFixture } from './seed.js';
import { createTokenGuard } from './token-guard.js';

/** The default API key. */
export const DEFAULT_API_KEY = 'sandbox-api-key';
/** The counter (and fault-rule) key of the token endpoint. */
export const TOKEN_COUNTER_KEY = 'POST /token';

const DEFAULTS = {
  host: '127.0.0.1',
  port: 0,
  tokenTtlSeconds: 3600,
  pageSize: 30,
  maxPageSize: 500,
  retentionSeconds: 30 * 24 * 3600,
};

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`sandbox option ${name} must be a positive integer, got ${value}`);
  return value;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      if (address === null || typeof address === 'string') reject(new Error('sandbox: no TCP address'));
      else resolve(address);
    });
  });
}

function urlHost(host: string): string {
  // A wildcard address is not reachable as such: advertise loopback.
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function pick(clients: readonly SandboxClientConfig[], wantWrite: boolean): ClientCredentials {
  const found =
    clients.find((c) => c.scopes.includes(READ_SCOPE) && c.scopes.includes(WRITE_SCOPE) === wantWrite) ??
    clients[0];
  return { clientId: found?.clientId ?? '', clientSecret: found?.clientSecret ?? '' };
}

function loginAccount(user: UserRecord): LoginAccount {
  return {
    id: user.id,
    account: user.user,
    firstname: user.firstname,
    lastname: user.lastname,
    email: user.emailAddress,
  };
}

/**
 * The users the interactive login may log in: by account or UUID, not deleted, not locked.
 * `loginAs` (the `ssoLoginAs` fault) names someone to log in instead of a valid hint.
 */
export function loginAccounts(
  data: SandboxData,
  loginAs: () => string | undefined = () => undefined,
): LoginAccounts {
  return {
    find(id) {
      const user = data.users.get(id);
      return user && user.deleted === null && !user.locked ? loginAccount(user) : undefined;
    },
    byLoginHint(hint) {
      if (!hint) return { error: 'login_hint is required' };
      const user = data.userByAccount(hint) ?? data.find('users', hint);
      if (!user) return { error: `unknown user "${hint}"` };
      if (user.deleted !== null) return { error: `user "${user.user}" is deleted` };
      if (user.locked) return { error: `user "${user.user}" is locked` };
      const substitute = loginAs();
      if (substitute !== undefined) {
        const other = data.userByAccount(substitute) ?? data.find('users', substitute);
        if (!other) return { error: `ssoLoginAs names an unknown user "${substitute}"` };
        return loginAccount(other);
      }
      return loginAccount(user);
    },
  };
}

/**
 * Starts a sandbox IDM: one loopback HTTP server carrying oidc-provider under `/iserv/auth` and
 * the IDM API v1 under `/iserv/idm/api/v1`, in-memory data seeded and/or loaded from a fixture.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const host = options.host ?? DEFAULTS.host;
  const logger = options.logger ?? silentLogger();
  const clock = options.clock ?? systemClock;
  const tokenTtlSeconds = positiveInt('tokenTtlSeconds', options.tokenTtlSeconds ?? DEFAULTS.tokenTtlSeconds);
  const maxPageSize = positiveInt('maxPageSize', options.maxPageSize ?? DEFAULTS.maxPageSize);
  const pageSize = Math.min(positiveInt('pageSize', options.pageSize ?? DEFAULTS.pageSize), maxPageSize);
  const retentionSeconds = options.retentionSeconds ?? DEFAULTS.retentionSeconds;
  if (!(retentionSeconds >= 0)) throw new TypeError('sandbox option retentionSeconds must be >= 0');
  const clients = options.clients ?? DEFAULT_CLIENTS;
  if (clients.length === 0) throw new TypeError('sandbox option clients must not be empty');
  const apiKeys = options.apiKeys ?? [DEFAULT_API_KEY];

  const data = new SandboxData(clock, retentionSeconds * 1000);
  if (options.seed ?? true) loadFixture(data, demoFixture(clock.now()), clock.now());
  if (options.fixture !== undefined) loadFixture(data, options.fixture, clock.now());
  const counters = new Counters();

  let route: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => {
    if (route) route(req, res);
    else {
      res.statusCode = 503;
      res.end();
    }
  });
  const address = await listen(server, options.port ?? DEFAULTS.port, host);
  const url = `http://${urlHost(host)}:${address.port}`;
  const issuer = `${url}${AUTH_PREFIX}`;
  const apiBaseUrl = `${url}${API_BASE}`;
  const tokenEndpoint = `${issuer}${TOKEN_ROUTE}`;

  let faults: Faults;
  try {
    const settings = { clock, pageSize, maxPageSize, hydraPrefix: options.hydraPrefix ?? true };
    const routes = apiRoutes({
      tokenUrl: tokenEndpoint,
      hydraPrefix: settings.hydraPrefix,
      pageSize,
      maxPageSize,
    });
    // Rules may match only what goes through the fault injector: the served routes and the token endpoint.
    faults = new Faults([...routes.map((r) => `${r.method} ${r.path}`), TOKEN_COUNTER_KEY], options.faults);
    const oauth = await createOAuthServer({
      issuer,
      audience: apiBaseUrl,
      clients,
      ...(options.clientAuthMethods === undefined ? {} : { clientAuthMethods: options.clientAuthMethods }),
      tokenTtlSeconds,
      logger,
      ...(options.interactiveLogin
        ? {
            interactiveLogin: options.interactiveLogin,
            accounts: loginAccounts(data, () => faults.get().ssoLoginAs),
          }
        : {}),
    });
    const guard = createTokenGuard({ issuer, audience: apiBaseUrl, jwks: oauth.publicJwks, apiKeys });
    const app = createSandboxApp({
      routes,
      data,
      settings,
      guard,
      faults,
      counters,
      logger,
      control: createControlApp(faults, counters),
    });
    const api = getRequestListener(app.fetch);
    const tokenPath = `${AUTH_PREFIX}${TOKEN_ROUTE}`;

    route = (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (path !== AUTH_PREFIX && !path.startsWith(`${AUTH_PREFIX}/`)) {
        void api(req, res);
        return;
      }
      if (path !== tokenPath || req.method !== 'POST') {
        oauth.handle(req, res);
        return;
      }
      counters.increment(TOKEN_COUNTER_KEY);
      void faults.decide(TOKEN_COUNTER_KEY, 'token').then((outcome) => {
        if (outcome.kind === 'pass') oauth.handle(req, res);
        else if (outcome.kind === 'drop') req.socket.destroy();
        else {
          res.writeHead(outcome.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          res.end(
            JSON.stringify({
              error: outcome.status === 503 ? 'temporarily_unavailable' : 'server_error',
              error_description: outcome.detail,
            }),
          );
        }
      });
    };
  } catch (error) {
    server.close();
    throw error;
  }

  logger.info({ url, issuer, apiBaseUrl }, 'sandbox IDM listening');
  let closing: Promise<void> | undefined;
  return {
    url,
    issuer,
    apiBaseUrl,
    tokenEndpoint,
    clients: { readWrite: pick(clients, true), readOnly: pick(clients, false) },
    apiKey: apiKeys[0] ?? '',
    faults: {
      get: () => faults.get(),
      set: (patch) => faults.set(patch),
      reset: () => faults.reset(),
    },
    counters: {
      snapshot: () => counters.snapshot(),
      get: (key) => counters.get(key),
      total: () => counters.total(),
      reset: () => counters.reset(),
    },
    data,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // Requests still in flight get a moment to finish, then their connections are cut.
        setTimeout(() => server.closeAllConnections(), 250).unref();
      });
      return closing;
    },
  };
}
