import type { Readable } from 'node:stream';
import { Pool, errors as undiciErrors } from 'undici';
import type { ResolvedMigrationConfig } from '../config/load.js';

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

/** The old server's answer, its body still streaming. */
export interface UpstreamAnswer {
  status: number;
  contentType: string | undefined;
  body: Readable;
}

/** Why the old server gave no answer: `unavailable` (502) or `timeout` (504). */
export class LegacyUpstreamError extends Error {
  override readonly name = 'LegacyUpstreamError';
  constructor(
    readonly code: 'unavailable' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The old server that still speaks the legacy API (SPEC 8): a keep-alive pool to its origin; every
 * call signs in with the proxy's own credentials (`migration.legacy.username`/`password`), never
 * the caller's. Connect and total timeouts apply to every call; nothing is retried (a forwarded
 * write must not run twice).
 */
export class LegacyUpstream {
  readonly #pool: Pool;
  readonly #basePath: string;
  readonly #authorization: string;
  readonly #totalMs: number;

  constructor(settings: LegacyUpstreamSettings) {
    const base = new URL(settings.baseUrl);
    this.#basePath = base.pathname.replace(/\/+$/, '');
    this.#authorization = `Basic ${Buffer.from(`${settings.username}:${settings.password}`).toString('base64')}`;
    this.#totalMs = settings.timeouts.totalMs;
    this.#pool = new Pool(base.origin, {
      connections: settings.pool.connections,
      connect: { timeout: settings.timeouts.connectMs },
      keepAliveTimeout: Math.max(1, settings.pool.keepAliveMs),
      keepAliveMaxTimeout: Math.max(1, settings.pool.keepAliveMs),
      headersTimeout: settings.timeouts.totalMs,
      bodyTimeout: settings.timeouts.totalMs,
    });
  }

  /** Sends the request to the old server; rejects with a LegacyUpstreamError when no answer comes. */
  async forward(request: ForwardedRequest): Promise<UpstreamAnswer> {
    const headers: Record<string, string> = { authorization: this.#authorization };
    if (request.contentType !== undefined) headers['content-type'] = request.contentType;
    if (request.accept !== undefined) headers.accept = request.accept;
    try {
      const response = await this.#pool.request({
        method: request.method as 'GET',
        path: `${this.#basePath}${request.path}${request.search}`,
        headers,
        ...(request.body === undefined || request.body.byteLength === 0 ? {} : { body: request.body }),
      });
      const type = response.headers['content-type'];
      return {
        status: response.statusCode,
        contentType: Array.isArray(type) ? type[0] : type,
        body: response.body,
      };
    } catch (error) {
      throw this.#failure(error);
    }
  }

  /** Reads a whole answer of the old server (for shadow comparison and recording), within the timeout. */
  async forwardBuffered(
    request: ForwardedRequest,
  ): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
    const answer = await this.forward(request);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of answer.body) chunks.push(chunk as Buffer);
      return { status: answer.status, contentType: answer.contentType, body: Buffer.concat(chunks) };
    } catch (error) {
      throw this.#failure(error);
    }
  }

  /** Closes the pooled connections. */
  async close(): Promise<void> {
    await this.#pool.close();
  }

  #failure(error: unknown): LegacyUpstreamError {
    if (
      error instanceof undiciErrors.HeadersTimeoutError ||
      error instanceof undiciErrors.BodyTimeoutError ||
      error instanceof undiciErrors.ConnectTimeoutError
    ) {
      return new LegacyUpstreamError('timeout', `the old server did not answer within ${this.#totalMs} ms`);
    }
    return new LegacyUpstreamError('unavailable', 'the old server is unreachable or broke off the answer');
  }
}
