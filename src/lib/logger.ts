import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Paths pino removes from every log line. Secrets never reach the logs: request and
 * response headers that carry credentials, and any field named like a secret at the top
 * level or one or two levels down.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-iserv-authentication"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-iserv-authentication"]',
  ...[
    'password',
    'newPassword',
    'token',
    'accessToken',
    'access_token',
    'refreshToken',
    'clientSecret',
    'client_secret',
    'secret',
    'apiKey',
  ].flatMap((key) => [key, `*.${key}`, `*.*.${key}`]),
];

export interface LoggerOptions {
  level?: string;
  /** Where lines go; stdout (asynchronously written) when absent. Tests pass a stream to read the lines back. */
  destination?: DestinationStream;
}

/** Creates the root pino logger with secret redaction; everything else logs through children of it. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const config = {
    level: options.level ?? 'info',
    base: { service: 'idm-compat' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // Stdout is written asynchronously: lines logged while a write is under way go out together with
  // the next one, instead of one write system call per line. pino flushes what is left on exit.
  return pino(config, options.destination ?? pino.destination({ dest: 1, sync: false }));
}

/** A logger that writes nothing, for tools and tests that do not care about logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
