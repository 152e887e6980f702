import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Dispatcher, Pool } from 'undici';
import type { ResolvedMigrationConfig } from '../config/load.js';
import { credentialSpellings } from '../lib/redact.js';

/** Settings of the old server (`migration.legacy`), secrets resolved. */
export type LegacyUpstreamSettings = NonNullable<ResolvedMigrationConfig['legacy']>;

/** One request as the caller sent it, to be forwarded unchanged. */
export interface ForwardedRequest {
  method: string;
  /** The path below the legacy base path, e.g. `/Service/Core/Entity/User/ada.l`. */
  path: string;
  /** The raw query string with its `?`, or `""`. */
  search: string;
  body: Uint8Array | undefined;
  contentType: string | undefined;
  accept: string | undefined;
}

/**
 * Headers of the old server's answer that reach the caller besides Content-Type. Content-Encoding
 * goes with the bytes it describes: the old server is asked for none (`identity`), and one that
 * compresses all the same (gzip) is passed through readable (and recorded and compared decoded:
 * answer-decoding.ts).
 */
const FORWARDED_HEADERS = [
  'content-encoding',
  'location',
  'allow',
  'retry-after',
  'cache-control',
  'etag',
  'last-modified',
] as const;

/** The old server's answer, its body still streaming. */
export interface UpstreamAnswer {
  status: number;
  contentType: string | undefined;
  /** The headers of FORWARDED_HEADERS that the old server sent. */
  headers: Record<string, string>;
  body: Readable;
  /**
   * Fired when the answer's status and headers did not come within the total timeout. Its body
   * is bounded by undici's body timeout of the same length, which counts only while the body is
   * read and nothing comes: a caller that reads slowly (a large list over a slow link) holds the
   * old server's answer back, and is not cut off for it.
   */
  deadline: AbortSignal;
}

/** What the readiness check reads of the old server: a legacy read every old server has, and a small one. */
const READINESS_PATH = '/Service/Core/Entity/Role';

/** The codes of undici's connect, headers and body timeouts. */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Whether a call to the old server (or the reading of its answer's body) failed for the total
 * timeout: its deadline fired, or undici's own timeout of the same length did first (which of the
 * two fires first differs between Node versions), or the body sent nothing for that long.
 */
export function timedOut(error: unknown, deadline: AbortSignal): boolean {
  return (
    deadline.aborted || (error instanceof Error && 'code' in error && TIMEOUT_CODES.has(String(error.code)))
  );
}

/** Why the old server gave no answer: `unavailable` (502) or `timeout` (504). */
export class LegacyUpstreamError extends Error {
  override readonly name = 'LegacyUpstreamError';
  constructor(
    readonly code: 'unavailable' | 'timeout',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * The old server that still speaks the legacy API (SPEC 8): a keep-alive pool to its origin; every
 * call signs in with the proxy's own credentials (`migration.legacy.username`/`password`), never
 * the caller's. Connect and total timeouts apply to every call; nothing is retried (a forwarded
 * write must not run twice).
 */
export class LegacyUpstream {
  readonly #settings: LegacyUpstreamSettings;
  #pool: Promise<Pool> | undefined;
  #closed = false;
  readonly #origin: string;
  readonly #basePath: string;
  readonly #authorization: string;
  /**
   * The proxy's own credentials at the old server in the spellings it may repeat them
   * (`credentialSpellings`): left out of what the recording and shadow mode keep of its answers.
   */
  readonly ownSecrets: readonly string[];

  readonly #maxBufferedBytes: number;

  constructor(settings: LegacyUpstreamSettings, options: { maxBufferedBytes?: number } = {}) {
    this.#settings = settings;
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 32 * 1024 * 1024;
    const base = new URL(settings.baseUrl);
    this.#origin = base.origin;
    this.#basePath = base.pathname.replace(/\/+$/, '');
    this.#authorization = `Basic ${Buffer.from(`${settings.username}:${settings.password}`).toString('base64')}`;
    this.ownSecrets = credentialSpellings(settings.username, settings.password);
  }

  /** The most of an answer read whole for a shadow comparison; also the most it is decoded to. */
  get maxBufferedBytes(): number {
    return this.#maxBufferedBytes;
  }

  /**
   * The pool, made at the first call: undici's index, which has its Pool, loads all of undici
   * (fetch, WebSocket, caches), which a proxy that never forwards should not carry
   * (src/successor/agent.ts).
   */
  #connections(): Promise<Pool> {
    if (this.#closed) return Promise.reject(new Error('the connections to the old server are closed'));
    const settings = this.#settings;
    this.#pool ??= import('undici')
      .then(
        ({ Pool }) =>
          new Pool(this.#origin, {
            connections: settings.pool.connections,
            connect: { timeout: settings.timeouts.connectMs },
            keepAliveTimeout: Math.max(1, settings.pool.keepAliveMs),
            keepAliveMaxTimeout: Math.max(1, settings.pool.keepAliveMs),
            headersTimeout: settings.timeouts.totalMs,
            bodyTimeout: settings.timeouts.totalMs,
          }),
      )
      .catch((error: unknown) => {
        // Not kept: the next call tries again.
        this.#pool = undefined;
        throw error;
      });
    return this.#pool;
  }

  /**
   * Sends the request to the old server; rejects with a LegacyUpstreamError when no answer comes
   * within the total timeout, when `signal` (the caller hung up) fires, or when the old server
   * refuses the proxy's own credentials (a 401 is the proxy's problem, never the caller's).
   */
  async forward(request: ForwardedRequest, signal?: AbortSignal): Promise<UpstreamAnswer> {
    // Without Accept-Encoding any coding is acceptable (RFC 9110 12.5.3): the proxy reads and
    // compares the answers, and passes their bytes on as they are.
    const headers: Record<string, string> = {
      authorization: this.#authorization,
      'accept-encoding': 'identity',
    };
    if (request.contentType !== undefined) headers['content-type'] = request.contentType;
    if (request.accept !== undefined) headers.accept = request.accept;
    // Until the headers come only (see UpstreamAnswer.deadline).
    const waiting = new AbortController();
    const deadline = waiting.signal;
    const timer = setTimeout(
      () => waiting.abort(new DOMException('The old server did not answer in time', 'TimeoutError')),
      this.#settings.timeouts.totalMs,
    );
    let response: Dispatcher.ResponseData;
    try {
      const pool = await this.#connections();
      response = await pool.request({
        method: request.method as 'GET',
        path: `${this.#basePath}${request.path}${request.search}`,
        headers,
        signal: signal ? AbortSignal.any([deadline, signal]) : deadline,
        ...(request.body === undefined || request.body.byteLength === 0 ? {} : { body: request.body }),
      });
    } catch (error) {
      throw this.#failure(error, deadline);
    } finally {
      clearTimeout(timer);
    }
    // RFC 9110 15: a status outside 100–599 is no answer a caller can be given (a fetch Response
    // refuses it): the old server is broken, as with an answer that is not HTTP.
    if (response.statusCode < 100 || response.statusCode > 599) {
      response.body.resume();
      throw new LegacyUpstreamError(
        'unavailable',
        `the old server answered with status ${response.statusCode}, which HTTP does not have`,
      );
    }
    if (response.statusCode === 401 || response.statusCode === 407) {
      response.body.resume();
      throw new LegacyUpstreamError(
        'unavailable',
        "the old server refused the proxy's own credentials (migration.legacy.username/password)",
      );
    }
    const headerOf = (name: string) => {
      const value = response.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    return {
      status: response.statusCode,
      contentType: headerOf('content-type'),
      headers: Object.fromEntries(
        // A HEAD's length is the old server's to say: there is no body here to measure.
        [...FORWARDED_HEADERS, ...(request.method === 'HEAD' ? ['content-length'] : [])].flatMap((name) => {
          const value = headerOf(name);
          return value === undefined ? [] : [[name, value]];
        }),
      ),
      body: response.body,
      deadline,
    };
  }

  /**
   * Reads the old server's answer whole for shadow comparison, within the timeout and up to
   * `maxBufferedBytes` (default 32 MiB): `bytes` is the whole body. Past the cap it stops
   * buffering: `bytes` is undefined and `body` streams the whole answer again (the part read,
   * then the rest as it comes), so the caller still gets all of it and nothing larger is held.
   */
  async forwardBuffered(
    request: ForwardedRequest,
    signal?: AbortSignal,
  ): Promise<UpstreamAnswer & { bytes: Buffer | undefined }> {
    const started = performance.now();
    const answer = await this.forward(request, signal);
    // The proxy reads this body itself, at its own pace (no caller holds it back): it gets what is
    // left of the total timeout, as the whole answer did before. Past the cap, what streams on to
    // the caller follows the passthrough's rules.
    const { totalMs } = this.#settings.timeouts;
    let late = false;
    const timer = setTimeout(
      () => {
        late = true;
        answer.body.destroy(new Error(`the old server's answer did not end within ${totalMs} ms`));
      },
      Math.max(0, totalMs - (performance.now() - started)),
    );
    const chunks: Buffer[] = [];
    let size = 0;
    const rest = answer.body[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await rest.next();
        if (next.done) return { ...answer, bytes: Buffer.concat(chunks) };
        const chunk = next.value as Buffer;
        chunks.push(chunk);
        size += chunk.length;
        if (size > this.#maxBufferedBytes) {
          const whole = Readable.from(rejoined(chunks, rest), { objectMode: false });
          // Also when it ends before it started (the caller hung up at once): the old server's
          // body is let go then, not at the deadline.
          whole.once('close', () => answer.body.destroy());
          return { ...answer, bytes: undefined, body: whole };
        }
      }
    } catch (error) {
      if (late)
        throw new LegacyUpstreamError('timeout', `the old server did not answer within ${totalMs} ms`, {
          cause: error,
        });
      throw this.#failure(error, answer.deadline);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The readiness check of the old server (`/readyz` while an operation is passed through or
   * shadowed): a small legacy read, the role list, with the proxy's own credentials, must answer
   * 2xx, its body to its end before `signal` (a server that sends the headers and then stalls cuts
   * off every passed-through answer). Rejects with a LegacyUpstreamError that says what failed (no
   * answer, the proxy's credentials refused, a status, a body that broke off), or with `signal`'s
   * reason.
   */
  async check(signal: AbortSignal): Promise<void> {
    const answer = await this.forward(
      {
        method: 'GET',
        path: READINESS_PATH,
        search: '',
        body: undefined,
        contentType: undefined,
        accept: 'application/json',
      },
      signal,
    );
    if (answer.status >= 300) {
      // Drained, not destroyed, so the connection goes back to the pool; a failure of it now
      // (the check's time running out) is nobody's to hear.
      answer.body.on('error', () => {}).resume();
      throw new LegacyUpstreamError(
        'unavailable',
        `the old server answered ${answer.status} to GET ${this.#basePath}${READINESS_PATH}`,
      );
    }
    try {
      await finished(answer.body.resume(), { signal });
    } catch (error) {
      answer.body.destroy();
      if (signal.aborted) throw signal.reason;
      throw new LegacyUpstreamError(
        'unavailable',
        `the old server's answer to GET ${this.#basePath}${READINESS_PATH} broke off after its headers`,
        { cause: error },
      );
    }
  }

  /** Closes the pooled connections; calls after this fail as `unavailable`. */
  async close(): Promise<void> {
    this.#closed = true;
    const pool = await this.#pool?.catch(() => undefined);
    await pool?.close();
  }

  #failure(error: unknown, deadline: AbortSignal): LegacyUpstreamError {
    if (timedOut(error, deadline)) {
      return new LegacyUpstreamError(
        'timeout',
        `the old server did not answer within ${this.#settings.timeouts.totalMs} ms`,
        { cause: error },
      );
    }
    // The cause (the network's own words: ECONNREFUSED and the address, a TLS failure) is for the
    // log line; the caller's answer says only what failed.
    return new LegacyUpstreamError('unavailable', 'the old server is unreachable or broke off the answer', {
      cause: error,
    });
  }
}

/**
 * The chunks already read, then the rest of the body they came from: the whole body again. Each
 * read chunk is let go once it is handed on.
 */
async function* rejoined(read: Buffer[], rest: AsyncIterator<unknown>): AsyncGenerator<Buffer> {
  for (let chunk = read.shift(); chunk !== undefined; chunk = read.shift()) yield chunk;
  yield* { [Symbol.asyncIterator]: () => rest } as AsyncIterable<Buffer>;
}
