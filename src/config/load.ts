import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import path from 'node:path';
import type { z } from 'zod';
import { serverOrigin } from '../http/public-url.js';
import { JsonFileError, parseJsonFile } from '../lib/json-syntax.js';
import { hasControlCharacter } from '../lib/legacy-id.js';
import { utf8Text } from '../lib/utf8-text.js';
import { SSO_PATHS } from './fixed-paths.js';
import {
  type ConfigFile,
  configSchema,
  type SecretRef,
  type SuccessorConfig,
  type SuccessorTuning,
} from './schema.js';

/** A configuration that cannot be used: names the file, the JSON path and the reason. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly file: string,
    readonly problems: { path: string; message: string }[],
  ) {
    super(
      `invalid configuration in ${file}:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`,
    );
  }
}

type AuthConfig = NonNullable<SuccessorConfig['auth']>;
type ResolvedAuth =
  | (Omit<Extract<AuthConfig, { type: 'oauth2' }>, 'clientSecret'> & { clientSecret: string })
  | (Omit<Extract<AuthConfig, { type: 'apiKey' }>, 'key'> & { key: string });

/** A successor to call: where, how to sign in (secrets resolved), and the connection's tuning. */
export type ResolvedSuccessorConfig = SuccessorTuning & { baseUrl: string; auth: ResolvedAuth };

/**
 * The successor block as the file gives it, secrets resolved. Production mode has `baseUrl` and
 * `auth` (the schema refuses a file without them); sandbox mode may leave them out, as the
 * embedded sandbox is the successor, and still takes the tuning.
 */
export type ConfiguredSuccessor = SuccessorTuning &
  Partial<Pick<ResolvedSuccessorConfig, 'baseUrl' | 'auth'>>;

/** The SSO block with the OIDC client secret resolved. */
export type ResolvedSsoConfig = Omit<ConfigFile['sso'], 'oidc'> & {
  oidc: (Omit<NonNullable<ConfigFile['sso']['oidc']>, 'clientSecret'> & { clientSecret: string }) | undefined;
};

/** The store block with the PostgreSQL URL resolved. */
export type ResolvedStoreConfig =
  | Extract<ConfigFile['store'], { type: 'sqlite' }>
  | (Omit<Extract<ConfigFile['store'], { type: 'postgres' }>, 'url'> & { url: string });

/** The metrics block with its password resolved. */
export type ResolvedMetricsConfig = Omit<ConfigFile['metrics'], 'password'> & {
  password: string | undefined;
};

type MigrationFile = ConfigFile['migration'];
type LegacyUpstreamFile = NonNullable<MigrationFile['legacy']>;

/** The migration block with the legacy upstream's and the dashboard's passwords resolved. */
export type ResolvedMigrationConfig = Omit<MigrationFile, 'legacy' | 'dashboard'> & {
  legacy: (Omit<LegacyUpstreamFile, 'password'> & { password: string }) | undefined;
  dashboard: Omit<MigrationFile['dashboard'], 'password'> & { password: string | undefined };
};

/** The configuration the process runs with: defaults applied, secrets resolved, env overrides applied. */
export interface AppConfig extends Omit<ConfigFile, 'successor' | 'sso' | 'store' | 'metrics' | 'migration'> {
  migration: ResolvedMigrationConfig;
  successor: ConfiguredSuccessor | undefined;
  sso: ResolvedSsoConfig;
  store: ResolvedStoreConfig;
  metrics: ResolvedMetricsConfig;
  /** `sandbox` when the embedded sandbox IDM is the successor; `production` otherwise. */
  mode: 'sandbox' | 'production';
  /** The file the configuration came from; undefined for the embedded defaults. */
  source: string | undefined;
  /** The files its secrets are read from (`{"file": …}`), resolved: nothing may write to them. */
  secretFiles: readonly string[];
}

/** Which secret references must resolve (see `LoadConfigOptions.secrets`). */
export type SecretsNeeded = 'all' | 'store' | 'none';

export interface LoadConfigOptions {
  /** Config file path; when absent, `IDM_COMPAT_CONFIG`, else the embedded sandbox defaults. */
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /**
   * `store`: only the store's secret must resolve (a PostgreSQL URL); the others are left empty
   * when their variable or file is missing. For the commands that open the store alone (usage,
   * shadow report, apiuser, ids export and import), run from an operator's shell that need not
   * hold the service's secrets (the old server's or the successor's password). `none`: no secret
   * must resolve, for a command that connects to nothing (`mappings check` without `--live`).
   */
  secrets?: SecretsNeeded;
}

/** Reads, validates and resolves the configuration; throws ConfigError naming file, JSON path and reason. */
export function loadConfig(options: LoadConfigOptions = {}): AppConfig {
  const env = options.env ?? process.env;
  const file = options.file ?? (env.IDM_COMPAT_CONFIG || undefined);
  const label = file ?? '(embedded defaults)';
  const raw = file === undefined ? { sandbox: { enabled: true } } : readJson(file);
  return parseConfig(raw, {
    label,
    env,
    baseDir: file === undefined ? process.cwd() : path.dirname(file),
    file,
    secrets: options.secrets,
  });
}

/** Validates an already-parsed JSON value as configuration (used by loadConfig and tests). */
export function parseConfig(
  raw: unknown,
  context: {
    label: string;
    env: NodeJS.ProcessEnv;
    baseDir: string;
    file?: string | undefined;
    secrets?: SecretsNeeded | undefined;
  },
): AppConfig {
  const result = configSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(context.label, issuesOf(result.error));
  const parsed = result.data;
  const problems: { path: string; message: string }[] = [];
  const secret = (ref: SecretRef, at: string): string => {
    try {
      return resolveSecret(ref, context.env, context.baseDir);
    } catch (error) {
      const needed = context.secrets ?? 'all';
      if (needed === 'all' || (needed === 'store' && at === 'store.url'))
        problems.push({ path: at, message: (error as Error).message });
      return '';
    }
  };
  let successor: ConfiguredSuccessor | undefined;
  if (parsed.successor) {
    const { auth, ...rest } = parsed.successor;
    successor = rest;
    if (auth)
      successor.auth =
        auth.type === 'oauth2'
          ? { ...auth, clientSecret: secret(auth.clientSecret, 'successor.auth.clientSecret') }
          : { ...auth, key: secret(auth.key, 'successor.auth.key') };
    // Sent as a header value: a line break or another control character fails every call, with
    // words about the base URL. The value is never quoted.
    if (successor.auth?.type === 'apiKey' && hasControlCharacter(successor.auth.key))
      problems.push({
        path: 'successor.auth.key',
        message: 'holds a line break or another control character, which no header value may',
      });
  }
  const ssoOidc = parsed.sso.oidc;
  const sso: ResolvedSsoConfig = {
    ...parsed.sso,
    oidc: ssoOidc && { ...ssoOidc, clientSecret: secret(ssoOidc.clientSecret, 'sso.oidc.clientSecret') },
  };
  const store: ResolvedStoreConfig =
    parsed.store.type === 'postgres'
      ? { ...parsed.store, url: secret(parsed.store.url, 'store.url') }
      : parsed.store;
  // The URL holds a password: the messages name the rule broken, never the value.
  if (store.type === 'postgres' && store.url !== '') {
    if (!/^postgres(ql)?:\/\//.test(store.url))
      problems.push({ path: 'store.url', message: 'not a postgres:// or postgresql:// connection URL' });
    else {
      // Parsed as the driver parses it at start-up, which otherwise fails with a bare "Invalid URL";
      // loaded here only, so that a SQLite proxy never loads the PostgreSQL driver's parts.
      const { parse } = createRequire(import.meta.url)(
        'pg-connection-string',
      ) as typeof import('pg-connection-string');
      try {
        parse(store.url);
      } catch (error) {
        problems.push({
          path: 'store.url',
          message:
            error instanceof TypeError
              ? 'not a connection URL the PostgreSQL driver accepts (check the host, the port (1-65535) and that special characters in the user and password are percent-encoded)'
              : `names a file the PostgreSQL driver cannot read (${error instanceof Error ? error.message : String(error)})`,
        });
      }
    }
  }
  const metrics: ResolvedMetricsConfig = {
    ...parsed.metrics,
    password: parsed.metrics.password && secret(parsed.metrics.password, 'metrics.password'),
  };
  const upstream = parsed.migration.legacy;
  const migration: ResolvedMigrationConfig = {
    ...parsed.migration,
    legacy: upstream && { ...upstream, password: secret(upstream.password, 'migration.legacy.password') },
    dashboard: {
      ...parsed.migration.dashboard,
      password:
        parsed.migration.dashboard.password &&
        secret(parsed.migration.dashboard.password, 'migration.dashboard.password'),
    },
  };
  const port = context.env.PORT;
  if (port !== undefined && port !== '' && !(/^\d{1,5}$/.test(port) && Number(port) <= 65535)) {
    problems.push({ path: '(env PORT)', message: `not a port number (0-65535): ${JSON.stringify(port)}` });
  }
  const host = context.env.HOST || parsed.server.host;
  const hostProblem = listenHostProblem(host);
  if (hostProblem)
    problems.push({ path: context.env.HOST ? '(env HOST)' : 'server.host', message: hostProblem });
  // The proxy's links (SSO, the default Host of HTTP/1.0 requests) name its listen address unless
  // legacy.publicUrl says otherwise, and no URL can name an IPv6 address with a zone (`%eth0`):
  // browsers and Node's URL refuse it, encoded or not.
  const zone = /^[0-9a-f:.]+%(.+)$/i.exec(host)?.[1];
  if (zone !== undefined && !parsed.legacy.publicUrl) {
    problems.push({
      path: context.env.HOST ? '(env HOST)' : 'server.host',
      message: `${JSON.stringify(host)} has a zone (%${zone}), which no URL can carry, and the proxy's links are built from the listen address: set legacy.publicUrl to the URL clients reach it at`,
    });
  }
  const server = {
    ...parsed.server,
    host,
    port: port ? Number(port) : parsed.server.port,
  };
  const redirectProblem = redirectUriProblem(parsed, server);
  if (redirectProblem) problems.push(redirectProblem);
  if (problems.length > 0) throw new ConfigError(context.label, problems);
  return {
    ...parsed,
    server,
    successor,
    sso,
    store,
    metrics,
    migration,
    mode: parsed.sandbox.enabled ? 'sandbox' : 'production',
    source: context.file,
    secretFiles: secretFilesOf(parsed, context.baseDir),
  };
}

/** The `{"file": …}` secret references anywhere in `value`, resolved as {@link resolveSecret} reads them. */
function secretFilesOf(value: unknown, baseDir: string): string[] {
  if (typeof value !== 'object' || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item) => secretFilesOf(item, baseDir));
  const keys = Object.keys(value);
  const file = (value as { file?: unknown }).file;
  if (keys.length === 1 && typeof file === 'string') return [path.resolve(baseDir, file)];
  return Object.values(value).flatMap((item) => secretFilesOf(item, baseDir));
}

/**
 * Refuses an `sso.oidc.redirectUri` on another origin than the one browsers reach the proxy at
 * (`legacy.publicUrl`, else the listen address): `/sso/continue` sets the cookie that binds a
 * login to the browser for its own host, so the browser would never bring it to a callback
 * elsewhere, and every login would end in "started in another browser". With port 0 and no
 * `legacy.publicUrl` the proxy's origin is not known before it listens: refused as well.
 * Without `legacy.publicUrl` the browser comes back to the proxy itself, with no reverse proxy
 * to map another path to its callback: a path other than `/sso/callback` is refused too (such a
 * callback would be answered 404).
 */
function redirectUriProblem(
  parsed: ConfigFile,
  server: { host: string; port: number; tls?: unknown },
): { path: string; message: string } | undefined {
  const redirectUri = parsed.sso.oidc?.redirectUri;
  if (redirectUri === undefined) return undefined;
  const configured = parsed.legacy.publicUrl;
  let reached: string;
  try {
    reached = new URL(
      configured ??
        serverOrigin(server.tls !== undefined, server.host, server.port === 0 ? undefined : server.port),
    ).origin;
  } catch {
    return undefined; // a listen address no URL can name is refused above
  }
  const { origin, pathname } = new URL(redirectUri);
  if (origin === reached) {
    if (configured !== undefined || pathname === SSO_PATHS.callback) return undefined;
    return {
      path: 'sso.oidc.redirectUri',
      message: `has the path ${pathname}, but without legacy.publicUrl browsers come back to the proxy itself, whose callback is ${SSO_PATHS.callback}: leave redirectUri out, give it the path ${SSO_PATHS.callback}, or, behind a reverse proxy that forwards another path there, set legacy.publicUrl`,
    };
  }
  return {
    path: 'sso.oidc.redirectUri',
    message: `is on ${origin}, but browsers start the login on ${reached} (${configured === undefined ? 'the listen address; set legacy.publicUrl' : 'legacy.publicUrl'}): the cookie binding the login to the browser is set there and would never come along to the callback; leave redirectUri out ({publicUrl}/sso/callback) or give it publicUrl's origin`,
  };
}

/** Resolves a secret reference: literal, `{env}` or `{file}` (relative to the config file's folder). */
export function resolveSecret(ref: SecretRef, env: NodeJS.ProcessEnv, baseDir: string): string {
  if (typeof ref === 'string') return ref;
  if ('env' in ref) {
    const value = env[ref.env];
    if (value === undefined) throw new Error(`environment variable ${ref.env} is not set`);
    if (value === '') throw new Error(`environment variable ${ref.env} is empty`);
    return value;
  }
  const file = path.resolve(baseDir, ref.file);
  let value: string;
  try {
    value = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new Error(`cannot read secret file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (value === '') throw new Error(`secret file ${file} is empty`);
  return value;
}

function readJson(file: string): unknown {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new ConfigError(file, [
      { path: '(file)', message: `cannot read: ${(error as NodeJS.ErrnoException).code}` },
    ]);
  }
  const read = utf8Text(bytes);
  if ('problem' in read)
    throw new ConfigError(file, [{ path: '(file)', message: `the file ${read.problem}` }]);
  const text = read.text;
  try {
    return parseJsonFile(text);
  } catch (error) {
    if (!(error instanceof JsonFileError)) throw error;
    throw new ConfigError(file, [{ path: '(file)', message: error.message }]);
  }
}

/** Turns zod issues into `{path, message}` with dotted JSON paths (`successor.auth.clientId`). */
export function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({
    path: issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.'),
    // A refused key of a record (`migration.modes`): why the key was refused, not zod's "Invalid
    // key in record".
    message:
      issue.code === 'invalid_key' && issue.issues[0] !== undefined
        ? `not a valid key: ${issue.issues[0].message}`
        : issue.message,
  }));
}

/**
 * What is wrong with a listen address: it must be an IP address (IPv6 without brackets, perhaps
 * with a zone) or a host name a URL can carry (underscores too, as Docker service names have).
 * Anything else passed the check and failed `serve` with a bare "Invalid URL" (the proxy builds
 * its own URL from it); so did a dotted number that is no IPv4 address (`10.0.0.300`).
 */
function listenHostProblem(host: string): string | undefined {
  if (isIP(host.replace(/%.+$/, '')) !== 0) return undefined;
  const bracketed = /^\[(.+)\]$/.exec(host)?.[1];
  if (bracketed !== undefined && isIP(bracketed) === 6)
    return `${JSON.stringify(host)}: an IPv6 address to listen on goes without brackets (${bracketed})`;
  const name =
    /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?$/.test(host) &&
    !/(?:^|\.)\d+\.?$/.test(host) &&
    !host.includes('..');
  return name && URL.canParse(`http://${host}/`)
    ? undefined
    : `${JSON.stringify(host)} is no IP address or host name`;
}
