import { z } from 'zod';
import { normalizeRange } from '../auth/addresses.js';
import { HTTP_TOKEN } from '../lib/http-token.js';
import { hasControlCharacter } from '../lib/legacy-id.js';
import { OPERATION_PATTERN, OPERATION_PATTERN_RULE } from '../lib/operation-patterns.js';
import { SCHEMA_NAME, SCHEMA_NAME_RULE } from '../store/postgres/schema-name.js';
import { DOCS_FOLDER, takenFixedPath } from './fixed-paths.js';

/**
 * A secret is given as a literal (for development only), or, as production should, by reference:
 * `{"env": "VAR"}` reads an environment variable, `{"file": "/run/secrets/x"}` a file (trailing
 * newline trimmed). References are resolved once at start-up by `resolveSecret`.
 */
export const secretSchema = z
  .union(
    [
      z.string().min(1),
      z.strictObject({ env: z.string().min(1).describe('Environment variable that holds the secret') }),
      z.strictObject({ file: z.string().min(1).describe('File that holds the secret') }),
    ],
    {
      // zod's own word for a value none of the three forms fits is "Invalid input".
      error: (issue) =>
        issue.input === undefined
          ? 'is required'
          : 'must be a secret: a non-empty string, {"env": "VAR"} or {"file": "/path"}',
    },
  )
  .describe('A secret: a literal string, {"env": "VAR"} or {"file": "/path"}');
export type SecretRef = z.infer<typeof secretSchema>;

/**
 * A CIDR range, IPv4 or IPv6, e.g. `10.0.0.0/8` or `2001:db8::/32`: the same strict rules as
 * API-user ranges (no `10.1/8` shorthand), with the same messages.
 */
export const cidrSchema = z
  .string()
  .superRefine((value, ctx) => {
    try {
      normalizeRange(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : 'not a CIDR range' });
    }
  })
  .describe('CIDR range, IPv4 or IPv6');

/**
 * The longest throttle time, 365 days: a block's end is stored as a time in milliseconds, and one
 * beyond 2^53 ms could not be read back (Node 24's SQLite refuses it, and a Date of it is invalid).
 */
const YEAR_SECONDS = 365 * 24 * 3600;
/**
 * The longest time a Node timer takes (2^31 − 1 ms, about 24.8 days): a longer one fires after
 * 1 ms (with a TimeoutOverflowWarning), so a timeout beyond it would fail every call at once.
 */
const TIMER_MAX_MS = 2_147_483_647;

const urlSchema = z.url({ protocol: /^https?$/ });

/**
 * A base URL that paths are appended to: no credentials (they would be ignored, or handed to
 * clients in links; secrets come from the environment, SPEC 2), no query or fragment (they would
 * be dropped, or swallow the path). `use` says why, in the message.
 */
function baseUrlSchema(use: string) {
  return urlSchema.refine(
    (url) => holdsNoCredentials(url) && !/[?#]/.test(url),
    `must be scheme://host[:port][/path]: no credentials, query or fragment (${use})`,
  );
}

/** Whether a URL has no `user:password@`; true for no URL at all, which urlSchema refuses itself (zod runs a refinement all the same). */
function holdsNoCredentials(url: string): boolean {
  if (!URL.canParse(url)) return true;
  const { username, password } = new URL(url);
  return username === '' && password === '';
}

const serverSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1').describe('Address to listen on (env HOST overrides)'),
    port: z.int().min(0).max(65535).default(8080).describe('Port to listen on (env PORT overrides)'),
    trustedProxies: z
      .array(cidrSchema)
      .default([])
      .describe('Peers whose X-Forwarded-For is believed: the client is the rightmost untrusted entry'),
    tls: z
      .strictObject({
        cert: z.string().min(1).describe('PEM certificate chain file'),
        key: z.string().min(1).describe('PEM private key file'),
      })
      .optional()
      .describe('Serve HTTPS instead of HTTP'),
    bodyLimitBytes: z
      .int()
      .min(1024)
      // A legacy body is one user, group or role (a few KiB). A recording's line holds one as
      // parsed JSON written again, which a body of numbers like `9e20` makes over four times as
      // long, and compare and replay read lines up to 256 MiB.
      .max(16 * 1_048_576)
      .default(1_048_576)
      .describe('Largest request body accepted (413 above); at most 16 MiB'),
    shutdownTimeoutMs: z
      .int()
      .min(0)
      .max(TIMER_MAX_MS)
      .default(10_000)
      .describe('How long graceful shutdown waits for in-flight requests before closing connections'),
    keepAliveTimeoutMs: z
      .int()
      .min(1_000)
      .max(290_000)
      .default(65_000)
      .describe(
        'How long an idle keep-alive connection stays open; longer than clients and load balancers keep theirs, so the server is never the side that closes a connection a client is reusing',
      ),
    maxConnections: z
      .int()
      .min(1)
      .optional()
      .describe(
        'Most client connections open at once (default: no limit); a new one past it is closed unanswered, counted in idm_compat_connections_dropped_total and logged. Keep it under the open-file limit, which the successor and the store need too',
      ),
    requestTimeoutMs: z
      .int()
      .min(1_000)
      .max(TIMER_MAX_MS)
      .default(60_000)
      .describe(
        'How long a client may take to send a whole request, headers and body (408 after, and the connection closes); not the time to answer it',
      ),
    readinessTimeoutMs: z
      .int()
      .min(1)
      .max(TIMER_MAX_MS)
      .default(2_000)
      .describe(
        'How long /readyz waits for each check (store, successor token and read) before reporting it not ready',
      ),
  })
  .prefault({});

const legacySchema = z
  .strictObject({
    basePath: z
      .string()
      .regex(/^\/[A-Za-z0-9._~\-/]*[^/]$/, 'must start with "/" and not end with "/"')
      .default('/iserv/api')
      .describe('Path prefix of the legacy API'),
    namespaces: z
      .array(
        z
          .string()
          .regex(/^[A-Za-z0-9_-]+$/)
          .refine(
            (name) => name !== DOCS_FOLDER,
            `must not be "${DOCS_FOLDER}": the interactive docs live there`,
          ),
      )
      .min(1)
      .default(['Service'])
      .describe('Path namespaces the legacy operations answer under, e.g. ["Service", "IServ"]'),
    // Links are built as publicUrl + path: a query or fragment would swallow the path, and
    // credentials would be handed to every client in Location headers and SSO links.
    publicUrl: baseUrlSchema('links are built by appending paths to it')
      .optional()
      .describe(
        'URL clients reach the proxy at (for Location headers and SSO return_to); default from host/port',
      ),
  })
  .prefault({});

const oauth2AuthSchema = z.strictObject({
  type: z.literal('oauth2'),
  issuer: baseUrlSchema(
    'discovery is at {issuer}/.well-known/openid-configuration; the secret goes in clientSecret',
  ).describe('OAuth2/OIDC issuer; discovery at {issuer}/.well-known/openid-configuration'),
  clientId: z.string().min(1),
  clientSecret: secretSchema,
  scopes: z
    .strictObject({
      read: z.array(z.string().min(1)).min(1).default(['iserv:idm:api-read']),
      write: z.array(z.string().min(1)).min(1).default(['iserv:idm:api-read', 'iserv:idm:api-write']),
    })
    .prefault({})
    .describe('Scopes requested for read and for write calls'),
  authMethod: z
    .enum(['auto', 'client_secret_post', 'client_secret_basic'])
    .default('auto')
    .describe('Token endpoint authentication; auto picks what discovery advertises'),
  refreshMarginSeconds: z.int().min(0).default(60).describe('Renew a token this long before it expires'),
});

/**
 * Request headers that the successor client sets itself or that frame the request: an API key
 * sent under one of them breaks every call (`Content-Length`: undici refuses the request;
 * `Host`: the successor sees another host and refuses the key).
 */
const REQUEST_HEADERS_OF_THE_PROXY: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'accept',
  'accept-encoding',
  'proxy-connection',
]);

const apiKeyAuthSchema = z.strictObject({
  type: z.literal('apiKey'),
  key: secretSchema,
  header: z
    .string()
    .regex(HTTP_TOKEN, "must be an HTTP header name: letters, digits and !#$%&'*+.^_`|~-")
    .refine(
      (name) => !REQUEST_HEADERS_OF_THE_PROXY.has(name.toLowerCase()),
      'must not be a header the proxy sets itself or that frames the request (Host, Content-Length, Accept, …)',
    )
    .default('X-IServ-Authentication'),
});

// baseUrl and auth are optional here only because sandbox mode needs neither (the embedded sandbox
// is the successor) yet takes the tuning below; configSchema requires both otherwise.
const successorSchema = z.strictObject({
  baseUrl: baseUrlSchema('calls are made by appending paths to it; credentials go in successor.auth')
    .optional()
    .describe(
      'Base URL of the IDM API, e.g. https://school.example/iserv/idm/api/v1; required unless sandbox.enabled',
    ),
  auth: z
    .discriminatedUnion('type', [oauth2AuthSchema, apiKeyAuthSchema])
    .optional()
    .describe('How the proxy signs in to the IDM API; required unless sandbox.enabled'),
  timeouts: z
    .strictObject({
      connectMs: z.int().min(1).max(TIMER_MAX_MS).default(5_000),
      totalMs: z.int().min(1).max(TIMER_MAX_MS).default(15_000),
    })
    .prefault({}),
  retries: z
    .strictObject({
      max: z
        .int()
        .min(0)
        .max(10)
        .default(2)
        .describe('Retries of idempotent reads on network errors/502/503/504'),
      baseDelayMs: z.int().min(0).max(TIMER_MAX_MS).default(100),
    })
    .prefault({}),
  pool: z
    .strictObject({
      connections: z.int().min(1).default(32),
      keepAliveMs: z.int().min(0).max(TIMER_MAX_MS).default(30_000),
    })
    .prefault({}),
  pageSize: z.int().min(1).max(1000).default(100).describe('itemsPerPage asked of collection reads'),
  maxResponseBytes: z
    .int()
    .min(64 * 1024)
    .max(256 * 1024 * 1024)
    .default(32 * 1024 * 1024)
    .describe(
      'Largest successor answer read, in bytes (token and discovery answers included); a larger one is aborted and answered 502',
    ),
  pageConcurrency: z
    .int()
    .min(1)
    .max(16)
    .default(4)
    .describe(
      'Pages of one collection read fetched at the same time, the one being answered included (once the first page gave the total); more is faster for large lists and costs memory while they run',
    ),
});

const sandboxSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe('Start the embedded sandbox IDM and use it as the successor'),
    port: z.int().min(0).max(65535).default(0).describe('Loopback port of the sandbox (0: any free port)'),
    seed: z.boolean().default(true).describe('Load the demo data set'),
    fixture: z.string().min(1).optional().describe('JSON fixture file loaded into the sandbox'),
    ssoLogin: z
      .boolean()
      .default(true)
      .describe(
        "SSO signs users in at the sandbox's OpenID Provider (as with sso.oidc) unless sso.oidc is set; false: plain redirect to sso.target",
      ),
    hydraPrefix: z
      .boolean()
      .default(true)
      .describe(
        'Hydra collections with the hydra: prefix (true) or without it, as API Platform 4 writes them',
      ),
    pageSize: z
      .int()
      .min(1)
      .default(30)
      .describe('Items per page of the sandbox when a request names no itemsPerPage'),
    maxPageSize: z
      .int()
      .min(1)
      .default(500)
      .describe('Largest itemsPerPage of the sandbox; larger requests are clamped'),
    retentionSeconds: z
      .int()
      .min(0)
      .default(30 * 24 * 3600)
      .describe('Soft-deleted users and groups are purged this long after deletion (0: at the next request)'),
    faults: z
      .strictObject({
        latencyMs: z.int().min(0).max(600_000).default(0).describe('Added to every API and token request'),
        errorRate: z
          .number()
          .min(0)
          .max(1)
          .default(0)
          .describe('Share (0..1) of API requests answered with errorStatus'),
        errorStatus: z.int().min(400).max(599).default(503).describe('Status of the random failures'),
        tokenEndpointDown: z.boolean().default(false).describe('The token endpoint answers 503'),
      })
      .prefault({})
      .describe('Fault switches in effect from the start (changeable at run time, docs/sandbox.md)'),
  })
  .refine((sandbox) => sandbox.pageSize <= sandbox.maxPageSize, {
    path: ['pageSize'],
    message: 'must not be larger than sandbox.maxPageSize',
  })
  .prefault({});

const ssoOidcSchema = z
  .strictObject({
    issuer: baseUrlSchema(
      'discovery is at {issuer}/.well-known/openid-configuration; the secret goes in clientSecret',
    ).describe(
      "OpenID Provider issuer (the portal's login); discovery at {issuer}/.well-known/openid-configuration",
    ),
    clientId: z.string().min(1).describe('Client id of the proxy at the provider'),
    clientSecret: secretSchema.describe('Client secret of the proxy at the provider (a secret)'),
    // openid-client sends the code exchange's redirect_uri without the callback's query and
    // fragment, so with either no code was ever accepted (invalid_grant); RFC 6749 3.1.2 forbids
    // a fragment, and credentials would be handed to every browser in the authorization URL.
    redirectUri: baseUrlSchema(
      'the code exchange sends it without query and fragment, so the provider would refuse every code',
    )
      .optional()
      .describe('Callback registered at the provider; default {publicUrl}/sso/callback'),
    scopes: z
      .array(z.string().min(1))
      .min(1)
      .default(['openid', 'profile'])
      .refine((scopes) => scopes.includes('openid'), { message: 'must include "openid"' })
      .describe('Scopes of the authorization request'),
    usernameClaim: z
      .string()
      .min(1)
      .default('preferred_username')
      .describe(
        "ID token claim holding the username; `sub` equal to the user's successor UUID matches too. A matching username with another `sub` counts only while the successor's user the token was issued for still has it",
      ),
    loginTtlSeconds: z
      .int()
      .min(10)
      .max(3600)
      .default(300)
      .describe('How long a started login (state, nonce, PKCE verifier) waits for the callback'),
  })
  .describe('Act as OIDC relying party: check at the provider that the browser is the user the token names');

const ssoSchema = z
  .strictObject({
    ttlSeconds: z
      .int()
      .min(1)
      .max(3600)
      .default(60)
      .describe('How long an SSO token from POST /Service/Sso/authenticate stays valid (single use)'),
    target: urlSchema
      // Handed to every browser in the redirect: a password in it would be too.
      .refine(holdsNoCredentials, 'must not hold credentials (user:password@): every browser is sent to it')
      .optional()
      .describe(
        'Portal login target /sso/continue redirects to (login_hint added); default {publicUrl}/sso/landing',
      ),
    oidc: ssoOidcSchema.optional(),
  })
  .prefault({})
  .describe('Single sign-on (docs/sso.md)');

const storeSchema = z
  .discriminatedUnion(
    'type',
    [
      z.strictObject({
        // The default, as documented: `"store": {"path": …}` is a SQLite store.
        type: z.literal('sqlite').default('sqlite'),
        path: z
          .string()
          .min(1)
          .default('./data/idm-compat.db')
          .describe('SQLite database file (created if missing)'),
      }),
      z.strictObject({
        type: z.literal('postgres'),
        url: secretSchema.describe(
          'Connection URL postgres://user:password@host:5432/database (a secret: it holds the password)',
        ),
        poolSize: z.int().min(1).max(1000).default(10).describe('Connections per replica at most'),
        schema: z
          .string()
          .regex(SCHEMA_NAME, SCHEMA_NAME_RULE)
          .optional()
          .describe(
            "Schema holding idm-compat's tables (created if missing); default: the connection's search_path",
          ),
        connectTimeoutMs: z
          .int()
          .min(100)
          .max(600_000)
          .default(5000)
          .describe(
            'Giving up on opening one connection, or on waiting for a free one, after this long (ms)',
          ),
        statementTimeoutMs: z
          .int()
          .min(100)
          .max(600_000)
          .default(5000)
          .describe(
            'PostgreSQL cancels a statement that runs longer (statement_timeout, ms); a server that does not answer at all is given up on 1 s later',
          ),
        credentialsPollMs: z
          .int()
          .min(100)
          .max(60_000)
          .default(500)
          .describe(
            "How often a replica reads the credentials version, i.e. sees other replicas' API-user changes (ms)",
          ),
        startup: z
          .strictObject({
            attempts: z
              .int()
              .min(1)
              .max(1000)
              .default(30)
              .describe('Connection attempts at start-up before giving up'),
            initialDelayMs: z
              .int()
              .min(10)
              .max(60_000)
              .default(500)
              .describe('Wait after the first failed attempt (ms)'),
            maxDelayMs: z
              .int()
              .min(10)
              .max(600_000)
              .default(10_000)
              .describe('Longest wait between attempts; the wait doubles up to it (ms)'),
          })
          .prefault({})
          .describe('Retrying while the database is not reachable yet at start-up'),
      }),
    ],
    {
      error: (issue) =>
        issue.code === 'invalid_union' ? 'expected "sqlite" (the default) or "postgres"' : undefined,
    },
  )
  .prefault({ type: 'sqlite' })
  .describe(
    'Where state lives: SQLite for one box (default), PostgreSQL for several replicas (docs/scaling.md)',
  );

const mappingsSchema = z
  .strictObject({
    dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Folder holding the mapping profiles, relative to the working directory; unset: ./mappings when it holds the profile, else the profiles shipped with idm-compat',
      ),
    profile: z.string().min(1).default('iserv-idm-v1').describe('Profile folder under dir'),
  })
  .prefault({});

const authSchema = z
  .strictObject({
    realm: z
      .string()
      .min(1, 'must not be empty')
      .max(100, 'at most 100 characters')
      .regex(/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/, 'printable ASCII without quotes or backslashes')
      .default('idm-compat')
      .describe('Realm named in WWW-Authenticate: Basic realm="…"'),
    credentialCacheTtlSeconds: z
      .int()
      .min(0)
      .max(3600)
      .default(60)
      .describe(
        'How long a verified API-user credential is remembered so scrypt does not run per request (0: off)',
      ),
    credentialCacheMaxEntries: z.int().min(1).default(1000).describe('Most credentials remembered at once'),
    kdfConcurrency: z
      .int()
      .min(1)
      .max(64)
      .default(2)
      .describe(
        'Most password key derivations (scrypt, 32 MiB each while it runs) at once; further credential checks past the cache wait their turn',
      ),
    throttle: z
      .strictObject({
        pairFreeFailures: z
          .int()
          .min(1)
          .default(5)
          .describe('Failed logins of one API user from one address before that pair is slowed down'),
        userFreeFailures: z
          .int()
          .min(1)
          .default(20)
          .describe('Failed logins of one API user from all addresses before the user is slowed down'),
        addressFreeFailures: z
          .int()
          .min(1)
          .default(10)
          .describe(
            'Failed logins with unknown API-user names from one address before that address is slowed down',
          ),
        baseDelaySeconds: z
          .int()
          .min(1)
          .max(YEAR_SECONDS)
          .default(1)
          .describe('First back-off; it doubles with every further failure'),
        maxDelaySeconds: z.int().min(1).max(YEAR_SECONDS).default(900).describe('Longest back-off'),
        forgetAfterSeconds: z
          .int()
          .min(60)
          .max(YEAR_SECONDS)
          .default(3600)
          .describe('A counter whose last failure is older than this starts again from zero'),
      })
      .prefault({})
      .describe('Failed-login throttling (docs/auth.md)'),
  })
  .prefault({});

const loggingSchema = z
  .strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    unauthenticatedPerSecond: z
      .int()
      .min(0)
      .default(50)
      .describe(
        'At most this many completion lines per second for requests answered 401, 404, 405 or 429 (floods without credentials, path and method probing); the rest are counted in one "suppressed N request lines" line per second. 0: no limit',
      ),
    bufferBytes: z
      .int()
      .min(0)
      .max(16_383)
      .default(4096)
      .describe(
        'Log lines for stdout are collected until this many bytes are waiting (and at least once a second, and at exit) and written together; 0 writes each line as it comes (at most 16383)',
      ),
  })
  .prefault({});

const LOOPBACK_RANGES = ['127.0.0.0/8', '::1/128'];

const metricsSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Serve Prometheus metrics'),
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._~/-]*$/, 'an absolute path such as /metrics')
      .default('/metrics')
      .describe('Where the metrics are served (outside legacy.basePath)'),
    username: z.string().min(1).optional().describe('Basic user name the scraper must send (with password)'),
    password: secretSchema.optional().describe('Basic password the scraper must send (a secret)'),
    ranges: z
      .array(cidrSchema)
      .min(1)
      .default(LOOPBACK_RANGES)
      .describe('Source address ranges allowed to read the metrics (default: loopback only)'),
    processMetrics: z
      .boolean()
      .default(true)
      .describe("Include Node's process metrics (CPU, memory, event loop)"),
  })
  .refine((metrics) => (metrics.username === undefined) === (metrics.password === undefined), {
    message: 'username and password go together',
    path: ['password'],
  })
  .prefault({})
  .describe('Prometheus metrics (docs/operations.md)');

const usageSchema = z
  .strictObject({
    flushIntervalSeconds: z
      .number()
      .min(0.1)
      .max(300)
      .default(5)
      .describe('How often the counted requests are written to the store (and always at shutdown)'),
  })
  .prefault({})
  .describe('The usage inventory (docs/operations.md)');

/** An operation id (`user.list`), a glob over ids (`group.*`, `group.link.*`) or `*`. */
const operationPatternSchema = z.string().regex(OPERATION_PATTERN, OPERATION_PATTERN_RULE);

/** A calendar date or a date-time with offset, e.g. `2026-09-01` or `2026-09-01T00:00:00Z`. */
const instantSchema = z.union([z.iso.date(), z.iso.datetime({ offset: true })], {
  error: 'must be a date (2026-09-01) or a date and time with its offset (2026-09-01T08:00:00+02:00)',
});

const deprecationEntrySchema = z
  .strictObject({
    deprecation: instantSchema.describe('When the operation was (or will be) deprecated'),
    sunset: instantSchema.optional().describe('When the operation stops working'),
    link: z
      .string()
      // Checked as written: the URL check drops tabs and line breaks unseen, and the address would
      // not be the one given.
      .refine((url) => !hasControlCharacter(url), 'must not hold a control character')
      // A `%` that begins no escape (`%zz`) would go out as it is, no URI reference.
      .refine(
        (url) => !/%(?![0-9A-Fa-f]{2})/.test(url),
        'must write a % only as the start of an escape such as %20',
      )
      .pipe(urlSchema)
      .optional()
      .describe('A page about the deprecation (and the sunset)')
      .meta({ format: 'uri' }),
  })
  .superRefine((entry, ctx) => {
    if (entry.sunset !== undefined && Date.parse(entry.sunset) < Date.parse(entry.deprecation)) {
      ctx.addIssue({ code: 'custom', path: ['sunset'], message: 'must not be before deprecation' });
    }
  });

const deprecationSchema = z
  .strictObject({
    operations: z
      .record(operationPatternSchema, deprecationEntrySchema)
      .default({})
      .describe('Operation id, glob (group.*) or * → Deprecation, Sunset and Link headers on its answers'),
  })
  .prefault({})
  .describe('Deprecation headers, RFC 9745 and RFC 8594 (docs/operations.md)');

const migrationSchema = z
  .strictObject({
    legacy: z
      .strictObject({
        baseUrl: baseUrlSchema(
          'calls are made by appending paths to it; credentials go in migration.legacy.username/password',
        ).describe("The old server's legacy base, e.g. https://old.school.example/iserv/api"),
        username: z.string().min(1).describe('The API user the proxy signs in to the old server with'),
        password: secretSchema.describe("Its password (a secret); callers' credentials are never forwarded"),
        timeouts: z
          .strictObject({
            connectMs: z
              .int()
              .min(1)
              .max(TIMER_MAX_MS)
              .default(5_000)
              .describe('Connect timeout of every call to the old server'),
            totalMs: z
              .int()
              .min(1)
              .max(TIMER_MAX_MS)
              .default(15_000)
              .describe(
                'How long the old server may take to answer (status and headers), and to send nothing while its body is read; a caller reading slowly is not counted',
              ),
          })
          .prefault({}),
        pool: z
          .strictObject({
            connections: z.int().min(1).default(32).describe('Keep-alive connections to the old server'),
            keepAliveMs: z
              .int()
              .min(0)
              .max(TIMER_MAX_MS)
              .default(30_000)
              .describe('Idle time before a pooled connection closes'),
          })
          .prefault({}),
      })
      .optional()
      .describe('The old server that still speaks the legacy API (docs/migration.md)'),
    modes: z
      .record(operationPatternSchema, z.enum(['translate', 'passthrough', 'shadow']))
      .default({})
      .describe('Operation id or glob → translate (default), passthrough or shadow; the most specific wins'),
    shadow: z
      .strictObject({
        sampleRate: z
          .number()
          .min(0)
          .max(1)
          .default(1)
          .describe('Share of shadowed calls that are also translated'),
        sticky: z
          .boolean()
          .default(false)
          .describe('Sample per API user (all or none of its calls) instead of per call'),
        timeoutMs: z
          .int()
          .min(1)
          .max(TIMER_MAX_MS)
          .default(5_000)
          .describe('Time box of one background translation'),
        maxConcurrent: z
          .int()
          .min(1)
          .default(8)
          .describe('Background translations at once; beyond it comparisons are skipped and counted'),
        writes: z
          .boolean()
          .default(false)
          .describe(
            'Also shadow writes: they are then applied to BOTH servers (docs/migration.md says why that is dangerous)',
          ),
      })
      .prefault({}),
    recording: z
      .strictObject({
        path: z.string().min(1).describe('NDJSON file of recorded requests and answers (redacted)'),
        operations: z
          .array(operationPatternSchema)
          .min(1)
          .default(['*'])
          .describe('Which operations to record'),
        maxBytes: z
          .int()
          .min(1024)
          .default(100 * 1024 * 1024)
          .describe('Size at which the file is rotated'),
        maxPendingLines: z
          .int()
          .min(1)
          .max(1_000_000)
          .default(10_000)
          .describe(
            'Lines held in memory while the disk is slow; past it exchanges are left out of the recording, counted in idm_compat_recording_lines_dropped_total and logged',
          ),
      })
      .optional()
      .describe('Traffic recording for replay and compare'),
    compare: z
      .strictObject({
        rules: z.string().min(1).optional().describe('Compare rules file (JSON); default: the shipped rules'),
      })
      .prefault({}),
    dashboard: z
      .strictObject({
        enabled: z.boolean().default(true).describe('Serve the migration dashboard at /_migration/'),
        username: z.string().min(1).optional().describe('Basic user name of the dashboard'),
        password: secretSchema.optional().describe('Basic password of the dashboard (a secret)'),
        ranges: z
          .array(cidrSchema)
          .min(1)
          .default(LOOPBACK_RANGES)
          .describe('Source ranges allowed to open the dashboard (default: loopback only)'),
      })
      .refine((dashboard) => (dashboard.username === undefined) === (dashboard.password === undefined), {
        message: 'username and password go together',
        path: ['password'],
      })
      .prefault({}),
  })
  .superRefine((migration, ctx) => {
    for (const [pattern, mode] of Object.entries(migration.modes)) {
      if (mode !== 'translate' && !migration.legacy) {
        ctx.addIssue({
          code: 'custom',
          path: ['modes', pattern],
          message: `${mode} needs migration.legacy (the old server to forward to)`,
        });
      }
      if (pattern === 'sso.authenticate' && mode !== 'translate') {
        ctx.addIssue({
          code: 'custom',
          path: ['modes', pattern],
          message: "SSO is always served by the proxy (its tokens and links are the proxy's own)",
        });
      }
    }
  })
  .prefault({})
  .describe(
    'Migration tools: per-operation modes, shadow comparison, recording, dashboard (docs/migration.md)',
  );

/** The whole configuration file. Every key has a default except `successor`, needed unless the sandbox is on. */
export const configSchema = z
  .strictObject({
    $schema: z.string().optional().describe('Path of the JSON Schema, for editors'),
    server: serverSchema,
    legacy: legacySchema,
    successor: successorSchema
      .optional()
      .describe(
        'The IDM API to translate to; required unless sandbox.enabled (sandbox mode takes only its timeouts, retries, pool, paging and answer cap)',
      ),
    sandbox: sandboxSchema,
    store: storeSchema,
    auth: authSchema,
    mappings: mappingsSchema,
    sso: ssoSchema,
    logging: loggingSchema,
    metrics: metricsSchema,
    usage: usageSchema,
    deprecation: deprecationSchema,
    migration: migrationSchema,
  })
  // Also when other keys have problems (`when`): a missing baseUrl or auth is named with them at
  // once, as when the successor schema itself required both.
  .superRefine(requireSuccessor, { when: (payload) => isRecord(payload.value) })
  .superRefine((config, ctx) => {
    // The metrics are routed before the legacy surface and the proxy's other own paths: at or
    // below the base path they would take the place of legacy operations (or of the docs), without
    // API-user authentication; on a health, SSO or dashboard path, the place of that page.
    const { basePath } = config.legacy;
    const metricsPath = config.metrics.path.replace(/\/+$/, '');
    const taken = takenFixedPath(metricsPath);
    if (config.metrics.enabled && (metricsPath === basePath || metricsPath.startsWith(`${basePath}/`))) {
      ctx.addIssue({
        code: 'custom',
        path: ['metrics', 'path'],
        message: `must be outside legacy.basePath (${basePath}), e.g. /metrics`,
      });
    } else if (config.metrics.enabled && taken !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['metrics', 'path'],
        message: `must not be the proxy's own ${taken}, e.g. /metrics`,
      });
    }
    // The other way round: legacy operations below a health, SSO or dashboard path would meet that
    // page's handler first (below /_migration, the dashboard's own credentials).
    const basePathTaken = takenFixedPath(basePath);
    if (basePathTaken !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['legacy', 'basePath'],
        message: `must not be the proxy's own ${basePathTaken}, e.g. /iserv/api`,
      });
    }
  });

/**
 * Production mode needs the successor block, with where the IDM API is and how to sign in. Read
 * as unknown: it also runs on a file with other problems, whose blocks may be anything.
 */
function requireSuccessor(config: { sandbox?: unknown; successor?: unknown }, ctx: z.RefinementCtx): void {
  if (isRecord(config.sandbox) && config.sandbox.enabled === true) return;
  const required = (path: string[], what: string) =>
    ctx.addIssue({ code: 'custom', path, message: `required unless sandbox.enabled is true: ${what}` });
  const { successor } = config;
  if (successor === undefined) required(['successor'], 'say which IDM API to translate to');
  if (!isRecord(successor)) return; // not an object: a problem of its own
  if (successor.baseUrl === undefined)
    required(['successor', 'baseUrl'], 'the base URL of the IDM API to translate to');
  if (successor.auth === undefined)
    required(['successor', 'auth'], 'how the proxy signs in to the IDM API (oauth2 or apiKey)');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The configuration as parsed (defaults applied, secrets still references). */
export type ConfigFile = z.output<typeof configSchema>;
export type SuccessorConfig = NonNullable<ConfigFile['successor']>;
/** The successor block's tuning: timeouts, retries, pool, paging, answer cap. */
export type SuccessorTuning = Omit<SuccessorConfig, 'baseUrl' | 'auth'>;

/** The successor block's tuning (timeouts, retries, pool, paging) when none is configured: its defaults. */
export function successorTuningDefaults(): SuccessorTuning {
  return successorSchema.omit({ baseUrl: true, auth: true }).parse({});
}

/** The JSON Schema of the config file, for editors (`config.schema.json`). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' });
  // The refinement that requires the successor outside sandbox mode has no JSON Schema of its own:
  // spelt out here, so that editors flag a production file without it as the loader does.
  return { ...schema, if: SANDBOX_ENABLED, else: SUCCESSOR_REQUIRED };
}

const SANDBOX_ENABLED = {
  properties: { sandbox: { properties: { enabled: { const: true } }, required: ['enabled'] } },
  required: ['sandbox'],
};
const SUCCESSOR_REQUIRED = {
  properties: { successor: { required: ['baseUrl', 'auth'] } },
  required: ['successor'],
};
