import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { patternMatches } from '../lib/operation-patterns.js';
import { credentialSpellings, withoutSecrets } from '../lib/redact.js';
import { cappedAnswer } from './exchange.js';
import { hasRedactedBody, type RecordedExchange } from './recording.js';

/** Options of {@link replayExchanges}. */
export interface ReplayOptions {
  /** The target's legacy base URL, e.g. `http://127.0.0.1:8080/iserv/api`. */
  target: string;
  /** API user and password the target accepts (HTTP Basic). */
  user: string;
  password: string;
  /** Operation ids or globs to replay (`user.*`, `*`; default every operation). */
  operations?: readonly string[];
  /** Replay writes (everything but GET and HEAD) too; default reads only. */
  writes?: boolean;
  /** Requests in flight at once (default 4). */
  concurrency?: number;
  /** Requests started per second at most (default unlimited). */
  rate?: number;
  /** Per-request timeout in ms, for the whole exchange up to the answer's last byte (default 30 000). */
  timeoutMs?: number;
  /** HTTP dispatcher (default a keep-alive agent sized to `concurrency`). */
  dispatcher?: Dispatcher;
  /** Wall clock in ms (the `time` of each answer). */
  now?: () => number;
  /** Called with (done, total) after every request. */
  onProgress?: (done: number, total: number) => void;
}

/** Why a recorded exchange was not replayed. */
export interface ReplaySkipped {
  /** Writes, without `writes`. */
  writes: number;
  /** Operations outside the `operations` globs. */
  operations: number;
  /** Bodies holding a redacted secret (a password): replaying would send the placeholder. */
  redactedBody: number;
  /**
   * Bodies the recording could not hold (`requestBodyOmitted`: not UTF-8, not JSON nor form, never
   * read; and a 413 or 415 recorded without a body): replayed without one, a write refused for its
   * body (a DELETE's) would be carried out.
   */
  unreadableBody: number;
}

/**
 * A request the proxy refused for a body it never read (413 too large, 415 compressed), recorded
 * without a body and without the `requestBodyOmitted` mark by versions before the mark covered
 * it: replayed without its body, the refused write (a DELETE) would be carried out.
 */
function refusedForUnreadBody(exchange: RecordedExchange): boolean {
  return (exchange.status === 413 || exchange.status === 415) && exchange.requestBody === null;
}

/** A request the target did not answer. */
export interface ReplayFailure {
  requestId: string;
  operation: string;
  message: string;
}

/** What a replay did. */
export interface ReplaySummary {
  total: number;
  replayed: number;
  skipped: ReplaySkipped;
  failures: ReplayFailure[];
  /** Answers per status code. */
  statuses: Record<string, number>;
}

const READ_METHODS = new Set(['GET', 'HEAD']);

/** Whether a recorded request only reads. */
export function isRead(exchange: RecordedExchange): boolean {
  return READ_METHODS.has(exchange.method.toUpperCase());
}

/** The URL a recorded request goes to on `target` (its legacy base URL). */
export function replayUrl(target: string, exchange: RecordedExchange): string {
  const base = target.replace(/\/+$/, '');
  const url = `${base}${exchange.path}${exchange.query === '' ? '' : `?${exchange.query}`}`;
  // The recording's schema refuses dot segments; whatever else a URL parser resolves must still
  // land below the target's base path, never elsewhere on its host with the replay's credentials.
  const basePath = new URL(base).pathname.replace(/\/+$/, '');
  const { pathname } = new URL(url);
  if (pathname !== basePath && !pathname.startsWith(`${basePath}/`))
    throw new Error(`the path ${JSON.stringify(exchange.path)} leaves --target's base path ${basePath}`);
  return url;
}

function encodeBody(exchange: RecordedExchange): { body?: string; contentType?: string } {
  const value = exchange.requestBody;
  if (value === null || value === undefined) return {};
  if (exchange.requestFormat === 'form' && typeof value === 'object' && !Array.isArray(value)) {
    const form = new URLSearchParams();
    for (const [key, inner] of Object.entries(value)) {
      for (const item of Array.isArray(inner) ? inner : [inner]) form.append(key, String(item));
    }
    return { body: form.toString(), contentType: 'application/x-www-form-urlencoded' };
  }
  return { body: JSON.stringify(value), contentType: 'application/json' };
}

/**
 * Sends recorded requests to a server that speaks the legacy API and hands each answer to
 * `sink` as a recorded exchange (same request id), in the recording's order. Reads run
 * `concurrency` at a time; a write waits for everything before it and runs alone, so the
 * target sees writes in their recorded order.
 */
export async function replayExchanges(
  exchanges: readonly RecordedExchange[],
  options: ReplayOptions,
  sink: (exchange: RecordedExchange) => void,
): Promise<ReplaySummary> {
  const concurrency = options.concurrency ?? 4;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new RangeError('concurrency must be an integer ≥ 1');
  if (options.rate !== undefined && !(options.rate > 0))
    throw new RangeError('rate must be a positive number');
  const patterns = options.operations ?? ['*'];
  const now = options.now ?? Date.now;
  const skipped: ReplaySkipped = { writes: 0, operations: 0, redactedBody: 0, unreadableBody: 0 };
  const selected: RecordedExchange[] = [];
  for (const exchange of exchanges) {
    if (!patterns.some((pattern) => patternMatches(pattern, exchange.operation))) skipped.operations += 1;
    else if (!isRead(exchange) && !options.writes) skipped.writes += 1;
    else if (hasRedactedBody(exchange)) skipped.redactedBody += 1;
    else if (exchange.requestBodyOmitted !== undefined || refusedForUnreadBody(exchange))
      skipped.unreadableBody += 1;
    else selected.push(exchange);
  }
  // undici is loaded here, not with the module: its index loads all of it (fetch, WebSocket,
  // caches), which the serving proxy, importing the CLI, should not carry (src/successor/agent.ts).
  const { Agent, request } = await import('undici');
  const ownAgent = options.dispatcher ? undefined : new Agent({ connections: concurrency });
  const dispatcher = options.dispatcher ?? ownAgent;
  const authorization = `Basic ${Buffer.from(`${options.user}:${options.password}`).toString('base64')}`;
  // The replay's own credentials, as a target that repeats them in an answer would write them
  // (the password, `user:password`, its base64): never in the answers written out.
  const ownSecrets = credentialSpellings(options.user, options.password);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const interval = options.rate === undefined ? 0 : 1000 / options.rate;
  let nextStart = 0;
  const failures: ReplayFailure[] = [];
  const statuses: Record<string, number> = {};
  // Answers are handed on in recorded order: finished ones wait for those before them.
  const results: (RecordedExchange | null | undefined)[] = new Array(selected.length);
  let emitted = 0;
  let done = 0;
  const emit = () => {
    while (emitted < results.length && results[emitted] !== undefined) {
      const result = results[emitted];
      if (result) sink(result);
      emitted += 1;
    }
  };

  const send = async (index: number, exchange: RecordedExchange) => {
    if (interval > 0) {
      const at = Math.max(now(), nextStart);
      nextStart = at + interval;
      const wait = at - now();
      if (wait > 0) await sleep(wait);
    }
    const { body, contentType } = encodeBody(exchange);
    const started = performance.now();
    const time = new Date(now()).toISOString();
    // The whole exchange, the body included: a target that trickles its answer never goes idle
    // for bodyTimeout, so only this ends it. undici destroys the body when it fires.
    const deadline = AbortSignal.timeout(timeoutMs);
    try {
      const answer = await request(replayUrl(options.target, exchange), {
        method: exchange.method.toUpperCase() as Dispatcher.HttpMethod,
        headers: {
          authorization,
          accept: 'application/json',
          'x-request-id': exchange.requestId,
          ...(contentType ? { 'content-type': contentType } : {}),
        },
        body,
        dispatcher,
        signal: deadline,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      // Capped like the proxy's own recording: a larger answer is recorded without its body.
      // Read as the client would: a target that compresses is recorded decoded.
      const encoding = answer.headers['content-encoding'];
      const response = await cappedAnswer(
        answer.body,
        Array.isArray(encoding) ? encoding.join(', ') : encoding,
      );
      statuses[answer.statusCode] = (statuses[answer.statusCode] ?? 0) + 1;
      // The recorded answer's own fields go: its body left out is no reason to leave out this one's.
      const { responseBodyOmitted: _recorded, ...sent } = exchange;
      results[index] = {
        ...sent,
        time,
        apiUser: options.user,
        mode: 'replay',
        status: answer.statusCode,
        ...response,
        responseBody: withoutSecrets(response.responseBody, ownSecrets),
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      };
    } catch (error) {
      failures.push({
        requestId: exchange.requestId,
        operation: exchange.operation,
        message: deadline.aborted
          ? `timeout: no whole answer within ${timeoutMs} ms`
          : error instanceof Error
            ? error.message
            : String(error),
      });
      results[index] = null;
    }
    done += 1;
    options.onProgress?.(done, selected.length);
    emit();
  };

  try {
    const running = new Set<Promise<void>>();
    for (const [index, exchange] of selected.entries()) {
      const write = !isRead(exchange);
      // A write runs alone: after everything before it, before anything after it.
      while (running.size >= (write ? 1 : concurrency)) await Promise.race(running);
      const task: Promise<void> = send(index, exchange).finally(() => running.delete(task));
      running.add(task);
      if (write) await task;
    }
    await Promise.all(running);
  } finally {
    await ownAgent?.close();
  }
  return {
    total: exchanges.length,
    replayed: selected.length - failures.length,
    skipped,
    failures,
    statuses,
  };
}
