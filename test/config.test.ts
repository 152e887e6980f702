import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import { changedKeys } from '../src/config/changes.js';
import { ConfigError, loadConfig, parseConfig } from '../src/config/load.js';
import { configJsonSchema, successorTuningDefaults } from '../src/config/schema.js';
import { tlsFingerprint } from '../src/config/tls.js';
import { configWarnings } from '../src/config/warnings.js';
import { createLogger } from '../src/lib/logger.js';
import { createModeHolder, ModeTable } from '../src/migration/modes.js';
import { reloadModes } from '../src/migration/reload.js';
import { startServer } from '../src/server.js';
import { LogSink } from './log-sink.js';
import { hardLinkTo } from './shipped-files.js';
import { tempDir } from './temp-dir.js';

/** A self-signed certificate for 127.0.0.1 and its key (openssl), as `NAME.pem` and `NAME.key` in `dir`. */
function selfSignedPair(dir: string, name: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', key, '-out', cert],
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

const root = path.resolve(import.meta.dirname, '..');

function tempFile(name: string, content: string | Buffer): string {
  const dir = tempDir('config');
  const file = path.join(dir, name);
  writeFileSync(file, content);
  return file;
}

function capture(env: NodeJS.ProcessEnv = {}): CommandIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    env,
    out: (text: string) => {
      io.stdout += text;
    },
    err: (text: string) => {
      io.stderr += text;
    },
  };
  return io;
}

/** The configuration of a file with an API-key successor and these more `successor` settings. */
function withSuccessor(successor: Record<string, unknown>) {
  return loadConfig({
    file: tempFile(
      'config.json',
      JSON.stringify({
        successor: { baseUrl: 'https://s.example/x', auth: { type: 'apiKey', key: 'k' }, ...successor },
      }),
    ),
    env: {},
  });
}

describe('configuration', () => {
  it('runs in sandbox mode on the embedded defaults when there is no file', () => {
    const config = loadConfig({ env: {} });
    assert.equal(config.mode, 'sandbox');
    assert.equal(config.source, undefined);
    assert.equal(config.server.host, '127.0.0.1');
    assert.equal(config.server.port, 8080);
    assert.equal(config.legacy.basePath, '/iserv/api');
    assert.deepEqual(config.legacy.namespaces, ['Service']);
    assert.deepEqual(config.store, { type: 'sqlite', path: './data/idm-compat.db' });
  });

  it('lets HOST and PORT override the listen address', () => {
    const config = loadConfig({ env: { HOST: '::1', PORT: '9090' } });
    assert.equal(config.server.host, '::1');
    assert.equal(config.server.port, 9090);
    assert.throws(() => loadConfig({ env: { PORT: 'eighty' } }), /PORT.*not a port number/s);
  });

  it('refuses a PORT beyond 65535 as a configuration error, as server.port is', () => {
    // Five digits passed the check: `config check` said valid, and `serve` started the sandbox and
    // then died with exit 1 and "error: Invalid URL" instead of naming (env PORT).
    for (const port of ['65536', '99999']) {
      assert.throws(() => loadConfig({ env: { PORT: port } }), /\(env PORT\): not a port number/);
    }
    assert.equal(loadConfig({ env: { PORT: '65535' } }).server.port, 65535);
    assert.equal(loadConfig({ env: { PORT: '0' } }).server.port, 0);
  });

  it('refuses a listen address that is no IP address or host name, naming server.host or (env HOST)', () => {
    // `config check` said valid; `serve` then died with exit 1 and a bare "error: Invalid URL".
    assert.throws(
      () => loadConfig({ env: { HOST: '[::1]' } }),
      /\(env HOST\): "\[::1\]": an IPv6 address to listen on goes without brackets \(::1\)/,
    );
    assert.throws(
      () =>
        loadConfig({
          env: {},
          file: tempFile(
            'config.json',
            JSON.stringify({ sandbox: { enabled: true }, server: { host: 'not a host' } }),
          ),
        }),
      /server\.host: "not a host" is no IP address or host name/,
    );
    // A dotted number that is no IPv4 address is no host name either (`serve`: "Invalid URL").
    for (const host of ['10.0.0.300', '256.1.1.1', '999', 'a..b'])
      assert.throws(() => loadConfig({ env: { HOST: host } }), /is no IP address or host name/, host);
    for (const host of ['::1', '0.0.0.0', 'localhost', 'proxy.school.example', 'idm_compat'])
      assert.equal(loadConfig({ env: { HOST: host } }).server.host, host);
  });

  it('says what a secret or a deprecation date must be, not "Invalid input"', () => {
    const problem = (content: unknown) => {
      try {
        loadConfig({ file: tempFile('config.json', JSON.stringify(content)), env: {} });
      } catch (error) {
        assert.ok(error instanceof ConfigError, String(error));
        return error.problems.map(({ path, message }) => `${path}: ${message}`);
      }
      assert.fail('the file loaded');
    };
    const secret = 'must be a secret: a non-empty string, {"env": "VAR"} or {"file": "/path"}';
    assert.deepEqual(problem({ sandbox: { enabled: true }, store: { type: 'postgres' } }), [
      'store.url: is required',
    ]);
    for (const key of [{ envv: 'X' }, { file: 'k', env: 'X' }, 12])
      assert.deepEqual(problem({ sandbox: { enabled: true }, metrics: { username: 'm', password: key } }), [
        `metrics.password: ${secret}`,
      ]);
    assert.deepEqual(
      problem({
        sandbox: { enabled: true },
        deprecation: { operations: { 'user.list': { deprecation: 'yesterday' } } },
      }),
      [
        'deprecation.operations.user.list.deprecation: must be a date (2026-09-01) or a date and time with its offset (2026-09-01T08:00:00+02:00)',
      ],
    );
  });

  it('refuses an API-key header that is no HTTP header name, naming successor.auth.header', () => {
    // `serve` refused it with exit 1, naming an internal option ("auth.header").
    const file = tempFile(
      'config.json',
      JSON.stringify({
        successor: {
          baseUrl: 'https://idm.example/api',
          auth: { type: 'apiKey', key: 'k', header: 'bad header\n' },
        },
      }),
    );
    assert.throws(
      () => loadConfig({ file, env: {} }),
      /successor\.auth\.header: must be an HTTP header name/,
    );
    // Names the proxy sends itself, and a key no header value may be: every call failed, the
    // message pointing at the base URL.
    const apiKey = (auth: Record<string, string>) =>
      tempFile(
        'config.json',
        JSON.stringify({
          successor: { baseUrl: 'https://idm.example/api', auth: { type: 'apiKey', ...auth } },
        }),
      );
    for (const header of ['Content-Length', 'host', 'Accept-Encoding'])
      assert.throws(
        () => loadConfig({ file: apiKey({ key: 'k', header }), env: {} }),
        /successor\.auth\.header: must not be a header the proxy sets itself/,
        header,
      );
    assert.throws(
      () => loadConfig({ file: apiKey({ key: 'secret-key\nX-Other: 1' }), env: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /successor\.auth\.key: holds a line break or another control character/.test(error.message) &&
        !error.message.includes('secret-key'),
    );
    assert.ok(loadConfig({ file: apiKey({ key: 'k', header: 'Authorization' }), env: {} }));
  });

  it('refuses a server.requestTimeoutMs past what a Node timer takes (2^31 - 1 ms)', () => {
    // Node's connection check wraps a larger timeout around: 2^32 + 1000 cut requests after a second.
    const withTimeout = (requestTimeoutMs: number) =>
      tempFile('timeout.json', JSON.stringify({ sandbox: { enabled: true }, server: { requestTimeoutMs } }));
    assert.throws(
      () => loadConfig({ file: withTimeout(2 ** 32 + 1000), env: {} }),
      /server\.requestTimeoutMs/,
    );
    assert.equal(
      loadConfig({ file: withTimeout(2_147_483_647), env: {} }).server.requestTimeoutMs,
      2_147_483_647,
    );
  });

  it('says why a migration.modes key is no pattern, not "Invalid key in record"', () => {
    const legacy = { baseUrl: 'http://127.0.0.1:9/iserv/api', username: 'proxy', password: 'x' };
    for (const key of ['user*', '*.list', 'user.li*']) {
      assert.throws(
        () =>
          parseConfig(
            { sandbox: { enabled: true }, migration: { legacy, modes: { [key]: 'passthrough' } } },
            { label: 'c.json', env: {}, baseDir: '.' },
          ),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems.some(
            (p) =>
              p.path === `migration.modes.${key}` &&
              /^not a valid key: must be an operation id such as user\.list, a glob that ends in \.\* such as group\.\*/.test(
                p.message,
              ),
          ),
        key,
      );
    }
  });

  it('refuses a configuration file in another encoding than UTF-8, naming the line', () => {
    // Read as UTF-8, a Windows-1252 `ü` in a value became U+FFFD unseen.
    const latin1 = tempFile(
      'latin1.json',
      Buffer.from(
        '{\n  "sandbox": { "enabled": true },\n  "sso": { "target": "https://portal.example/m\u00fcnchen" }\n}\n',
        'latin1',
      ),
    );
    assert.throws(
      () => loadConfig({ file: latin1, env: {} }),
      /the file is not UTF-8 \(line 3 holds other bytes, e\.g\. Latin-1 or Windows-1252\); save it as UTF-8/,
    );
  });

  it('refuses every timeout past what a Node timer takes, which would fire after 1 ms', () => {
    // `config check` passed migration.legacy.timeouts.totalMs: 3000000000, and every passthrough
    // call then failed as "did not answer within 3000000000 ms" at once (so did the successor's
    // totalMs and shadow.timeoutMs).
    const legacy = { baseUrl: 'http://127.0.0.1:9/iserv/api', username: 'proxy', password: 'x' };
    const base = { sandbox: { enabled: true }, migration: { legacy } };
    const cases: [string, (ms: number) => Record<string, unknown>][] = [
      ['server.shutdownTimeoutMs', (ms) => ({ ...base, server: { shutdownTimeoutMs: ms } })],
      ['server.readinessTimeoutMs', (ms) => ({ ...base, server: { readinessTimeoutMs: ms } })],
      ['successor.timeouts.totalMs', (ms) => ({ ...base, successor: { timeouts: { totalMs: ms } } })],
      ['successor.timeouts.connectMs', (ms) => ({ ...base, successor: { timeouts: { connectMs: ms } } })],
      ['successor.pool.keepAliveMs', (ms) => ({ ...base, successor: { pool: { keepAliveMs: ms } } })],
      [
        'migration.legacy.timeouts.totalMs',
        (ms) => ({ ...base, migration: { legacy: { ...legacy, timeouts: { totalMs: ms } } } }),
      ],
      [
        'migration.legacy.timeouts.connectMs',
        (ms) => ({ ...base, migration: { legacy: { ...legacy, timeouts: { connectMs: ms } } } }),
      ],
      [
        'migration.legacy.pool.keepAliveMs',
        (ms) => ({ ...base, migration: { legacy: { ...legacy, pool: { keepAliveMs: ms } } } }),
      ],
      ['migration.shadow.timeoutMs', (ms) => ({ ...base, migration: { legacy, shadow: { timeoutMs: ms } } })],
    ];
    for (const [key, config] of cases) {
      assert.throws(
        () => loadConfig({ file: tempFile('timer.json', JSON.stringify(config(3_000_000_000))), env: {} }),
        new RegExp(key.replaceAll('.', '\\.')),
        key,
      );
      loadConfig({ file: tempFile('timer.json', JSON.stringify(config(2_147_483_647))), env: {} });
    }
  });

  it('refuses throttle times beyond a year, whose end could not be stored and read back', () => {
    const withThrottle = (throttle: Record<string, number>) =>
      tempFile('throttle.json', JSON.stringify({ sandbox: { enabled: true }, auth: { throttle } }));
    const year = 365 * 24 * 3600;
    for (const key of ['baseDelaySeconds', 'maxDelaySeconds', 'forgetAfterSeconds']) {
      assert.throws(
        () => loadConfig({ file: withThrottle({ [key]: year + 1 }), env: {} }),
        new RegExp(`auth\\.throttle\\.${key}`),
        key,
      );
      assert.equal(
        loadConfig({ file: withThrottle({ [key]: year }), env: {} }).auth.throttle[key as 'maxDelaySeconds'],
        year,
      );
    }
  });

  it('refuses an IPv6 listen address with a zone unless the public URL is set', () => {
    assert.throws(
      () => loadConfig({ env: { HOST: 'fe80::1%eth0' } }),
      (error: Error) =>
        /\(env HOST\).*"fe80::1%eth0" has a zone \(%eth0\).*set legacy\.publicUrl/s.test(error.message),
    );
    const file = tempFile(
      'zoned.json',
      JSON.stringify({
        sandbox: { enabled: true },
        server: { host: 'fe80::1%eth0' },
        legacy: { publicUrl: 'https://idm-compat.school.example' },
      }),
    );
    assert.equal(loadConfig({ file, env: {} }).server.host, 'fe80::1%eth0');
    const withoutUrl = tempFile(
      'zoned-no-url.json',
      JSON.stringify({ sandbox: { enabled: true }, server: { host: 'fe80::1%eth0' } }),
    );
    assert.throws(() => loadConfig({ file: withoutUrl, env: {} }), /server\.host.*has a zone/s);
    // Without a zone, IPv6 needs nothing more.
    assert.equal(loadConfig({ env: { HOST: 'fe80::1' } }).server.host, 'fe80::1');
  });

  it('reads the file named by IDM_COMPAT_CONFIG and resolves secrets from env and files', () => {
    const secretFile = tempFile('secret', 's3cret-from-file\n');
    const file = tempFile(
      'config.json',
      JSON.stringify({
        successor: {
          baseUrl: 'https://school.example/iserv/idm/api/v1',
          auth: {
            type: 'oauth2',
            issuer: 'https://school.example/iserv/auth',
            clientId: 'c',
            clientSecret: { file: secretFile },
          },
        },
      }),
    );
    const config = loadConfig({ env: { IDM_COMPAT_CONFIG: file } });
    assert.equal(config.mode, 'production');
    assert.equal(config.source, file);
    assert.equal(config.successor?.auth?.type, 'oauth2');
    if (config.successor?.auth?.type === 'oauth2') {
      assert.equal(config.successor.auth.clientSecret, 's3cret-from-file');
      assert.deepEqual(config.successor.auth.scopes.read, ['iserv:idm:api-read']);
    }

    const envFile = tempFile(
      'config.json',
      JSON.stringify({
        successor: { baseUrl: 'https://s.example/x', auth: { type: 'apiKey', key: { env: 'IDM_KEY' } } },
      }),
    );
    const fromEnv = loadConfig({ file: envFile, env: { IDM_KEY: 'key-from-env' } });
    assert.equal(fromEnv.successor?.auth?.type === 'apiKey' && fromEnv.successor.auth.key, 'key-from-env');
    // Set to nothing is not "not set": `env | grep IDM_KEY` shows it there.
    assert.throws(
      () => loadConfig({ file: envFile, env: { IDM_KEY: '' } }),
      /environment variable IDM_KEY is empty/,
    );
    assert.throws(() => loadConfig({ file: envFile, env: {} }), /environment variable IDM_KEY is not set/);
  });

  it('names the file, the JSON path and the reason for every problem', () => {
    const file = tempFile(
      'bad.json',
      JSON.stringify({
        server: { port: 70000, trustedProxies: ['10.0.0.0/33', '10.1/8'] },
        successor: {
          baseUrl: 'not a url',
          auth: { type: 'oauth2', issuer: 'https://i.example', clientId: 'c', clientSecret: { env: 'NOPE' } },
        },
        surprise: true,
      }),
    );
    try {
      loadConfig({ file, env: {} });
      assert.fail('expected a ConfigError');
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.file, file);
      const paths = error.problems.map((p) => p.path);
      assert.ok(paths.includes('server.port'), paths.join());
      assert.ok(paths.includes('server.trustedProxies.0'), paths.join());
      assert.ok(
        paths.includes('server.trustedProxies.1'),
        'IPv4 shorthand is refused like in API-user ranges',
      );
      assert.ok(paths.includes('successor.baseUrl'), paths.join());
      assert.ok(error.problems.some((p) => p.path === '(root)' && /surprise/.test(p.message)));
      assert.match(error.message, /prefix \/33 is too long/);
      assert.match(error.message, /not a CIDR range: "10\.1\/8"/);
    }
  });

  it('refuses a body limit over 16 MiB, which no legacy body needs and a recording line could not hold', () => {
    const load = (bodyLimitBytes: number) =>
      loadConfig({
        file: tempFile(
          'limit.json',
          JSON.stringify({ sandbox: { enabled: true }, server: { bodyLimitBytes } }),
        ),
        env: {},
      });
    assert.equal(load(16 * 1_048_576).server.bodyLimitBytes, 16 * 1_048_576);
    assert.throws(
      () => load(16 * 1_048_576 + 1),
      /server\.bodyLimitBytes: Too big: expected number to be <=16777216/,
    );
  });

  it('reports a missing secret with its JSON path and never prints a secret value', () => {
    const file = tempFile(
      'config.json',
      JSON.stringify({
        successor: {
          baseUrl: 'https://s.example/x',
          auth: {
            type: 'oauth2',
            issuer: 'https://i.example',
            clientId: 'c',
            clientSecret: { env: 'IDM_CLIENT_SECRET' },
          },
        },
      }),
    );
    assert.throws(
      () => loadConfig({ file, env: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems[0]?.path === 'successor.auth.clientSecret' &&
        /IDM_CLIENT_SECRET is not set/.test(error.message),
    );
  });

  it('reads a PostgreSQL store with its URL as a secret, defaults applied, and checks it', () => {
    const config = (store: unknown, env: NodeJS.ProcessEnv = {}) =>
      loadConfig({
        file: tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, store })),
        env,
      });
    const url = 'postgres://idm:pw-in-url@db.example:5432/idm';
    assert.deepEqual(config({ type: 'postgres', url: { env: 'IDM_PG_URL' } }, { IDM_PG_URL: url }).store, {
      type: 'postgres',
      url,
      poolSize: 10,
      connectTimeoutMs: 5000,
      statementTimeoutMs: 5000,
      credentialsPollMs: 500,
      startup: { attempts: 30, initialDelayMs: 500, maxDelayMs: 10_000 },
    });
    assert.equal(config({ type: 'postgres', url, schema: 'idm_compat', poolSize: 3 }).store.type, 'postgres');
    assert.throws(
      () => config({ type: 'postgres', url: { env: 'IDM_PG_URL' } }),
      (error: unknown) => error instanceof ConfigError && error.problems[0]?.path === 'store.url',
    );
    assert.throws(
      () => config({ type: 'postgres', url: 'mysql://u:pw-in-url@h/db' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems[0]?.path === 'store.url' &&
        !error.message.includes('pw-in-url'),
    );
    // Refused by the driver at start-up with a bare "Invalid URL": refused here, naming the key.
    for (const bad of ['postgres://u:pw-in-url@127.0.0.1:99999/db', 'postgres://u:pw-in-url@[zz/db'])
      assert.throws(
        () => config({ type: 'postgres', url: bad }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems[0]?.path === 'store.url' &&
          /not a connection URL the PostgreSQL driver accepts \(check the host, the port/.test(
            error.message,
          ) &&
          !error.message.includes('pw-in-url'),
      );
    assert.throws(
      () =>
        config({ type: 'postgres', url: 'postgres://u:pw-in-url@db.example/db?sslrootcert=/no/such/ca.pem' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /store\.url: names a file the PostgreSQL driver cannot read \(ENOENT/.test(error.message) &&
        !error.message.includes('pw-in-url'),
    );
    // What the driver takes: an unencoded @ in the password, a socket folder in the query.
    for (const good of ['postgres://u:p@ss@db.example/db', 'postgres:///db?host=/var/run/postgresql'])
      assert.equal(config({ type: 'postgres', url: good }).store.type, 'postgres');
    assert.throws(() => config({ type: 'postgres', url, schema: 'Bad-Name; DROP' }), /store\.schema/);
    assert.throws(() => config({ type: 'postgres', url, path: './x.db' }), /store/);
    assert.throws(() => config({ type: 'postgres' }), /store\.url/);
  });

  it('refuses a legacy.publicUrl with credentials, a query or a fragment, which every link would carry or break', () => {
    // Accepted before: Location became https://proxy.example/?x=1/iserv/api/…, and
    // https://ops:pw@… handed the credentials to every client in Location and SSO links.
    const config = (publicUrl: string) =>
      loadConfig({
        file: tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, legacy: { publicUrl } })),
        env: {},
      });
    for (const url of [
      'https://ops:pw-in-url@proxy.example',
      'https://proxy.example/?x=1',
      'https://proxy.example/#top',
    ]) {
      assert.throws(
        () => config(url),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems[0]?.path === 'legacy.publicUrl' &&
          !error.message.includes('pw-in-url'),
        url,
      );
    }
    assert.equal(
      config('https://school.example/idm-compat/').legacy.publicUrl,
      'https://school.example/idm-compat/',
    );
  });

  it('reads a file with a byte order mark, and refuses a key given twice naming it, never its value', () => {
    const withBom = tempFile(
      'bom.json',
      `\uFEFF${JSON.stringify({ sandbox: { enabled: true }, server: { port: 9 } })}`,
    );
    assert.equal(loadConfig({ file: withBom, env: {} }).server.port, 9);
    const twice = tempFile(
      'twice.json',
      '{"sandbox": {"enabled": true}, "successor": {"baseUrl": "https://a.example", "auth": {"type": "apiKey", "key": "k1-secret"}, "baseUrl": "https://b.example"}}',
    );
    assert.throws(
      () => loadConfig({ file: twice, env: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /the key "baseUrl" appears twice in \$\.successor \(JSON keeps only the last\)/.test(error.message) &&
        !error.message.includes('k1-secret'),
    );
  });

  it('refuses a "__proto__" key (an operation under it was dropped unseen), naming where', () => {
    const proto = tempFile(
      'proto.json',
      '{"sandbox": {"enabled": true}, "deprecation": {"operations": {"__proto__": {"deprecation": "2026-01-01"}}}}',
    );
    assert.throws(
      () => loadConfig({ file: proto, env: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /the key "__proto__" in \$\.deprecation\.operations names nothing/.test(error.message),
    );
  });

  it("refuses credentials, a query or a fragment in the successor's and the old server's base URLs and the issuers, which were ignored", () => {
    // https://u:p@old.example/iserv/api passed config check; the user-info and query were dropped
    // without a word, and the password sat in the JSON instead of the environment.
    const successor = (baseUrl: string) => ({
      baseUrl,
      auth: { type: 'apiKey', key: 'k' },
    });
    const legacy = (baseUrl: string) => ({ baseUrl, username: 'proxy', password: 'p' });
    const config = (content: unknown) =>
      loadConfig({ file: tempFile('config.json', JSON.stringify(content)), env: {} });
    for (const url of [
      'https://u:pw-in-url@host.example/iserv/api',
      'https://host.example/iserv/api?x=1',
      'https://host.example/iserv/api#top',
    ]) {
      const oauth2 = { type: 'oauth2', issuer: url, clientId: 'c', clientSecret: 's' };
      const oidc = { issuer: url, clientId: 'c', clientSecret: 's' };
      for (const [content, key] of [
        [{ successor: successor(url) }, 'successor.baseUrl'],
        [{ sandbox: { enabled: true }, migration: { legacy: legacy(url) } }, 'migration.legacy.baseUrl'],
        // The issuer's password reached /readyz (unauthenticated) and the logs in discovery errors.
        [{ successor: { baseUrl: 'https://idm.example/api', auth: oauth2 } }, 'successor.auth.issuer'],
        [{ sandbox: { enabled: true }, sso: { oidc } }, 'sso.oidc.issuer'],
      ] as const) {
        assert.throws(
          () => config(content),
          (error: unknown) =>
            error instanceof ConfigError &&
            error.problems.some((problem) => problem.path === key) &&
            /no credentials, query or fragment/.test(error.message) &&
            !error.message.includes('pw-in-url'),
          `${key} ${url}`,
        );
      }
    }
    assert.equal(
      config({ successor: successor('https://host.example/iserv/idm/api/v1') }).successor?.baseUrl,
      'https://host.example/iserv/idm/api/v1',
    );
  });

  it('refuses in `config check` and at start an sso.oidc.redirectUri with credentials, a query or a fragment', async () => {
    // `config check` said valid, and no login could succeed: openid-client sends the code
    // exchange's redirect_uri without the query, so the provider refused every code (invalid_grant).
    const dir = tempDir('config');
    const configFile = (redirectUri: string) =>
      tempFile(
        'config.json',
        JSON.stringify({
          successor: { baseUrl: 'http://127.0.0.1:19450/api', auth: { type: 'apiKey', key: 'k' } },
          legacy: { publicUrl: 'http://127.0.0.1:19451' },
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
          sso: {
            oidc: { issuer: 'http://127.0.0.1:19452/auth', clientId: 'c', clientSecret: 's', redirectUri },
          },
        }),
      );
    for (const redirectUri of [
      'http://127.0.0.1:19451/sso/callback?x=1',
      'http://127.0.0.1:19451/sso/callback?',
      'http://127.0.0.1:19451/sso/callback#frag',
      'http://user:pw-in-url@127.0.0.1:19451/sso/callback',
    ]) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(redirectUri)], io), 2, redirectUri);
        assert.match(
          io.stderr,
          /sso\.oidc\.redirectUri: must be scheme:\/\/host\[:port\]\[\/path\]: no credentials, query or fragment \(the code exchange sends it without query and fragment, so the provider would refuse every code\)/,
          `${command.join(' ')} ${redirectUri}`,
        );
        assert.doesNotMatch(io.stderr, /pw-in-url/);
      }
    }
    assert.equal(existsSync(path.join(dir, 'store.db')), false, 'serve opened the store before refusing');
    const io = capture();
    assert.equal(
      await runCli(['config', 'check', '--config', configFile('http://127.0.0.1:19451/sso/callback')], io),
      0,
      io.stderr,
    );
    assert.match(io.stdout, /valid \(production mode\)/);
  });

  it('refuses in `config check` and at start an sso.oidc.redirectUri off /sso/callback without legacy.publicUrl', async () => {
    // `config check` said valid: the browser came back to the proxy itself at a path it does not
    // answer (404), since no reverse proxy maps that path without legacy.publicUrl.
    const dir = tempDir('config');
    const configFile = (redirectUri: string, publicUrl?: string) =>
      tempFile(
        'config.json',
        JSON.stringify({
          server: { port: 19453 },
          successor: { baseUrl: 'http://127.0.0.1:19450/api', auth: { type: 'apiKey', key: 'k' } },
          ...(publicUrl === undefined ? {} : { legacy: { publicUrl } }),
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
          sso: {
            oidc: { issuer: 'http://127.0.0.1:19452/auth', clientId: 'c', clientSecret: 's', redirectUri },
          },
        }),
      );
    for (const redirectUri of [
      'http://127.0.0.1:19453/callback',
      'http://127.0.0.1:19453/sso/callback/',
      'http://127.0.0.1:19453/idm-compat/sso/callback',
    ]) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(redirectUri)], io), 2, redirectUri);
        assert.match(
          io.stderr,
          /sso\.oidc\.redirectUri: has the path \/\S+, but without legacy\.publicUrl browsers come back to the proxy itself, whose callback is \/sso\/callback/,
          `${command.join(' ')} ${redirectUri}`,
        );
      }
    }
    assert.equal(existsSync(path.join(dir, 'store.db')), false, 'serve opened the store before refusing');
    for (const [redirectUri, publicUrl] of [
      ['http://127.0.0.1:19453/sso/callback', undefined],
      // Behind a reverse proxy (legacy.publicUrl) another path may be forwarded to the callback.
      ['http://127.0.0.1:19451/idm-compat/callback', 'http://127.0.0.1:19451/idm-compat'],
    ] as const) {
      const io = capture();
      assert.equal(
        await runCli(['config', 'check', '--config', configFile(redirectUri, publicUrl)], io),
        0,
        io.stderr,
      );
    }
  });

  it('takes a store without `type` as SQLite, its documented default, and names the choices for a wrong one', () => {
    // `"store": {"path": …}` was refused: "store.type: Invalid discriminator value".
    const config = (store: unknown) =>
      loadConfig({
        file: tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, store })),
        env: {},
      });
    assert.deepEqual(config({ path: '/var/lib/idm-compat/x.db' }).store, {
      type: 'sqlite',
      path: '/var/lib/idm-compat/x.db',
    });
    assert.deepEqual(config({}).store, { type: 'sqlite', path: './data/idm-compat.db' });
    assert.throws(
      () => config({ type: 'mysql' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems[0]?.path === 'store.type' &&
        error.problems[0].message === 'expected "sqlite" (the default) or "postgres"',
    );
  });

  it('refuses a store schema PostgreSQL reserves (pg_…, information_schema) in `config check`, naming store.schema', async () => {
    // `config check` said valid, and `serve` then failed with "unacceptable schema name".
    const check = async (schema: string) => {
      const file = tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'postgres', url: { env: 'PG' }, schema },
        }),
      );
      const io = capture({ PG: 'postgres://idm:pw@db.example/idm' });
      return { code: await runCli(['config', 'check', '--config', file], io), stderr: io.stderr };
    };
    const refused = await check('pg_idm');
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /store\.schema: .*not starting with pg_/);
    // Accepted, and the tables went among PostgreSQL's own views.
    const system = await check('information_schema');
    assert.equal(system.code, 2);
    assert.match(system.stderr, /store\.schema: .*not information_schema/);
    assert.equal((await check('information_schema_x')).code, 0);
    // Reserved words are quoted wherever the schema is used (store.contract.test.ts opens them).
    for (const schema of ['user', 'select', 'idm_compat'])
      assert.equal((await check(schema)).code, 0, schema);
  });

  it('refuses in `config check` and at start a compare rules file serve cannot use, naming migration.compare.rules', async () => {
    // `config check` said valid; `serve` then stopped with exit 1 and a message naming no key.
    const dir = tempDir('config');
    const rulesFile = (name: string, rules: unknown) => {
      writeFileSync(path.join(dir, name), JSON.stringify(rules));
      return path.join(dir, name);
    };
    const configFile = (rules: string) =>
      tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
          migration: {
            legacy: { baseUrl: 'http://127.0.0.1:9/iserv/api', username: 'proxy', password: 'pw' },
            modes: { 'user.get': 'shadow' },
            compare: { rules },
          },
        }),
      );
    const invalid = rulesFile('invalid.json', { default: { ignore: ['lastlogin'] } });
    // A rule for an operation that does not exist applied to nothing, and the file passed.
    const unknown = rulesFile('unknown.json', { operations: { 'user.lsit': { ignore: ['$.x'] } } });
    for (const [rules, reason] of [
      [invalid, /migration\.compare\.rules: .*invalid\.json \$\.default\.ignore\[0\]: must start with \$/],
      [
        unknown,
        /migration\.compare\.rules: .*unknown\.json \$\.operations\.user\.lsit: no legacy operation is named "user\.lsit"; closest: user\.list/,
      ],
      [path.join(dir, 'missing.json'), /migration\.compare\.rules: cannot read .*missing\.json: ENOENT/],
    ] as const) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(rules)], io), 2, command.join(' '));
        assert.match(io.stderr, /invalid configuration in /);
        assert.match(io.stderr, reason);
      }
    }
    assert.equal(existsSync(path.join(dir, 'store.db')), false, 'serve opened the store before refusing');
    const valid = rulesFile('valid.json', { default: { ignore: ['$.lastlogin'] } });
    assert.equal(await runCli(['config', 'check', '--config', configFile(valid)], capture()), 0);
  });

  it('warns, in `config check` and at start, of a trusted proxy range that covers every address', async () => {
    // Valid, and exit 0, but X-Forwarded-For is then the client's to write: nothing said so.
    const file = tempFile(
      'config.json',
      JSON.stringify({
        sandbox: { enabled: true },
        server: { port: 0, trustedProxies: ['10.0.0.0/8', '0.0.0.0/0', '::/0'] },
        store: { path: path.join(tempDir('config'), 'store.db') },
      }),
    );
    const text = capture();
    assert.equal(await runCli(['config', 'check', '--config', file], text), 0);
    assert.match(
      text.stderr,
      /^warning: server\.trustedProxies: 0\.0\.0\.0\/0, ::\/0 trusts every peer as a proxy: any client can name its own address in X-Forwarded-For/,
    );
    const json = capture();
    assert.equal(await runCli(['config', 'check', '--json', '--config', file], json), 0);
    const summary = JSON.parse(json.stdout) as { valid: boolean; warnings: { path: string }[] };
    assert.equal(summary.valid, true);
    assert.deepEqual(
      summary.warnings.map((warning) => warning.path),
      ['server.trustedProxies'],
    );
    const sink = new LogSink();
    const server = await startServer({
      config: loadConfig({ file, env: {} }),
      logger: createLogger({ destination: sink }),
    });
    await server.close();
    assert.ok(
      sink.lines().some((line) => line.level === 40 && line.setting === 'server.trustedProxies'),
      sink.text,
    );
    // Ranges that only together cover everything are the same hole.
    const warned = (trustedProxies: string[]) =>
      configWarnings(
        parseConfig(
          { sandbox: { enabled: true }, server: { trustedProxies } },
          { label: 'test', env: {}, baseDir: '.' },
        ),
      );
    assert.match(
      warned(['0.0.0.0/1', '128.0.0.0/1'])[0]?.message ?? '',
      /^0\.0\.0\.0\/1, 128\.0\.0\.0\/1 together trust every peer/,
    );
    assert.match(
      warned(['::/1', '8000::/1', '10.0.0.0/8'])[0]?.message ?? '',
      /^::\/1, 8000::\/1 together trust every peer/,
    );
    assert.deepEqual(warned(['0.0.0.0/1', '192.168.0.0/16']), []);
    // 256 ranges of /8: named as any list is, 10 and the count of the rest.
    const eights = Array.from({ length: 256 }, (_, i) => `${i}.0.0.0/8`);
    assert.match(
      warned(eights)[0]?.message ?? '',
      /^0\.0\.0\.0\/8, .*, 9\.0\.0\.0\/8 and 246 more together trust every peer/,
    );
    // An ordinary list draws none.
    const plain = capture();
    const ordinary = tempFile(
      'config.json',
      JSON.stringify({ sandbox: { enabled: true }, server: { trustedProxies: ['10.0.0.0/8'] } }),
    );
    assert.equal(await runCli(['config', 'check', '--json', '--config', ordinary], plain), 0);
    assert.deepEqual((JSON.parse(plain.stdout) as { warnings: unknown[] }).warnings, []);
  });

  it('refuses in `config check` and at start a sandbox fixture that cannot be read or is invalid, naming sandbox.fixture', async () => {
    // `config check` said valid; `serve` then stopped with exit 1.
    const dir = tempDir('config');
    const broken = path.join(dir, 'broken.json');
    writeFileSync(broken, '{oops');
    const configFile = (fixture: string) =>
      tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true, fixture },
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
        }),
      );
    for (const [fixture, reason] of [
      [
        path.join(dir, 'missing.json'),
        /sandbox\.fixture: sandbox fixture .*missing\.json: cannot read the file \(ENOENT\)/,
      ],
      [broken, /sandbox\.fixture: sandbox fixture .*broken\.json: not valid JSON at line 1/],
    ] as const) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(fixture)], io), 2, command.join(' '));
        assert.match(io.stderr, reason);
      }
    }
    const fine = path.join(dir, 'fine.json');
    writeFileSync(fine, JSON.stringify({ users: [{ user: 'fixture.user', firstname: 'F', lastname: 'U' }] }));
    const io = capture();
    assert.equal(await runCli(['config', 'check', '--config', configFile(fine)], io), 0, io.stderr);
  });

  it('refuses in `config check` and at start a recording path whose folder does not exist, instead of creating it', async () => {
    const dir = tempDir('config');
    const configFile = (recording: string) =>
      tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
          migration: { recording: { path: recording } },
        }),
      );
    const missing = path.join(dir, 'typo', 'recording.ndjson');
    for (const [recording, reason] of [
      [missing, /migration\.recording\.path: the folder .*typo does not exist/],
      [dir, /migration\.recording\.path: .* is a folder, not a file/],
    ] as const) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(recording)], io), 2, command.join(' '));
        assert.match(io.stderr, reason);
      }
    }
    assert.equal(existsSync(path.dirname(missing)), false);
    const io = capture();
    assert.equal(
      await runCli(['config', 'check', '--config', configFile(path.join(dir, 'recording.ndjson'))], io),
      0,
      io.stderr,
    );
  });

  it('refuses a recording path that is the store, its journal, the configuration file or one the rotation would rename onto them; the store stays a store', async () => {
    // The first rotation renamed the SQLite store away and wrote NDJSON in its place: every API
    // user, ID row and usage count gone at the next start, and `config check` had said valid.
    const dir = tempDir('config');
    const store = path.join(dir, 'store.db');
    const configPath = path.join(dir, 'config.json');
    const write = (recording: string) =>
      writeFileSync(
        configPath,
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'sqlite', path: store },
          migration: { recording: { path: recording, maxBytes: 1024 } },
        }),
      );
    write(path.join(dir, 'recording.ndjson'));
    const added = capture();
    assert.equal(
      await runCli(['apiuser', 'add', 'keeper', '--range', '127.0.0.1/32', '--config', configPath], added),
      0,
      added.stderr,
    );
    const storeBytes = readFileSync(store);
    symlinkSync(dir, path.join(dir, 'same-folder'));
    for (const [recording, what] of [
      [store, /is the store \(store\.path\)/],
      [path.join(dir, 'same-folder', 'store.db'), /is the store \(store\.path\)/],
      [`${store}-wal`, /is the store's write-ahead log/],
      [configPath, /is the configuration file/],
    ] as const) {
      write(recording);
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(
          await runCli([...command, '--config', configPath], io),
          2,
          `${command.join(' ')} ${recording}`,
        );
        assert.match(io.stderr, /migration\.recording\.path: .* would destroy it; give another file/);
        assert.match(io.stderr, what);
      }
    }
    // A store named like a rotated recording (`rec.1`) is refused too.
    const rotatedStore = path.join(dir, 'rec.1');
    writeFileSync(
      configPath,
      JSON.stringify({
        sandbox: { enabled: true },
        store: { type: 'sqlite', path: rotatedStore },
        migration: { recording: { path: path.join(dir, 'rec') } },
      }),
    );
    const rotated = capture();
    assert.equal(await runCli(['config', 'check', '--config', configPath], rotated), 2);
    assert.match(rotated.stderr, /rec\.1 is the store \(store\.path\)/);
    // A store not there yet, named through a linked folder; a secret file; a mapping table.
    const secret = path.join(dir, 'metrics.pw');
    writeFileSync(secret, 'scrape-secret\n');
    const profile = path.join(dir, 'mappings', 'iserv-idm-v1');
    const danglingLink = path.join(dir, 'to-future.db');
    symlinkSync(path.join(dir, 'future.db'), danglingLink);
    cpSync(path.resolve('mappings', 'iserv-idm-v1'), profile, { recursive: true });
    for (const [store2, recording, extra, what] of [
      [
        path.join(dir, 'later.db'),
        path.join(dir, 'same-folder', 'later.db'),
        {},
        /later\.db is the store \(store\.path\)/,
      ],
      // A link to the store a first start will create; the journal of a store closed cleanly.
      [path.join(dir, 'future.db'), danglingLink, {}, /to-future\.db is the store \(store\.path\)/],
      [
        store,
        path.join(dir, 'same-folder', 'store.db-journal'),
        {},
        /store\.db-journal is the store's rollback journal/,
      ],
      [
        store,
        secret,
        { metrics: { username: 'scraper', password: { file: 'metrics.pw' } } },
        /metrics\.pw is a secret file/,
      ],
      [
        store,
        path.join(profile, 'profile.json'),
        { mappings: { dir: path.join(dir, 'mappings') } },
        /profile\.json is a file in the mapping profile's folder/,
      ],
      // Not named in the configuration, and read at every start with migration.legacy: a
      // recording into it stopped `serve`, `config check` and `compare` (not valid JSON). So
      // is any file of the shipped folder (its profile, when another is configured).
      [
        store,
        path.resolve('mappings', 'compare-rules.default.json'),
        {},
        /compare-rules\.default\.json is in the folder idm-compat ships its mapping profiles and compare rules in/,
      ],
      [
        store,
        path.resolve('mappings', 'iserv-idm-v1', 'operations', 'user.json'),
        { mappings: { dir: path.join(dir, 'mappings') } },
        /user\.json is in the folder idm-compat ships its mapping profiles and compare rules in/,
      ],
      // The same file under another name: a hard link.
      [
        store,
        hardLinkTo(path.resolve('mappings', 'compare-rules.default.json'), dir, 'rules-link.ndjson'),
        {},
        /rules-link\.ndjson is in the folder idm-compat ships its mapping profiles and compare rules in/,
      ],
    ] as const) {
      writeFileSync(
        configPath,
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'sqlite', path: store2 },
          migration: { recording: { path: recording } },
          ...extra,
        }),
      );
      const io = capture();
      assert.equal(await runCli(['config', 'check', '--config', configPath], io), 2, recording);
      assert.match(io.stderr, what);
    }
    assert.deepEqual(readFileSync(store), storeBytes);
  });

  it('refuses in `config check` and at start a mapping profile serve cannot load, naming file, JSON path and reason', async () => {
    // `config check` said valid; `serve` then refused the same file (exit 2) for its mapping tables.
    const dir = tempDir('config');
    cpSync(path.resolve('mappings'), path.join(dir, 'mappings'), { recursive: true });
    const operationsFile = path.join(dir, 'mappings', 'iserv-idm-v1', 'operations', 'role.json');
    const operations = JSON.parse(readFileSync(operationsFile, 'utf8')) as {
      operations: Record<string, unknown>;
    };
    delete operations.operations['role.delete'];
    writeFileSync(operationsFile, JSON.stringify(operations));
    const configFile = (profile: string, mappings = path.join(dir, 'mappings')) =>
      tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
          mappings: { dir: mappings, profile },
        }),
      );
    for (const [profile, reason] of [
      [
        'iserv-idm-v1',
        /invalid mapping profile .*\n.*\$\.operations\["role\.delete"\]: the proxy serves DELETE/,
      ],
      ['typo', /mappings\.profile: there is no profile folder typo in .*mappings$/m],
    ] as const) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(profile)], io), 2, command.join(' '));
        assert.match(io.stderr, reason);
      }
    }
    // A mappings.dir that is not there says where relative paths start and where the shipped
    // profiles are, for every command that reads it.
    const csv = path.join(dir, 'ids.csv');
    writeFileSync(csv, 'kind,legacy_id,uuid\n');
    for (const command of [['config', 'check'], ['serve'], ['mappings', 'check'], ['ids', 'import', csv]]) {
      const io = capture();
      const code = await runCli(
        [...command, '--config', configFile('iserv-idm-v1', './no-such-mappings')],
        io,
      );
      assert.equal(code, 2, command.join(' '));
      assert.match(
        io.stderr,
        /mappings\.dir: the folder .*no-such-mappings does not exist \(relative paths start at the working directory, .*; the profiles shipped with idm-compat are in .*mappings\)/,
      );
    }
    assert.equal(existsSync(path.join(dir, 'store.db')), false, 'serve opened the store before refusing');
    const io = capture();
    assert.equal(
      await runCli(['config', 'check', '--config', configFile('iserv-idm-v1', path.resolve('mappings'))], io),
      0,
      io.stderr,
    );
  });

  it('takes the shipped mapping profiles when mappings.dir is not set, in any working directory', async () => {
    // Installed from the package and started in another folder, the embedded defaults (sandbox mode,
    // no file to set mappings.dir in) looked for ./mappings there: `serve`, `config check` and
    // `mappings check` stopped with exit 2 and no way to go on without writing a configuration file.
    const dir = tempDir('config');
    const file = tempFile(
      'config.json',
      JSON.stringify({
        sandbox: { enabled: true },
        store: { type: 'sqlite', path: path.join(dir, 'store.db') },
      }),
    );
    const before = process.cwd();
    process.chdir(dir);
    try {
      for (const command of [
        ['config', 'check'],
        ['mappings', 'check'],
        ['config', 'check', '--config', file],
        ['mappings', 'check', '--config', file],
      ]) {
        const io = capture();
        assert.equal(await runCli(command, io), 0, `${command.join(' ')}: ${io.stderr}`);
      }
      const io = capture();
      assert.equal(await runCli(['mappings', 'check', '--json'], io), 0, io.stderr);
      assert.equal(
        (JSON.parse(io.stdout) as { folder: string }).folder,
        path.join(root, 'mappings', 'iserv-idm-v1'),
      );
    } finally {
      process.chdir(before);
    }
  });

  it('without mappings.dir takes ./mappings/<profile> when it is there (the earlier default), else the shipped one', async () => {
    // The default was ./mappings once: a deployment's own profile there (another name, or an edited
    // copy of the shipped one) keeps being used; a profile in neither place is refused naming both.
    const dir = tempDir('config');
    cpSync(path.join(root, 'mappings', 'iserv-idm-v1'), path.join(dir, 'mappings', 'schule-x'), {
      recursive: true,
    });
    const folderOf = async (profile: string) => {
      const file = tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true },
          store: { path: path.join(dir, 's.db') },
          mappings: { profile },
        }),
      );
      const io = capture();
      const code = await runCli(['mappings', 'check', '--json', '--config', file], io);
      return code === 0 ? (JSON.parse(io.stdout) as { folder: string }).folder : `${code}: ${io.stderr}`;
    };
    const before = process.cwd();
    process.chdir(dir);
    try {
      assert.equal(await folderOf('schule-x'), path.join(dir, 'mappings', 'schule-x'));
      assert.equal(await folderOf('iserv-idm-v1'), path.join(root, 'mappings', 'iserv-idm-v1'));
      assert.match(
        await folderOf('nowhere'),
        /^2: .*mappings\.profile: there is no profile folder nowhere in \.\/mappings \(.*\) nor among the profiles shipped with idm-compat/s,
      );
    } finally {
      process.chdir(before);
    }
  });

  it('refuses in `config check` and at start TLS files that cannot serve HTTPS, naming server.tls.cert or .key', async () => {
    // `config check` said valid; `serve` opened the store, started the sandbox, then stopped with
    // exit 1 and OpenSSL's words alone ("PEM routines::no start line"), naming no key.
    const dir = tempDir('config');
    const one = selfSignedPair(dir, 'one');
    const other = selfSignedPair(dir, 'other');
    const garbage = path.join(dir, 'garbage.pem');
    writeFileSync(garbage, 'not a PEM file\n');
    const configFile = (tls: { cert: string; key: string }) =>
      tempFile(
        'config.json',
        JSON.stringify({
          sandbox: { enabled: true },
          store: { type: 'sqlite', path: path.join(dir, 'store.db') },
          server: { port: 0, tls },
        }),
      );
    for (const [tls, reason] of [
      [
        { ...one, cert: path.join(dir, 'missing.pem') },
        /server\.tls\.cert: cannot read .*missing\.pem: ENOENT/,
      ],
      [
        { ...one, key: path.join(dir, 'missing.key') },
        /server\.tls\.key: cannot read .*missing\.key: ENOENT/,
      ],
      [{ ...one, cert: garbage }, /server\.tls\.cert: .*garbage\.pem holds no PEM certificate/],
      [{ ...one, key: garbage }, /server\.tls\.key: .*garbage\.pem holds no PEM private key/],
      [
        { cert: one.cert, key: other.key },
        /server\.tls\.key: .*other\.key is not the private key of the certificate/,
      ],
    ] as const) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', configFile(tls)], io), 2, command.join(' '));
        assert.match(io.stderr, /invalid configuration in /);
        assert.match(io.stderr, reason);
        assert.doesNotMatch(io.stderr, /PRIVATE KEY/);
      }
    }
    assert.equal(existsSync(path.join(dir, 'store.db')), false, 'serve opened the store before refusing');
    const io = capture();
    assert.equal(await runCli(['config', 'check', '--config', configFile(one)], io), 0, io.stderr);
  });

  it('reads the pages a collection read fetches at once: 4 unless set, 1 to 16', () => {
    assert.equal(withSuccessor({}).successor?.pageConcurrency, 4);
    assert.equal(withSuccessor({ pageConcurrency: 1 }).successor?.pageConcurrency, 1);
    for (const wrong of [0, 17, 2.5, '2']) {
      assert.throws(
        () => withSuccessor({ pageConcurrency: wrong }),
        (error: unknown) =>
          error instanceof ConfigError && error.problems[0]?.path === 'successor.pageConcurrency',
        String(wrong),
      );
    }
  });

  it('reads the cap on successor answers: 32 MiB unless set, 64 KiB to 256 MiB', () => {
    assert.equal(withSuccessor({}).successor?.maxResponseBytes, 33_554_432);
    assert.equal(withSuccessor({ maxResponseBytes: 65_536 }).successor?.maxResponseBytes, 65_536);
    for (const wrong of [65_535, 268_435_457, 1.5, '1000000']) {
      assert.throws(
        () => withSuccessor({ maxResponseBytes: wrong }),
        (error: unknown) =>
          error instanceof ConfigError && error.problems[0]?.path === 'successor.maxResponseBytes',
        String(wrong),
      );
    }
  });

  it("gives sandbox mode without a successor block the successor block's defaults", () => {
    assert.deepEqual(successorTuningDefaults(), {
      timeouts: { connectMs: 5_000, totalMs: 15_000 },
      retries: { max: 2, baseDelayMs: 100 },
      pool: { connections: 32, keepAliveMs: 30_000 },
      pageSize: 100,
      pageConcurrency: 4,
      maxResponseBytes: 32 * 1024 * 1024,
    });
  });

  it('requires a successor unless the sandbox is enabled', () => {
    const file = tempFile('config.json', JSON.stringify({ server: { port: 8081 } }));
    assert.throws(() => loadConfig({ file, env: {} }), /successor: required unless sandbox.enabled/);
  });

  it('takes a successor block of tuning alone in sandbox mode; production mode still requires baseUrl and auth', async () => {
    // Sandbox mode uses the successor's tuning (docs/configuration.md), but a block without
    // baseUrl and auth was refused: the tuning could not be given at all.
    const tuning = { pageSize: 5, pageConcurrency: 1 };
    const sandboxFile = tempFile(
      'config.json',
      JSON.stringify({ sandbox: { enabled: true }, successor: tuning }),
    );
    const io = capture();
    assert.equal(await runCli(['config', 'check', '--config', sandboxFile], io), 0, io.stderr);
    const sandbox = loadConfig({ file: sandboxFile, env: {} });
    assert.equal(sandbox.mode, 'sandbox');
    assert.equal(sandbox.successor?.pageSize, 5);
    assert.equal(sandbox.successor?.pageConcurrency, 1);
    assert.equal(sandbox.successor?.retries.max, 2, 'defaults for the rest');
    assert.equal(sandbox.successor?.baseUrl, undefined);

    const productionFile = tempFile('config.json', JSON.stringify({ successor: tuning }));
    const refused = capture();
    assert.equal(await runCli(['config', 'check', '--config', productionFile], refused), 2);
    assert.match(
      refused.stderr,
      /successor\.baseUrl: required unless sandbox\.enabled is true: the base URL of the IDM API to translate to$/m,
    );
    assert.match(
      refused.stderr,
      /successor\.auth: required unless sandbox\.enabled is true: how the proxy signs in to the IDM API \(oauth2 or apiKey\)$/m,
    );
    // Named with the file's other problems at once, as when the schema of the block required them.
    const alongside = tempFile(
      'config.json',
      JSON.stringify({ server: { port: 'eighty' }, successor: { baseUrl: 'https://s.example/x' } }),
    );
    assert.throws(
      () => loadConfig({ file: alongside, env: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        JSON.stringify(error.problems.map((p) => p.path)) === '["server.port","successor.auth"]',
    );

    // The JSON Schema says the same to editors.
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(path.join(root, 'config.schema.json'), 'utf8')));
    assert.equal(
      validate({ sandbox: { enabled: true }, successor: tuning }),
      true,
      JSON.stringify(validate.errors),
    );
    assert.equal(validate({ sandbox: { enabled: true } }), true);
    assert.equal(validate({ successor: tuning }), false);
    assert.equal(
      validate({ sandbox: { enabled: false }, successor: { ...tuning, baseUrl: 'https://s.example/x' } }),
      false,
    );
    assert.equal(validate({ server: { port: 8081 } }), false, 'production without a successor');
    assert.equal(
      validate({ successor: { baseUrl: 'https://s.example/x', auth: { type: 'apiKey', key: 'k' } } }),
      true,
    );
  });

  it('refuses a legacy namespace named docs, whose operations the interactive docs would answer as unknown pages', async () => {
    // Accepted, every operation under it answered 404 (reads) or 405 (writes).
    const configFile = (namespaces: string[]) =>
      tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, legacy: { namespaces } }));
    const io = capture();
    assert.equal(await runCli(['config', 'check', '--config', configFile(['Service', 'docs'])], io), 2);
    assert.match(io.stderr, /legacy\.namespaces\.1: must not be "docs": the interactive docs live there/);
    const fine = capture();
    assert.equal(
      await runCli(['config', 'check', '--config', configFile(['Service', 'Docs'])], fine),
      0,
      fine.stderr,
    );
  });

  it('says why an auth.realm is refused: empty, too long, or a quote or backslash in it', async () => {
    // An empty realm was "printable ASCII without quotes or backslashes", which it is.
    for (const [realm, why] of [
      ['', /auth\.realm: must not be empty/],
      ['r'.repeat(101), /auth\.realm: at most 100 characters/],
      ['a"b', /auth\.realm: printable ASCII without quotes or backslashes/],
    ] as const) {
      const io = capture();
      const file = tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, auth: { realm } }));
      assert.equal(await runCli(['config', 'check', '--config', file], io), 2, realm);
      assert.match(io.stderr, why);
    }
  });

  it('refuses an sso.target with credentials, which every browser would be sent with; a query and a fragment stay', async () => {
    // Accepted: /sso/continue redirected every browser to https://u:pw@portal…
    const configFile = (target: string) =>
      tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, sso: { target } }));
    const io = capture();
    assert.equal(
      await runCli(
        ['config', 'check', '--config', configFile('https://u:pw-in-target@portal.example/login')],
        io,
      ),
      2,
    );
    assert.match(
      io.stderr,
      /sso\.target: must not hold credentials \(user:password@\): every browser is sent to it/,
    );
    assert.doesNotMatch(io.stderr, /pw-in-target/);
    const fine = capture();
    assert.equal(
      await runCli(
        ['config', 'check', '--config', configFile('https://portal.example/login?school=1#start')],
        fine,
      ),
      0,
      fine.stderr,
    );
  });

  it('refuses metrics.path at or below legacy.basePath, where it would replace legacy operations', async () => {
    const configFile = (metrics: Record<string, unknown>, legacy: Record<string, unknown> = {}) =>
      tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, metrics, legacy }));
    for (const [metrics, legacy] of [
      [{ path: '/iserv/api/Service/Core/Entity/User' }, {}],
      [{ path: '/iserv/api' }, {}],
      [{ path: '/iserv/api/' }, {}],
      [{ path: '/legacy/metrics' }, { basePath: '/legacy' }],
    ] as const) {
      const io = capture();
      assert.equal(await runCli(['config', 'check', '--config', configFile(metrics, legacy)], io), 2);
      assert.match(io.stderr, /metrics\.path: must be outside legacy\.basePath/);
    }
    // Beside the base path, or below it with the metrics off, is fine.
    for (const metrics of [{ path: '/iserv/apimetrics' }, { path: '/iserv/api/metrics', enabled: false }]) {
      const io = capture();
      assert.equal(await runCli(['config', 'check', '--config', configFile(metrics)], io), 0, io.stderr);
    }
  });

  it("refuses a legacy.basePath on the proxy's own health, SSO or dashboard paths, whose pages would answer its operations", async () => {
    // Below /_migration every legacy call met the dashboard's own credentials (401).
    for (const [basePath, taken] of [
      ['/_migration', '/_migration/'],
      ['/_migration/api', '/_migration/'],
      ['/healthz', '/healthz'],
      ['/sso/continue', '/sso/continue'],
    ] as const) {
      const io = capture();
      const file = tempFile(
        'config.json',
        JSON.stringify({ sandbox: { enabled: true }, legacy: { basePath } }),
      );
      assert.equal(await runCli(['config', 'check', '--config', file], io), 2, basePath);
      assert.match(
        io.stderr,
        new RegExp(`legacy\\.basePath: must not be the proxy's own ${taken.replace(/[/.]/g, '\\$&')}`),
      );
    }
    const fine = capture();
    const sso = tempFile(
      'config.json',
      JSON.stringify({ sandbox: { enabled: true }, legacy: { basePath: '/sso' } }),
    );
    assert.equal(await runCli(['config', 'check', '--config', sso], fine), 0, fine.stderr);
  });

  it("refuses metrics.path on the proxy's own health, SSO or dashboard paths, whose pages it would replace", async () => {
    for (const [path, taken] of [
      ['/healthz', '/healthz'],
      ['/readyz/', '/readyz'],
      ['/sso/continue', '/sso/continue'],
      ['/sso/callback', '/sso/callback'],
      ['/_migration', '/_migration/'],
      ['/_migration/api/status', '/_migration/'],
    ] as const) {
      const io = capture();
      const file = tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, metrics: { path } }));
      assert.equal(await runCli(['config', 'check', '--config', file], io), 2, path);
      assert.match(
        io.stderr,
        new RegExp(`metrics\\.path: must not be the proxy's own ${taken}, e\\.g\\. /metrics`),
      );
    }
    for (const path of ['/sso', '/healthz-metrics', '/_migrations']) {
      const io = capture();
      const file = tempFile('config.json', JSON.stringify({ sandbox: { enabled: true }, metrics: { path } }));
      assert.equal(await runCli(['config', 'check', '--config', file], io), 0, io.stderr);
    }
  });

  it('names the keys a changed file differs in (two levels, key order aside), never their values', () => {
    const before = {
      logging: { level: 'info', bufferBytes: 4096 },
      server: { port: 8080, tls: { cert: 'a', key: 'b' } },
    };
    const after = {
      server: { tls: { key: 'c', cert: 'a' }, port: 8080 },
      logging: { bufferBytes: 4096, level: 'debug' },
    };
    assert.deepEqual(changedKeys(before, after), ['logging.level', 'server.tls']);
    assert.deepEqual(changedKeys(before, structuredClone(before)), []);
    assert.deepEqual(changedKeys({ a: { b: 1 } }, { a: { b: 1, c: 2 }, d: true }), ['a.c', 'd']);
  });

  it('stops `serve` with the file, the JSON path and the reason on a bad file', async () => {
    const file = tempFile('config.json', '{"server": {"port": "eighty"}}');
    const io = capture();
    const code = await runCli(['serve', '--config', file], io);
    assert.equal(code, 2);
    assert.match(io.stderr, new RegExp(`invalid configuration in ${file.replaceAll('/', '\\/')}`));
    assert.match(io.stderr, /server\.port: /);
    const notJson = tempFile('config.json', '{"server": ');
    const io2 = capture();
    assert.equal(await runCli(['config', 'check', '--config', notJson], io2), 2);
    assert.match(io2.stderr, /not valid JSON at line 1, column 12 \(the end\): value expected/);
  });

  it('names where a file is not JSON without quoting it: an unquoted secret stays off the terminal and the log', async () => {
    // V8's message quoted the text around the error: `Unexpected token 's', ..."ntSecret":s3cr3t-val"...`.
    const secret = 's3cr3t-value-Hx9';
    const unquoted = tempFile(
      'config.json',
      `{\n  "successor": {"auth": {"clientId": "proxy", "clientSecret": ${secret}}}\n}`,
    );
    const missingComma = tempFile('config.json', `{\n  "sandbox": {"enabled": true}\n  "x": "${secret}"\n}`);
    for (const [file, where] of [
      [
        unquoted,
        /\(file\): not valid JSON at line 2, column \d+: not a JSON value \(text needs double quotes\)$/m,
      ],
      [missingComma, /\(file\): not valid JSON at line 3, column 3: comma expected$/m],
    ] as const) {
      for (const command of [['config', 'check'], ['serve']]) {
        const io = capture();
        assert.equal(await runCli([...command, '--config', file], io), 2);
        assert.match(io.stderr, where);
        assert.ok(!io.stderr.includes('s3cr3t'), io.stderr);
      }
    }
  });

  it('ships a config.example.json that passes the JSON Schema and the loader', () => {
    const example = JSON.parse(readFileSync(path.join(root, 'config.example.json'), 'utf8'));
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(path.join(root, 'config.schema.json'), 'utf8')));
    assert.ok(validate(example), JSON.stringify(validate.errors));
    const config = loadConfig({
      file: path.join(root, 'config.example.json'),
      env: {
        IDM_CLIENT_SECRET: 'x',
        IDM_SSO_CLIENT_SECRET: 'y',
        IDM_COMPAT_METRICS_PASSWORD: 'z',
        OLD_SERVER_PASSWORD: 'o',
        IDM_COMPAT_DASHBOARD_PASSWORD: 'd',
      },
    });
    assert.equal(config.mode, 'production');
    const broken = structuredClone(example) as { server: { port: unknown } };
    broken.server.port = 'eighty';
    assert.equal(validate(broken), false);
  });

  it('keeps config.schema.json in step with the zod schema (run `npm run schema` after changing it)', () => {
    const committed = JSON.parse(readFileSync(path.join(root, 'config.schema.json'), 'utf8'));
    assert.deepEqual(committed, configJsonSchema());
  });

  it('prints the schema and help from the CLI', async () => {
    const io = capture();
    assert.equal(await runCli(['config', 'schema'], io), 0);
    assert.deepEqual(JSON.parse(io.stdout), configJsonSchema());
    const help = capture();
    assert.equal(await runCli(['serve', '--help'], help), 0);
    assert.match(help.stdout, /Usage: idm-compat serve \[--config FILE\]/);
    const unknown = capture();
    assert.equal(await runCli(['frobnicate'], unknown), 2);
    assert.match(unknown.stderr, /unknown command/);
  });
});

describe('a reload after the certificate files were replaced', () => {
  it('says server.tls takes a restart, or, when a restart would refuse the files, that it would', () => {
    // The files were renewed under the same names and SIGHUP said nothing, which an operator used
    // to nginx reads as applied; and a key not of the certificate was "restart to apply" too.
    const dir = tempDir('tls-reload');
    const served = selfSignedPair(dir, 'served');
    const renewed = selfSignedPair(dir, 'renewed');
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    const install = (pair: { cert: string; key: string }) => {
      cpSync(pair.cert, cert);
      cpSync(pair.key, key);
    };
    install(served);
    const file = path.join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ sandbox: { enabled: true }, server: { tls: { cert, key } } }));
    const running = loadConfig({ file, env: {} });
    const tlsAtStart = tlsFingerprint(running);
    const reload = () => {
      const sink = new LogSink();
      const operationIds = ['user.get'];
      const holder = createModeHolder(new ModeTable({}, operationIds));
      const options = { file, env: {}, operationIds, hasLegacy: false, running, tlsAtStart };
      assert.equal(reloadModes(holder, options, createLogger({ destination: sink })), true);
      const said = (start: string) => sink.lines().filter((line) => String(line.msg).startsWith(start));
      return {
        notApplied: said('configuration changed where a reload').map((line) => line.notApplied),
        refused: said('server.tls changed and a restart would refuse it').length,
      };
    };
    assert.deepEqual(reload(), { notApplied: [], refused: 0 }, 'the same files: nothing to say');
    install(renewed);
    assert.deepEqual(reload(), { notApplied: [['server.tls']], refused: 0 });
    cpSync(served.key, key);
    assert.deepEqual(reload(), { notApplied: [], refused: 1 }, 'a key not of the certificate');
  });
});
