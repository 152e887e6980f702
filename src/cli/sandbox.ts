import { pino } from 'pino';
import { createLogger } from '../lib/logger.js';
import type { RunningSandbox, SandboxOptions } from '../sandbox/index.js';
import {
  type Command,
  type CommandArgs,
  CommandError,
  type CommandIo,
  flag,
  stringOption,
} from './command.js';

// The sandbox's own limits, repeated here (not imported: every CLI start loads this file, and only
// the sandbox command may load the sandbox). test/sandbox.setup.test.ts checks that they agree.
/** The sandbox's default largest page size (server.ts). */
const DEFAULT_MAX_PAGE_SIZE = 500;
/** The largest fault latency the sandbox accepts (MAX_LATENCY_MS in faults.ts). */
const MAX_LATENCY_MS = 600_000;
/**
 * Page sizes and the retention are safe integers, as `sandbox.*` in the configuration file and
 * the API's page size parameter take them: beyond 2^53 − 1 a number is no longer exact.
 */
const MAX_WHOLE = Number.MAX_SAFE_INTEGER;

function numberOption(args: CommandArgs, name: string, check: (n: number) => boolean, expected: string) {
  const raw = stringOption(args, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || !check(value)) {
    throw new CommandError(`--${name} must be ${expected}, got "${raw}"`);
  }
  return value;
}

/** Turns the command line into sandbox options (throws CommandError on bad values). */
export function sandboxOptionsFromArgs(args: CommandArgs, io: CommandIo): SandboxOptions {
  // Every range is checked here, so that a value the sandbox would refuse stops the command with
  // a message naming the flag and the range, not with the sandbox's own error for its option.
  const whole = (min: number, max: number) => (n: number) => Number.isInteger(n) && n >= min && n <= max;
  const port = numberOption(args, 'port', whole(0, 65535), 'a port number from 0 to 65535');
  const latencyMs = numberOption(
    args,
    'latency',
    whole(0, MAX_LATENCY_MS),
    `a whole number of milliseconds from 0 to ${MAX_LATENCY_MS}`,
  );
  const errorRate = numberOption(args, 'error-rate', (n) => n >= 0 && n <= 1, 'a number from 0 to 1');
  // Its upper bound is the largest page size, checked below with its own message.
  const pageSize = numberOption(args, 'page-size', whole(1, Infinity), 'a whole number of at least 1');
  const maxPageSize = numberOption(
    args,
    'max-page-size',
    whole(1, MAX_WHOLE),
    `a whole number from 1 to ${MAX_WHOLE}`,
  );
  const largest = maxPageSize ?? DEFAULT_MAX_PAGE_SIZE;
  if (pageSize !== undefined && pageSize > largest) {
    throw new CommandError(
      `--page-size ${pageSize} is larger than the largest page size ${largest}; ${maxPageSize === undefined ? 'raise it with --max-page-size' : 'lower --page-size or raise --max-page-size'}`,
    );
  }
  const retentionSeconds = numberOption(
    args,
    'retention',
    whole(0, MAX_WHOLE),
    `a whole number of seconds from 0 to ${MAX_WHOLE}`,
  );
  const host = stringOption(args, 'host');
  const fixture = stringOption(args, 'fixture');
  const options: SandboxOptions = {
    seed: !flag(args, 'no-seed'),
    faults: {
      ...(latencyMs === undefined ? {} : { latencyMs }),
      ...(errorRate === undefined ? {} : { errorRate }),
      ...(flag(args, 'token-down') ? { tokenEndpointDown: true } : {}),
    },
    // Logs go to stderr so that stdout carries only what the command prints (JSON with --json).
    logger: createLogger({ level: io.env.LOG_LEVEL ?? 'warn', destination: pino.destination(2) }).child({
      component: 'sandbox',
    }),
  };
  if (port !== undefined) options.port = port;
  if (host !== undefined) options.host = host;
  if (fixture !== undefined) options.fixture = fixture;
  if (flag(args, 'no-hydra-prefix')) options.hydraPrefix = false;
  if (pageSize !== undefined) options.pageSize = pageSize;
  if (maxPageSize !== undefined) options.maxPageSize = maxPageSize;
  if (retentionSeconds !== undefined) options.retentionSeconds = retentionSeconds;
  return options;
}

/** What the command prints about a running sandbox, as a JSON-able object. */
export function sandboxSummary(sandbox: RunningSandbox): Record<string, unknown> {
  return {
    url: sandbox.url,
    issuer: sandbox.issuer,
    discovery: `${sandbox.issuer}/.well-known/openid-configuration`,
    tokenEndpoint: sandbox.tokenEndpoint,
    apiBaseUrl: sandbox.apiBaseUrl,
    openApi: `${sandbox.apiBaseUrl}/docs.jsonopenapi`,
    clients: sandbox.clients,
    apiKey: sandbox.apiKey,
    apiKeyHeader: 'X-IServ-Authentication',
    control: { faults: `${sandbox.url}/__sandbox/faults`, counters: `${sandbox.url}/__sandbox/counters` },
  };
}

function textSummary(sandbox: RunningSandbox): string {
  const { readWrite, readOnly } = sandbox.clients;
  return [
    `Sandbox IDM running at ${sandbox.url}`,
    `  discovery          ${sandbox.issuer}/.well-known/openid-configuration`,
    `  token endpoint     ${sandbox.tokenEndpoint}`,
    `  API base           ${sandbox.apiBaseUrl}`,
    `  OpenAPI            ${sandbox.apiBaseUrl}/docs.jsonopenapi`,
    `  client read+write  ${readWrite.clientId} / ${readWrite.clientSecret}`,
    `  client read-only   ${readOnly.clientId} / ${readOnly.clientSecret}`,
    `  API key            ${sandbox.apiKey} (header X-IServ-Authentication)`,
    `  control            ${sandbox.url}/__sandbox/faults  ${sandbox.url}/__sandbox/counters`,
    '',
    'Press Ctrl+C to stop.',
  ].join('\n');
}

/** Runs the sandbox until `stop` resolves, printing its URLs and credentials first. */
export async function runSandbox(args: CommandArgs, io: CommandIo, stop: Promise<unknown>): Promise<number> {
  const options = sandboxOptionsFromArgs(args, io);
  // Imported here, not at the top: the CLI loads this file for every command, and only this one
  // may load the sandbox and its OAuth2 server (oidc-provider).
  const { startSandbox } = await import('../sandbox/server.js');
  let sandbox: RunningSandbox;
  try {
    sandbox = await startSandbox(options);
  } catch (error) {
    // A port in use or not allowed is no usage error: exit 1, as `serve` gives; a bad fixture is.
    const systemError = typeof (error as NodeJS.ErrnoException).syscall === 'string';
    throw new CommandError(error instanceof Error ? error.message : String(error), systemError ? 1 : 2);
  }
  io.out(flag(args, 'json') ? JSON.stringify(sandboxSummary(sandbox)) : textSummary(sandbox));
  await stop;
  await sandbox.close();
  return 0;
}

function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const done = (signal: string) => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve(signal);
    };
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}

/** `idm-compat sandbox`: runs only the sandbox IDM, for integration tests of other systems. */
export const sandboxCommand: Command = {
  path: ['sandbox'],
  summary: 'Run only the embedded sandbox IDM (OAuth2 server + IDM API v1) until SIGINT/SIGTERM.',
  usage:
    '[--port N] [--host H] [--fixture FILE] [--no-seed] [--no-hydra-prefix] [--page-size N] [--max-page-size N] [--retention SECONDS] [--latency MS] [--error-rate R] [--token-down] [--json]',
  help: `Options:
  --port N          port to listen on, 0 to 65535 (default: a random free port)
  --host H          address to listen on (default 127.0.0.1)
  --fixture FILE    JSON fixture loaded after the demo data (see docs/sandbox.md)
  --no-seed         start without the demo data
  --no-hydra-prefix Hydra collections without the hydra: prefix (member, totalItems, view)
  --page-size N     items per page when a request names no itemsPerPage, from 1 to the
                    largest page size (default 30)
  --max-page-size N largest itemsPerPage, at least 1; larger requests are clamped (default 500)
  --retention SECONDS
                    purge soft-deleted users and groups this long after deletion, 0 or more
                    (default 2592000 = 30 days; 0: at the next API request)
  --latency MS      add MS milliseconds to every API and token request, 0 to 600000
  --error-rate R    answer that share (0 to 1) of API requests with 503
  --token-down      the token endpoint answers 503
  --json            print the URLs and credentials as one JSON object

Numbers are whole unless said otherwise; a value out of its range stops the command (exit 2).
Fault switches can be changed at run time: PUT /__sandbox/faults (loopback only).
Example: idm-compat sandbox --port 9311`,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    fixture: { type: 'string' },
    'no-seed': { type: 'boolean' },
    'no-hydra-prefix': { type: 'boolean' },
    'page-size': { type: 'string' },
    'max-page-size': { type: 'string' },
    retention: { type: 'string' },
    latency: { type: 'string' },
    'error-rate': { type: 'string' },
    'token-down': { type: 'boolean' },
    json: { type: 'boolean' },
  },
  run: (args, io) => runSandbox(args, io, untilSignal()),
};
