import { type DestinationStream, type Logger, pino } from 'pino';
import { redactText, redactValue } from './redact.js';

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
  /** Where lines go; stdout (written in batches, stdoutDestination) when absent. Tests pass a stream to read the lines back. */
  destination?: DestinationStream;
  /**
   * Stdout only: lines are collected until this many bytes wait, and written together (at least
   * once a second, and at exit); 0 or absent writes each line as it comes.
   */
  bufferBytes?: number;
}

/** How often collected stdout lines are written however few they are. */
const LOG_FLUSH_INTERVAL_MS = 1_000;

/** Creates the root pino logger with secret redaction; everything else logs through children of it. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const config = {
    level: options.level ?? 'info',
    base: { service: 'idm-compat' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError },
    timestamp: isoTimestamp(),
  };
  return pino(config, options.destination ?? stdoutDestination(options.bufferBytes ?? 0));
}

/**
 * pino's error serializer (type, message, stack with its causes, own fields), with a message that
 * names each cause once, redacted. pino appends every cause's message to the error's own (`A: B:
 * C`), and the proxy's errors already end with what their cause said (a request's
 * TranslationError repeats its UpstreamError's sentence), so a log line said the same sentence
 * twice. An error of a library may quote what a server answered (openid-client keeps a token
 * endpoint's `error_description`, which may repeat the client secret it was sent), so the whole
 * serialized error is redacted as a recording is (src/lib/redact.ts): its texts and the values of
 * its secret-named fields.
 */
export function serializeError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error);
  if (serialized === error || !isErrorLike(error)) return serialized;
  const redacted = redactValue({ ...serialized, message: '' }) as typeof serialized;
  redacted.message = messageWithCauses(error);
  return redacted;
}

/**
 * An error's message followed by those of its causes (`: `-separated), leaving out a cause's
 * message the text already holds, each redacted by itself: joined first, the `: ` after a message
 * ending in a secret's word (`… check successor.auth.clientSecret`) read as `clientSecret: …`, and
 * the cause's first word was taken for the secret.
 */
function messageWithCauses(error: { message: string; cause?: unknown }): string {
  let message = redactText(error.message);
  const seen = new Set<unknown>([error]);
  for (let cause = error.cause; isErrorLike(cause) && !seen.has(cause); cause = cause.cause) {
    seen.add(cause);
    const said = redactText(cause.message);
    if (said !== '' && !message.includes(said)) message += `: ${said}`;
  }
  return message;
}

/** What pino takes for an error: an object with a string `message`. */
function isErrorLike(value: unknown): value is { message: string; cause?: unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { message?: unknown }).message === 'string'
  );
}

/**
 * pino's ISO time field (`,"time":"2026-11-23T21:26:13.042Z"`), with the date and time up to the
 * second formatted once per second instead of once per line.
 */
function isoTimestamp(): () => string {
  let second = Number.NaN;
  let prefix = '';
  return () => {
    const now = Date.now();
    // Never negative, also before 1970 (a test's clock).
    const millis = ((now % 1000) + 1000) % 1000;
    if (now - millis !== second) {
      second = now - millis;
      prefix = `,"time":"${new Date(second).toISOString().slice(0, 20)}`;
    }
    return `${prefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z"`;
  };
}

/**
 * Stdout, written synchronously, as pino's own destination is by default. With `bufferBytes`,
 * lines are collected up to that size, so a busy server makes one write system call for many
 * lines instead of one per request; sonic-boom's `periodicFlush` writes what waits at least every
 * LOG_FLUSH_INTERVAL_MS (its timer does not keep the process alive and stops when the destination
 * closes), and what is left is written when the process exits. Not asynchronously: that hands
 * every write to libuv's thread pool and back (two thread wake-ups), which cost the proxy about 4 %
 * of its CPU per warm GET against batched synchronous writes (docs/performance.md), and lets the
 * lines pile up in memory without bound while stdout does not drain; written synchronously, a
 * stdout that stops draining holds the proxy up instead (docs/operations.md#logs).
 */
function stdoutDestination(bufferBytes: number): DestinationStream {
  const destination = pino.destination({
    dest: 1,
    sync: true,
    minLength: bufferBytes,
    ...(bufferBytes > 0 ? { periodicFlush: LOG_FLUSH_INTERVAL_MS } : {}),
  });
  // pino writes out what an asynchronous destination still holds when the process exits, not a
  // synchronous one: the lines that wait for the batch to fill are written here.
  const flushAtExit = () => {
    try {
      destination.flushSync();
    } catch {
      // stdout is gone (closed, or a pipe nobody reads any more): there is nowhere left to write.
    }
  };
  process.once('exit', flushAtExit);
  destination.once('close', () => process.off('exit', flushAtExit));
  return destination;
}

/** A logger that writes nothing, for tools and tests that do not care about logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
