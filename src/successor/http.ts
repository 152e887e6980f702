import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { causeChain } from '../lib/cause-chain.js';
import type { Logger } from '../lib/logger.js';
import { redactPath, redactQuery } from '../lib/redact.js';
import { type CallStats, type Observer, successorRoute } from '../observe/observer.js';
import { Agent } from './agent.js';
import { UpstreamError, type UpstreamSource } from './errors.js';

/** The fetch signature the transport uses internally (the global `fetch` fits it). */
export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

/** Settings of the HTTP layer, all defaults already applied. */
export interface HttpSettings {
  connectMs: number;
  totalMs: number;
  retries: { max: number; baseDelayMs: number };
  pool: { connections: number; keepAliveMs: number };
  /**
   * The largest answer body read, in bytes (token and discovery answers included): past it the
   * call is aborted and fails as `bad_response`, before the body is held whole in memory.
   */
  maxResponseBytes: number;
  /** When given, used as is: the pool and the connect timeout are then the injected fetch's business. */
  fetch?: FetchFn;
  logger: Logger;
  /** Jitter source, injectable for tests. */
  random?: () => number;
  /** Told about every HTTP call (metrics, per-request call counts). */
  observer?: Pick<Observer, 'successorCall'> | undefined;
}

/**
 * Where a call goes: the parts of its URL the transport reads. A WHATWG `URL` is one; the client
 * builds a plain one for a path that needs no parsing (see `SuccessorClient`).
 */
export interface CallTarget {
  readonly origin: string;
  readonly pathname: string;
  /** `?` and the query, or empty. */
  readonly search: string;
  readonly href: string;
}

/** One request as the transport sends it. */
export interface HttpCall {
  method: string;
  url: CallTarget;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** Idempotent read: retried on network errors and 502/503/504. */
  retry: boolean;
  source: UpstreamSource;
  /** The counter of the unit of work this call belongs to; every attempt adds to it. */
  calls?: CallStats | undefined;
}

/** Response headers by (case-insensitive) name; a fetch `Headers` is one. */
export interface HeaderLookup {
  get(name: string): string | null;
}

/** A complete response: status, headers and the body read to the end, as it arrived. */
export interface HttpResult {
  status: number;
  headers: HeaderLookup;
  /**
   * The body's chunks as the socket delivered them, not text: a collection page read ahead waits
   * outside the JavaScript heap until its turn, instead of as a large string the garbage
   * collector keeps moving; and no chunk is copied into one large buffer, which would raise
   * malloc's mmap threshold and leave the process holding the freed memory.
   */
  body: readonly Buffer[];
}

/** A body as text: UTF-8 without a byte order mark, as fetch's `text()` reads it. */
export function bodyText(body: readonly Buffer[]): string {
  const [only] = body;
  if (body.length === 1 && only !== undefined) {
    const bom = only.length > 2 && only[0] === 0xef && only[1] === 0xbb && only[2] === 0xbf;
    return only.toString('utf8', bom ? 3 : 0);
  }
  // Chunk by chunk: a character split between two chunks is put back together.
  const decoder = new TextDecoder();
  let text = '';
  for (const chunk of body) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

/**
 * Gives the memory of a body already read back now, not whenever the garbage collector gets to it.
 * A collection page read ahead waits long enough for its chunks to reach V8's old generation,
 * which frees their bytes (outside the heap) only at its next full collection: over a long list
 * that held tens of MiB. Each chunk's buffer is handed to a new, unreferenced one (a transfer, no
 * copy), which the next young-generation collection frees. A chunk is a view of a socket read
 * (undici) or of the body's own bytes (a `fetch` answer), holding nothing but this answer; several
 * chunks of a chunked answer may view one socket read, which the first of them hands over. Never
 * handed over is one of Buffer's shared pools, which small Buffers are cut from (a stream that
 * joins two socket reads into one small chunk cuts it from the pool in use): a pool is
 * Buffer.poolSize long and cut into pieces under half of that. The chunks are empty afterwards.
 */
export function releaseBody(body: readonly Buffer[]): void {
  for (const chunk of body) {
    const { buffer } = chunk;
    // Handed over already through another chunk (Node 22 and later throw on a second transfer).
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength === 0) continue;
    const poolSlice = buffer.byteLength === Buffer.poolSize && chunk.byteLength < Buffer.poolSize >>> 1;
    if (!poolSlice) structuredClone(buffer, { transfer: [buffer] });
  }
}

const RETRY_STATUSES = new Set([502, 503, 504]);

/** Error codes of a connection that was never made: a request failing with one of them was not sent. */
const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

/**
 * The successor client's HTTP layer: a keep-alive pool (undici Agent with a connect timeout, used
 * through its `dispatch`, not the WHATWG fetch), a total timeout per call (one timer, also watching
 * the caller's signal), and retries with exponential backoff and jitter for idempotent reads only.
 */
export class HttpTransport {
  readonly #settings: HttpSettings;
  readonly #agent: Agent | undefined;
  /** Set once `close` was called. */
  #closed: Promise<void> | undefined;
  readonly #fetch: FetchFn;
  readonly #random: () => number;

  constructor(settings: HttpSettings) {
    this.#settings = settings;
    this.#random = settings.random ?? Math.random;
    if (settings.fetch) {
      this.#agent = undefined;
      this.#fetch = settings.fetch;
    } else {
      const agent = new Agent({
        connect: { timeout: settings.connectMs },
        connections: settings.pool.connections,
        // 0 means "no keep-alive": undici wants a positive number, 1 ms closes idle sockets at once.
        keepAliveTimeout: Math.max(1, settings.pool.keepAliveMs),
        keepAliveMaxTimeout: Math.max(1, settings.pool.keepAliveMs),
      });
      this.#agent = agent;
      // The token and discovery calls go through the same pool, as a fetch (openid-client wants
      // one) made of the Agent's dispatch: undici's own fetch would load the rest of undici.
      this.#fetch = (url, init) =>
        agentFetch(agent, url, init, settings.totalMs, {
          maxBytes: settings.maxResponseBytes,
          tooLarge: (status) => this.#tooLarge('token', init.method ?? 'GET', new URL(url).pathname, status),
        });
    }
  }

  /** The pooled fetch for openid-client (discovery and token calls); counted as token calls. */
  readonly tokenFetch = async (
    url: string,
    init: {
      body?: unknown;
      headers: Record<string, string>;
      method: string;
      redirect?: 'manual';
      signal?: AbortSignal;
    },
  ): Promise<Response> => {
    const started = performance.now();
    let status: number | undefined;
    try {
      const response = await this.#fetch(url, init as RequestInit);
      status = response.status;
      return response;
    } finally {
      const durationMs = performance.now() - started;
      this.#settings.observer?.successorCall?.({
        kind: 'token',
        method: init.method,
        route: successorRoute(new URL(url).pathname),
        status: status ?? 0,
        durationMs,
      });
      this.#settings.logger.debug(
        {
          successor: { kind: 'token', method: init.method, path: new URL(url).pathname, status, durationMs },
        },
        'successor token call',
      );
    }
  };

  /**
   * Sends one call, retrying idempotent reads; resolves with any HTTP status (the caller maps
   * statuses) and rejects with an UpstreamError for timeouts and network failures, or with the
   * caller's abort reason when its signal fired.
   */
  async send(call: HttpCall): Promise<HttpResult> {
    const maxAttempts = call.retry ? 1 + this.#settings.retries.max : 1;
    for (let attempt = 1; ; attempt++) {
      let outcome: HttpResult | UpstreamError;
      try {
        outcome = await this.#attempt(call, attempt);
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        outcome = error;
      }
      const retryable =
        outcome instanceof UpstreamError
          ? outcome.details.retryable === true
          : RETRY_STATUSES.has(outcome.status);
      if (!retryable || attempt >= maxAttempts) {
        if (outcome instanceof UpstreamError) throw outcome;
        return outcome;
      }
      await sleep(this.#backoffMs(attempt), call.signal);
    }
  }

  /** Throws what a call gets once the transport is closed (before it asks for a token, say). */
  assertOpen(call: HttpCall): void {
    if (this.#closed !== undefined) throw closedError(call);
  }

  /** Closes the pooled connections (waits for running calls); once, however often it is called. */
  close(): Promise<void> {
    this.#closed ??= this.#agent?.close() ?? Promise.resolve();
    return this.#closed;
  }

  /**
   * One attempt through the pool. Not an async function: the answer's handler settles the attempt
   * itself (timer cleared, call counted, the failure mapped), so a call has no promise besides its
   * own. The failure is the caller's abort reason when its signal fired, else an UpstreamError.
   */
  #attempt(call: HttpCall, attempt: number): Promise<HttpResult> {
    const agent = this.#agent;
    if (!agent) return this.#fetchAttempt(call, attempt);
    call.signal?.throwIfAborted();
    const deadline = new Deadline(this.#settings.totalMs, call.signal);
    const started = performance.now();
    return new Promise((resolve, reject) => {
      let settled = false;
      let handler: CollectingHandler | undefined;
      // Settles once, and the caller gets its answer or failure even if the accounting throws.
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        deadline.clear();
        try {
          this.#account(call, attempt, started, undefined);
        } finally {
          reject(
            call.signal?.aborted
              ? call.signal.reason
              : error instanceof UpstreamError
                ? error
                : this.#networkError(
                    call,
                    error,
                    deadline.timedOut,
                    handler?.requestStarted === true,
                    handler?.answeredStatus ?? 0,
                  ),
          );
        }
      };
      const succeed = (result: HttpResult) => {
        if (settled) return;
        settled = true;
        deadline.clear();
        try {
          this.#account(call, attempt, started, result.status);
        } finally {
          resolve(result);
        }
      };
      try {
        handler = new CollectingHandler(deadline, succeed, fail, {
          maxBytes: this.#settings.maxResponseBytes,
          tooLarge: (status) => this.#tooLarge(call.source, call.method, call.url.pathname, status),
        });
        // The body is read inside the same timeout: a server that sends headers and then stalls
        // is a timeout too.
        agent.dispatch(
          {
            origin: call.url.origin,
            path: `${call.url.pathname}${call.url.search}`,
            method: call.method as Dispatcher.HttpMethod,
            headers: call.headers,
            body: call.body ?? null,
          },
          handler,
        );
      } catch (error) {
        fail(error);
      }
    });
  }

  /** One attempt through an injected fetch (see `#attempt`). */
  async #fetchAttempt(call: HttpCall, attempt: number): Promise<HttpResult> {
    call.signal?.throwIfAborted();
    const deadline = new Deadline(this.#settings.totalMs, call.signal);
    const started = performance.now();
    let status: number | undefined;
    // The answer's status once its headers came (its body may break off after them).
    let answered = 0;
    try {
      const result = await this.#fetchOnce(call, deadline.abortSignal(), (begun) => {
        answered = begun;
      });
      status = result.status;
      return result;
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      if (error instanceof UpstreamError) throw error;
      // A fetch does not say whether it got as far as sending: only a failure to connect proves not.
      throw this.#networkError(call, error, deadline.timedOut, true, answered);
    } finally {
      deadline.clear();
      this.#account(call, attempt, started, status);
    }
  }

  /** Counts a finished attempt: the call's counter, the metrics and (at debug level) a log line. */
  #account(call: HttpCall, attempt: number, started: number, status: number | undefined): void {
    const durationMs = performance.now() - started;
    if (call.calls) {
      call.calls.calls += 1;
      call.calls.durationMs += durationMs;
    }
    this.#settings.observer?.successorCall?.({
      kind: 'api',
      method: call.method,
      route: successorRoute(call.url.pathname),
      status: status ?? 0,
      durationMs,
    });
    // Checked first: the line's object and path are not built per call when debug is off.
    if (this.#settings.logger.isLevelEnabled('debug'))
      this.#settings.logger.debug(
        {
          successor: {
            method: call.method,
            path: loggedTarget(call.url),
            status,
            durationMs: Math.round(durationMs),
            attempt,
          },
        },
        'successor call',
      );
  }

  /** One call through an injected fetch. */
  async #fetchOnce(
    call: HttpCall,
    signal: AbortSignal,
    answered: (status: number) => void,
  ): Promise<HttpResult> {
    const response = await this.#fetch(call.url.href, {
      method: call.method,
      headers: call.headers,
      ...(call.body === undefined ? {} : { body: call.body }),
      redirect: 'manual',
      signal,
    });
    answered(response.status);
    const tooLarge = () => this.#tooLarge(call.source, call.method, call.url.pathname, response.status);
    const { maxResponseBytes } = this.#settings;
    if (Number(response.headers.get('content-length') ?? 0) > maxResponseBytes) {
      await response.body?.cancel();
      throw tooLarge();
    }
    // Read whole, as one buffer releaseBody can hand back: an injected fetch (tests, special
    // set-ups) is its owner's to bound; the pooled transport stops reading at the cap.
    const bytes = await response.arrayBuffer();
    if (bytes.byteLength > maxResponseBytes) throw tooLarge();
    return { status: response.status, headers: response.headers, body: [Buffer.from(bytes)] };
  }

  /**
   * The failure of an answer larger than `maxResponseBytes` (which is then not read further). The
   * request was answered, so a write's outcome is unknown to the caller (`sent`), never "not done".
   */
  #tooLarge(source: UpstreamSource, method: string, path: string, status: number): UpstreamError {
    return new UpstreamError(
      'bad_response',
      `the successor's answer to ${method} ${path} (${status}) is larger than ${this.#settings.maxResponseBytes} bytes (successor.maxResponseBytes); it was not read. Raise the setting if such answers are expected (for a paginated collection, a smaller successor.pageSize also makes its pages smaller)`,
      { source, status, method, path, sent: true },
    );
  }

  /**
   * The failure of an attempt that got no (complete) answer. `started`: the request got a
   * connection and went out (or may have); whether it `sent` anything then depends on whether the
   * failure was one to connect, which a write's caller needs to tell "not done" from "unknown".
   */
  #networkError(
    call: HttpCall,
    error: unknown,
    timedOut: boolean,
    started: boolean,
    answered = 0,
  ): UpstreamError {
    const where = `${call.method} ${call.url.pathname}`;
    const code = errorCode(error);
    const sent = started && !(code !== undefined && CONNECT_FAILURES.has(code));
    const base = { source: call.source, method: call.method, path: call.url.pathname, cause: error, sent };
    if (timedOut) {
      return new UpstreamError(
        'timeout',
        `the successor did not answer ${where} within ${this.#settings.totalMs} ms (successor.timeouts.totalMs); check the IDM API's load or raise the timeout`,
        base,
      );
    }
    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new UpstreamError(
        'timeout',
        `could not connect to the successor at ${call.url.origin} within ${this.#settings.connectMs} ms (${where}; successor.timeouts.connectMs); check the address and the network`,
        { ...base, retryable: true },
      );
    }
    // The successor was reached and began its answer, which then broke off (or its body could not
    // be parsed): not an address to check.
    if (answered > 0)
      return new UpstreamError(
        'unavailable',
        `the successor's answer to ${where} (${answered}) broke off or was malformed after its headers (${code ?? describe(error)}); check the IDM API's health and any proxy or load balancer before it`,
        { ...base, retryable: true },
      );
    // The pool was closed by the proxy's own shutdown (a call that outlived it): nothing went out.
    if (this.#closed !== undefined && !started && (code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED'))
      return closedError(call, error);
    return new UpstreamError(
      'unavailable',
      `could not reach the successor at ${call.url.origin} (${where}: ${code ?? describe(error)}); check successor.baseUrl and that the IDM API is up`,
      { ...base, retryable: true },
    );
  }

  #backoffMs(attempt: number): number {
    const ceiling = this.#settings.retries.baseDelayMs * 2 ** (attempt - 1);
    // "Equal jitter": at least half the exponential delay, so retries never bunch at zero.
    return ceiling / 2 + (this.#random() * ceiling) / 2;
  }
}

/**
 * Collects one answer for `#attempt`: its status, headers and every chunk of its body, settling
 * once the body is complete or the call fails. The deadline fails the call however far it got:
 * while it waits for a connection (queued behind others, or connecting) at once, and the request
 * is then aborted before anything is sent should it get one; after that through undici's abort.
 */
class CollectingHandler implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #started = false;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  readonly #chunks: Buffer[] = [];
  #bytes = 0;
  readonly #deadline: Deadline;
  readonly #resolve: (result: CollectedResult) => void;
  readonly #reject: (error: unknown) => void;
  readonly #limit: BodyLimit;

  constructor(
    deadline: Deadline,
    resolve: (result: CollectedResult) => void,
    reject: (error: unknown) => void,
    limit: BodyLimit,
  ) {
    this.#deadline = deadline;
    this.#limit = limit;
    this.#resolve = resolve;
    this.#reject = reject;
    deadline.onAbort((reason) => {
      // undici hands the reason on to onResponseError as it is, whatever it is.
      if (this.#controller) this.#controller.abort(reason as Error);
      // Still queued or connecting: the call fails now, and is aborted before anything is sent
      // should it get a connection later (onRequestStart).
      else this.#reject(reason);
    });
  }

  /**
   * The request got a connection and is being written (undici starts it just before the first
   * byte goes out); a failure after that may come after the successor received it.
   */
  get requestStarted(): boolean {
    return this.#started;
  }

  /** The status of the answer once it has begun (its headers arrived), 0 before. */
  get answeredStatus(): number {
    return this.#status;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Given up while it waited for the connection: aborted here, before anything is written.
    if (this.#deadline.aborted) controller.abort(this.#deadline.reason as Error);
    else this.#started = true;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // A 1xx answer is informational: the real one follows.
    if (statusCode < 200) return;
    this.#status = statusCode;
    this.#headers = headers;
    // Refused before a byte of the body is read when its announced length is already too much.
    if (Number(headers['content-length'] ?? 0) > this.#limit.maxBytes)
      controller.abort(this.#limit.tooLarge(statusCode));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (controller.aborted) return;
    this.#bytes += chunk.length;
    // Counted as it arrives: a chunked answer announces no length.
    if (this.#bytes > this.#limit.maxBytes) {
      this.#chunks.length = 0;
      controller.abort(this.#limit.tooLarge(this.#status));
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.#resolve({ status: this.#status, headers: new PlainHeaders(this.#headers), body: this.#chunks });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#reject(error);
  }
}

/** How much of an answer body a CollectingHandler reads, and the failure once it is past that. */
interface BodyLimit {
  maxBytes: number;
  tooLarge: (status: number) => Error;
}

/** The most specific error code in an error's cause chain (`ECONNREFUSED`, `UND_ERR_SOCKET`, …). */
function errorCode(error: unknown): string | undefined {
  let found: string | undefined;
  for (const link of causeChain(error)) {
    const code: unknown = Reflect.get(link, 'code');
    if (typeof code === 'string') found = code;
  }
  return found;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Waits `ms`, or rejects with the signal's reason when it fires first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The total timeout of one attempt and the caller's signal, as one abort source: a single timer
 * and one listener (the call's handler), instead of AbortSignal.timeout and AbortSignal.any per
 * call. An AbortSignal is made only for an injected fetch.
 */
class Deadline {
  aborted = false;
  reason: unknown;
  timedOut = false;
  readonly #timer: NodeJS.Timeout;
  readonly #parent: AbortSignal | undefined;
  readonly #onParentAbort: (() => void) | undefined;
  #listener: ((reason: unknown) => void) | undefined;
  #controller: AbortController | undefined;

  constructor(ms: number, parent: AbortSignal | undefined) {
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.#abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, ms);
    this.#parent = parent;
    if (parent) {
      this.#onParentAbort = () => this.#abort(parent.reason);
      parent.addEventListener('abort', this.#onParentAbort, { once: true });
    }
  }

  /** Calls `listener` with the reason when the deadline fires (the one listener a call has). */
  onAbort(listener: (reason: unknown) => void): void {
    this.#listener = listener;
  }

  /** An AbortSignal that follows this deadline (for fetch). */
  abortSignal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.aborted) this.#controller.abort(this.reason);
    return this.#controller.signal;
  }

  /** Stops the timer and lets go of the caller's signal. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#listener = undefined;
    if (this.#parent && this.#onParentAbort) this.#parent.removeEventListener('abort', this.#onParentAbort);
  }

  #abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#controller?.abort(reason);
    this.#listener?.(reason);
  }
}

/** Header look-up on undici's plain header object (names are lower case there). */
class PlainHeaders implements HeaderLookup {
  constructor(readonly raw: IncomingHttpHeaders) {}

  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }

  /** As a fetch `Headers`, every value of a repeated header kept. */
  toFetchHeaders(): Headers {
    const headers = new Headers();
    for (const [name, value] of Object.entries(this.raw)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    return headers;
  }
}

/** An answer as CollectingHandler collects it. */
interface CollectedResult extends HttpResult {
  headers: PlainHeaders;
}

/** Statuses whose answer has no body (a fetch Response refuses one for them). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * The fetch of the requests openid-client makes (discovery GETs, token POSTs with a form body)
 * through an Agent's `dispatch`: redirects are not followed (openid-client asks for
 * `redirect: 'manual'`), the caller's signal and `totalMs` bound the call, and the answer is read
 * whole, up to `limit`. Unlike undici's fetch it asks for `Accept-Encoding: identity` and decodes
 * nothing, as for the API calls: a server that compresses anyway gives a body that is no JSON (a
 * `bad_response`). It fails as fetch does: with the signal's reason when that fired (a timeout: a
 * `TimeoutError`), otherwise with a TypeError "fetch failed" whose cause is undici's error (or the
 * limit's, for an answer past it).
 */
async function agentFetch(
  agent: Agent,
  url: string,
  init: RequestInit,
  totalMs: number,
  limit: BodyLimit,
): Promise<Response> {
  const target = new URL(url);
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const headers = Object.fromEntries(new Headers(init.headers));
  headers['accept-encoding'] ??= 'identity';
  let body: string | null = null;
  if (typeof init.body === 'string') body = init.body;
  else if (init.body instanceof URLSearchParams) {
    body = init.body.toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded;charset=UTF-8';
  } else if (init.body != null) throw new TypeError('this fetch sends only string and form bodies');
  const deadline = new Deadline(totalMs, signal);
  try {
    const result = await new Promise<CollectedResult>((resolve, reject) => {
      agent.dispatch(
        {
          origin: target.origin,
          path: `${target.pathname}${target.search}`,
          method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
          headers,
          body,
        },
        new CollectingHandler(deadline, resolve, reject, limit),
      );
    });
    return new Response(NULL_BODY_STATUSES.has(result.status) ? null : Buffer.concat(result.body), {
      status: result.status,
      headers: result.headers.toFetchHeaders(),
    });
  } catch (error) {
    if (deadline.aborted) throw deadline.reason;
    throw new TypeError('fetch failed', { cause: error });
  } finally {
    deadline.clear();
  }
}

/** The failure of a call made once the proxy's shutdown closed the transport: it was not sent. */
function closedError(call: HttpCall, cause?: unknown): UpstreamError {
  return new UpstreamError(
    'unavailable',
    `the proxy is shutting down: its successor client is closed, ${call.method} ${call.url.pathname} was not sent`,
    { source: call.source, method: call.method, path: call.url.pathname, sent: false, cause },
  );
}

/**
 * A call's path and query as its debug line shows them: a legacy ID the caller sent goes into the
 * query (`user=…`), so a credential pasted into it is redacted, as on the request's own line. For
 * the log only: the call itself goes out as it is.
 */
function loggedTarget(url: CallTarget): string {
  const path = redactPath(url.pathname);
  return url.search === '' ? path : `${path}?${redactQuery(url.search.slice(1))}`;
}
