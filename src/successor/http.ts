import { Agent, fetch as undiciFetch } from 'undici';
import type { Logger } from '../lib/logger.js';
import { type Observer, successorRoute } from '../observe/observer.js';
import { UpstreamError, type UpstreamSource } from './errors.js';

/** The fetch signature the transport uses internally (the global `fetch` fits it). */
export type FetchFn = (url: string, init: RequestInit) => Promise<Response>;

/** Settings of the HTTP layer, all defaults already applied. */
export interface HttpSettings {
  connectMs: number;
  totalMs: number;
  retries: { max: number; baseDelayMs: number };
  pool: { connections: number; keepAliveMs: number };
  /** When given, used as is: the pool and the connect timeout are then the injected fetch's business. */
  fetch?: FetchFn;
  logger: Logger;
  /** Jitter source, injectable for tests. */
  random?: () => number;
  /** Told about every HTTP call (metrics, per-request call counts). */
  observer?: Pick<Observer, 'successorCall'> | undefined;
}

/** One request as the transport sends it. */
export interface HttpCall {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** Idempotent read: retried on network errors and 502/503/504. */
  retry: boolean;
  source: UpstreamSource;
}

/** A complete response: status, headers and the body read to the end. */
export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
}

const RETRY_STATUSES = new Set([502, 503, 504]);

/**
 * The successor client's HTTP layer: a keep-alive pool (undici Agent with a connect timeout), a
 * total timeout per call combined with the caller's signal, and retries with exponential backoff
 * and jitter for idempotent reads only.
 */
export class HttpTransport {
  readonly #settings: HttpSettings;
  readonly #agent: Agent | undefined;
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
      // undici's own fetch, so the Agent (undici 7) and fetch come from the same undici; its
      // Request/Response types differ from the DOM lib's only nominally.
      this.#fetch = (url, init) =>
        undiciFetch(url, {
          ...(init as Parameters<typeof undiciFetch>[1]),
          dispatcher: agent,
        }) as unknown as Promise<Response>;
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

  /** Closes the pooled connections (waits for running calls). */
  async close(): Promise<void> {
    await this.#agent?.close();
  }

  async #attempt(call: HttpCall, attempt: number): Promise<HttpResult> {
    call.signal?.throwIfAborted();
    const timeout = AbortSignal.timeout(this.#settings.totalMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const started = performance.now();
    let status: number | undefined;
    const logPath = `${call.url.pathname}${call.url.search}`;
    try {
      const response = await this.#fetch(call.url.href, {
        method: call.method,
        headers: call.headers,
        ...(call.body === undefined ? {} : { body: call.body }),
        redirect: 'manual',
        signal,
      });
      status = response.status;
      // The body is read inside the same timeout: a server that sends headers and then stalls
      // is a timeout too.
      const text = await response.text();
      return { status: response.status, headers: response.headers, text };
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      throw this.#networkError(call, error, timeout.aborted);
    } finally {
      const durationMs = performance.now() - started;
      this.#settings.observer?.successorCall?.({
        kind: 'api',
        method: call.method,
        route: successorRoute(call.url.pathname),
        status: status ?? 0,
        durationMs,
      });
      this.#settings.logger.debug(
        {
          successor: {
            method: call.method,
            path: logPath,
            status,
            durationMs: Math.round(durationMs),
            attempt,
          },
        },
        'successor call',
      );
    }
  }

  #networkError(call: HttpCall, error: unknown, timedOut: boolean): UpstreamError {
    const where = `${call.method} ${call.url.pathname}`;
    const base = { source: call.source, method: call.method, path: call.url.pathname, cause: error };
    if (timedOut) {
      return new UpstreamError(
        'timeout',
        `the successor did not answer ${where} within ${this.#settings.totalMs} ms (successor.timeouts.totalMs); check the IDM API's load or raise the timeout`,
        base,
      );
    }
    const code = errorCode(error);
    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new UpstreamError(
        'timeout',
        `could not connect to the successor at ${call.url.origin} within ${this.#settings.connectMs} ms (${where}; successor.timeouts.connectMs); check the address and the network`,
        { ...base, retryable: true },
      );
    }
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

/** The most specific error code in an error's cause chain (`ECONNREFUSED`, `UND_ERR_SOCKET`, …). */
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  let found: string | undefined;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code: unknown = Reflect.get(current, 'code');
    if (typeof code === 'string') found = code;
    current = Reflect.get(current, 'cause');
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
