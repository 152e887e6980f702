import { type Clock, systemClock } from '../lib/clock.js';
import { HTTP_TOKEN } from '../lib/http-token.js';
import { jsonSyntaxMessage } from '../lib/json-syntax.js';
import { type Logger, silentLogger } from '../lib/logger.js';
import type { CallStats, Observer } from '../observe/observer.js';
import { readAllPages, streamAllPages } from './collections.js';
import { isReadMethod, UpstreamError, withoutSecretValues } from './errors.js';
import {
  bodyText,
  type CallTarget,
  type FetchFn,
  type HeaderLookup,
  type HttpCall,
  type HttpResult,
  HttpTransport,
  releaseBody,
} from './http.js';
import { type AuthContext, parseBearerChallenge, responseError } from './problems.js';
import { type ApiBase, resolveTarget, type SuccessorQuery } from './targets.js';
import { type Access, TokenSource } from './tokens.js';

/** Everything the successor client needs; see SPEC section 6. */
export interface SuccessorClientOptions {
  /** Base URL of the IDM API, e.g. `https://school.example/iserv/idm/api/v1`; request paths are relative to it. */
  baseUrl: string;
  auth:
    | {
        type: 'oauth2';
        issuer: string;
        clientId: string;
        clientSecret: string;
        /** Scopes requested for the token of each access level. */
        scopes: { read: readonly string[]; write: readonly string[] };
        /** `auto` uses what discovery advertises, preferring client_secret_post. */
        authMethod?: 'auto' | 'client_secret_post' | 'client_secret_basic';
        /** Renew a token this long before it expires; default 60. */
        refreshMarginSeconds?: number;
      }
    | { type: 'apiKey'; key: string; header?: string };
  /** Defaults 5000 / 15000 ms; apply to every call, token and discovery calls included. */
  timeouts?: { connectMs?: number; totalMs?: number };
  /** Retries of idempotent reads (GET) on network errors and 502/503/504; defaults 2 / 100 ms. */
  retries?: { max?: number; baseDelayMs?: number };
  /** Keep-alive pool of the default fetch; defaults 32 connections, 30 s. */
  pool?: { connections?: number; keepAliveMs?: number };
  /** Page size asked for by collection reads; default 100. */
  pageSize?: number;
  /**
   * The query parameters of collection paging. The mapping profile says them (profile.json
   * `successor.paging`), and its reads pass them per call; without them the client falls back to
   * API Platform's (Hydra) defaults, for a client used without a profile.
   */
  paging?: CollectionPaging;
  /** Pages fetched at once when a collection's total is known; default 4. */
  pageConcurrency?: number;
  /** Most pages one collection read may take before it fails; default 1000. */
  maxPages?: number;
  /**
   * The largest answer body read, in bytes, token and discovery answers included; a larger one is
   * not read further and fails as `bad_response`. Default 32 MiB.
   */
  maxResponseBytes?: number;
  /**
   * The Accept header of every call; default `application/ld+json, application/json` (Hydra,
   * which carries totals, preferred). `application/json` makes collections plain arrays.
   */
  accept?: string;
  /**
   * The collection `check()` reads, one item per page (the profile's `successor.readinessPath`); a
   * function is asked at every check, so that a reloaded profile applies. Without it `check()`
   * only makes sure a token can be had.
   */
  checkPath?: string | (() => string);
  /**
   * The paging parameters of the `check()` read (it asks for one item); a function is asked at
   * every check, like `checkPath`, so that a reloaded profile's `successor.paging` applies.
   * Default the client's `paging`.
   */
  checkPaging?: CollectionPaging | (() => CollectionPaging | undefined);
  clock?: Clock;
  logger?: Logger;
  /** Told about every HTTP call and token renewal (metrics, per-request call counts). */
  observer?: Pick<Observer, 'successorCall' | 'tokenRenewal'>;
  /** Replaces the pooled undici fetch (then `pool` and `timeouts.connectMs` are up to it). */
  fetch?: typeof fetch;
}

/** The query parameters a successor pages collections with. */
export interface CollectionPaging {
  /** The parameter with the 1-based page number. */
  page: string;
  /** The parameter with the page size. */
  itemsPerPage: string;
}

/** How one collection read pages and tells its members apart. */
export interface CollectionReadOptions {
  query?: SuccessorQuery;
  signal?: AbortSignal;
  /** Paging parameters of this read (the profile's); default the client's `paging`. */
  paging?: CollectionPaging;
  /** Attribute path with the members' UUIDs, to drop repeated members besides their `@id`. */
  identity?: readonly string[];
  /** The counter every page read adds to (see `SuccessorRequest.calls`). */
  calls?: CallStats | undefined;
  /**
   * A collection that is there whatever entities exist (a kind's, not one entity's members):
   * its 404 is no entity gone but a collection the successor does not have (a wrong
   * `successor.baseUrl` or collection path), `bad_response` (502) instead of `not_found`.
   */
  standing?: boolean;
}

export type { SuccessorQuery } from './targets.js';

/** One call to the successor API. */
export interface SuccessorRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Relative to baseUrl (`/users/abc`); an absolute IRI path under baseUrl's path, or an absolute URL on its origin, works too. */
  path: string;
  query?: SuccessorQuery;
  /** Sent as JSON. */
  body?: unknown;
  /** Default `application/json`. */
  contentType?: 'application/json' | 'application/merge-patch+json';
  /** Which token to use; default read for GET, write otherwise. */
  access?: Access;
  signal?: AbortSignal;
  /** The counter of the unit of work (the legacy request) the call is made for: it adds each attempt. */
  calls?: CallStats | undefined;
}

/** A 2xx answer: `body` is the parsed JSON as the successor sent it (undefined when empty). */
export interface SuccessorResponse<T = unknown> {
  status: number;
  body: T;
  headers: HeaderLookup;
  /**
   * For an answer without a body: where the successor says the answered entity lives (its IRI or
   * URL: `Location`, else `Content-Location`), when it says so. A create answered 201 without a
   * body names the new entity only there.
   */
  location?: string | undefined;
}

/** The successor IDM API as the rest of the proxy sees it. */
export interface SuccessorClient {
  /** Sends one call; resolves for 2xx, rejects with an UpstreamError otherwise. */
  request<T = unknown>(req: SuccessorRequest): Promise<SuccessorResponse<T>>;
  /** Reads every page of a collection and returns all its members. */
  readCollection(path: string, options?: CollectionReadOptions): Promise<Record<string, unknown>[]>;
  /** Reads a collection page by page: the members of each page, in order, as they arrive (bounded memory). */
  streamCollection(
    path: string,
    options?: CollectionReadOptions,
  ): AsyncGenerator<Record<string, unknown>[], void>;
  /**
   * Readiness: a token is obtainable (oauth2) and the API answers a read; rejects with an
   * UpstreamError, or with the signal's reason once it fires.
   */
  check(signal?: AbortSignal): Promise<void>;
  /** Closes the connection pool. */
  close(): Promise<void>;
}

const DEFAULT_ACCEPT = 'application/ld+json, application/json';
/** 32 MiB: a page of 500 extended users with their relations embedded is a few MiB. */
const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** API Platform's paging parameters: only for a client used without a mapping profile. */
const FALLBACK_PAGING: CollectionPaging = { page: 'page', itemsPerPage: 'itemsPerPage' };

/**
 * A view of `client` whose every API call adds to `calls` (one legacy request's counter): what
 * the mapping engine calls the successor through while it runs one operation.
 */
export function countingCalls(client: SuccessorClient, calls: CallStats): SuccessorClient {
  // Object.assign rather than `{ ...req, calls }`: V8 (Node 20) copies that spread on a slow path,
  // about a microsecond per call here.
  return {
    request: (req) => client.request(Object.assign({}, req, { calls })),
    readCollection: (path, options) => client.readCollection(path, Object.assign({}, options, { calls })),
    streamCollection: (path, options) => client.streamCollection(path, Object.assign({}, options, { calls })),
    check: (signal) => client.check(signal),
    close: () => client.close(),
  };
}

/** How `#send` sends one call. */
interface CallOptions {
  body: unknown;
  contentType: string;
  access: Access;
  signal: AbortSignal | undefined;
  calls: CallStats | undefined;
}

/** Creates the successor client; throws a TypeError naming the option when the options are invalid. */
export function createSuccessorClient(options: SuccessorClientOptions): SuccessorClient {
  return new HttpSuccessorClient(options);
}

class HttpSuccessorClient implements SuccessorClient {
  readonly #apiBase: ApiBase;
  readonly #transport: HttpTransport;
  readonly #tokens: TokenSource | undefined;
  readonly #apiKey: { header: string; key: string } | undefined;
  readonly #pageSize: number;
  readonly #pageConcurrency: number;
  readonly #maxPages: number;
  readonly #paging: CollectionPaging;
  /** Collection routes whose overstated total was logged already (see CollectionSettings.toldOverstated). */
  readonly #toldOverstated = new Set<string>();
  readonly #checkPath: (() => string) | undefined;
  readonly #checkPaging: (() => CollectionPaging | undefined) | undefined;
  readonly #accept: string;
  readonly #logger: Logger;

  constructor(options: SuccessorClientOptions) {
    const baseUrl = httpUrl(options.baseUrl, 'baseUrl');
    if (baseUrl.search !== '' || baseUrl.hash !== '') {
      throw new TypeError('successor client option baseUrl: must not have a query or fragment');
    }
    this.#apiBase = { origin: baseUrl.origin, basePath: baseUrl.pathname.replace(/\/+$/, '') };
    const connectMs = positiveInt(options.timeouts?.connectMs, 5_000, 'timeouts.connectMs');
    const totalMs = positiveInt(options.timeouts?.totalMs, 15_000, 'timeouts.totalMs');
    this.#pageSize = positiveInt(options.pageSize, 100, 'pageSize');
    this.#pageConcurrency = positiveInt(options.pageConcurrency, 4, 'pageConcurrency');
    this.#maxPages = positiveInt(options.maxPages, 1_000, 'maxPages');
    this.#paging = options.paging ?? FALLBACK_PAGING;
    const checkPath = options.checkPath;
    this.#checkPath = typeof checkPath === 'string' ? () => checkPath : checkPath;
    const checkPaging = options.checkPaging;
    this.#checkPaging = typeof checkPaging === 'object' ? () => checkPaging : checkPaging;
    this.#accept = options.accept ?? DEFAULT_ACCEPT;
    this.#logger = options.logger ?? silentLogger();
    this.#transport = new HttpTransport({
      connectMs,
      totalMs,
      retries: {
        max: nonNegativeInt(options.retries?.max, 2, 'retries.max'),
        baseDelayMs: nonNegativeInt(options.retries?.baseDelayMs, 100, 'retries.baseDelayMs'),
      },
      pool: {
        connections: positiveInt(options.pool?.connections, 32, 'pool.connections'),
        keepAliveMs: nonNegativeInt(options.pool?.keepAliveMs, 30_000, 'pool.keepAliveMs'),
      },
      maxResponseBytes: positiveInt(options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, 'maxResponseBytes'),
      ...(options.fetch === undefined ? {} : { fetch: options.fetch as FetchFn }),
      logger: this.#logger,
      observer: options.observer,
    });

    const auth = options.auth;
    if (auth.type === 'oauth2') {
      httpUrl(auth.issuer, 'auth.issuer');
      nonEmpty(auth.clientId, 'auth.clientId');
      nonEmpty(auth.clientSecret, 'auth.clientSecret');
      for (const access of ['read', 'write'] as const) {
        const scopes = auth.scopes[access];
        if (
          !Array.isArray(scopes) ||
          scopes.some((scope) => typeof scope !== 'string' || /\s|^$/.test(scope))
        ) {
          throw new TypeError(
            `successor client option auth.scopes.${access}: must be a list of scope names without spaces`,
          );
        }
      }
      this.#tokens = new TokenSource({
        issuer: auth.issuer,
        clientId: auth.clientId,
        clientSecret: auth.clientSecret,
        scopes: auth.scopes,
        authMethod: auth.authMethod ?? 'auto',
        refreshMarginSeconds: nonNegativeInt(auth.refreshMarginSeconds, 60, 'auth.refreshMarginSeconds'),
        timeoutMs: totalMs,
        clock: options.clock ?? systemClock,
        logger: this.#logger,
        fetch: this.#transport.tokenFetch,
        observer: options.observer,
      });
      this.#apiKey = undefined;
    } else {
      nonEmpty(auth.key, 'auth.key');
      const header = auth.header ?? 'X-IServ-Authentication';
      if (!HTTP_TOKEN.test(header)) {
        throw new TypeError('successor client option auth.header: not a valid HTTP header name');
      }
      this.#apiKey = { header, key: auth.key };
      this.#tokens = undefined;
    }
  }

  /**
   * The parsed body of a successful answer. A write's answer whose body is unusable but which
   * still says the write was done — a 201 or 202, or a body that calls itself JSON and is not (cut
   * short, too large to read) — is taken as an answer without a body, as a 204 is: the caller
   * reads back what it needs (or says the change went through), instead of a 502 that would have
   * a client repeat a done write. Anything else stays the `bad_response` it is: a 200 with an
   * HTML page may be a firewall's block page, and the write never happened. So does a read's.
   */
  #bodyOf(method: string, url: CallTarget, result: HttpResult): unknown {
    try {
      return parseBody(method, url, result);
    } catch (error) {
      if (isReadMethod(method) || !(error instanceof UpstreamError)) throw error;
      const saysJson = JSON_TYPE.test(result.headers.get('content-type') ?? '');
      if (result.status !== 201 && result.status !== 202 && !saysJson) throw error;
      this.#logger.warn(
        { successor: { method, path: url.pathname, status: result.status }, err: error },
        "successor write done, but its answer's body is unusable: taken as an answer without a body",
      );
      return undefined;
    }
  }

  async request<T = unknown>(req: SuccessorRequest): Promise<SuccessorResponse<T>> {
    const url = this.#resolve(req.path, req.query);
    const result = await this.#send(req.method, url, {
      body: req.body,
      contentType: req.contentType ?? 'application/json',
      access: req.access ?? (req.method === 'GET' ? 'read' : 'write'),
      signal: req.signal,
      calls: req.calls,
    });
    const body = this.#bodyOf(req.method, url, result) as T;
    // Looked up only for an answer without a body, the one case it is needed.
    const location =
      body === undefined
        ? (result.headers.get('location') ?? result.headers.get('content-location') ?? undefined)
        : undefined;
    return { status: result.status, headers: result.headers, body, location };
  }

  async readCollection(
    path: string,
    options: CollectionReadOptions = {},
  ): Promise<Record<string, unknown>[]> {
    const { first, fetchPage, settings } = this.#collectionRead(path, options);
    return readAllPages(first, fetchPage, settings, options.signal);
  }

  streamCollection(
    path: string,
    options: CollectionReadOptions = {},
  ): AsyncGenerator<Record<string, unknown>[], void> {
    const { first, fetchPage, settings } = this.#collectionRead(path, options);
    return streamAllPages(first, fetchPage, settings, options.signal);
  }

  #collectionRead(path: string, options: CollectionReadOptions) {
    const paging = options.paging ?? this.#paging;
    const resolved = this.#resolve(path, options.query);
    const first = resolved instanceof URL ? resolved : new URL(resolved.href);
    if (!first.searchParams.has(paging.itemsPerPage))
      first.searchParams.set(paging.itemsPerPage, String(this.#pageSize));
    const fetchPage = async (url: URL, signal: AbortSignal) => {
      const result = await this.#send('GET', url, {
        body: undefined,
        contentType: 'application/json',
        access: 'read',
        signal,
        calls: options.calls,
      });
      return () => {
        try {
          return parseBody('GET', url, result);
        } finally {
          releaseBody(result.body);
        }
      };
    };
    const asked = Number(first.searchParams.get(paging.itemsPerPage));
    const settings = {
      apiBase: this.#apiBase,
      concurrency: this.#pageConcurrency,
      maxPages: this.#maxPages,
      pageParam: paging.page,
      itemsPerPageParam: paging.itemsPerPage,
      ...(Number.isInteger(asked) && asked > 0 ? { pageSize: asked } : {}),
      ...(options.identity === undefined ? {} : { identity: options.identity }),
      ...(options.standing ? { standing: true } : {}),
      logger: this.#logger,
      toldOverstated: this.#toldOverstated,
    };
    return { first, fetchPage, settings };
  }

  async check(signal?: AbortSignal): Promise<void> {
    if (this.#tokens) await this.#tokens.token('read', signal);
    const path = this.#checkPath?.();
    if (path !== undefined) {
      await this.request({
        method: 'GET',
        path,
        query: { [(this.#checkPaging?.() ?? this.#paging).itemsPerPage]: '1' },
        ...(signal === undefined ? {} : { signal }),
      });
    }
  }

  async close(): Promise<void> {
    await this.#transport.close();
  }

  /** Sends one call with its credentials; resolves with a 2xx answer, its body not yet parsed. */
  async #send(method: string, url: CallTarget, options: CallOptions): Promise<HttpResult> {
    // `identity`: a request without Accept-Encoding lets a server compress as it likes (RFC 9110
    // 12.5.3), and the proxy decodes nothing; on a LAN an uncompressed answer is also the cheaper one.
    const headers: Record<string, string> = { accept: this.#accept, 'accept-encoding': 'identity' };
    const call: HttpCall = {
      method,
      url,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      retry: method === 'GET',
      source: 'api',
      calls: options.calls,
    };
    if (call.body !== undefined) headers['content-type'] = options.contentType;
    this.#transport.assertOpen(call);

    let result: HttpResult;
    if (this.#tokens) {
      const tokens = this.#tokens;
      let token = tokens.fresh(options.access) ?? (await tokens.token(options.access, options.signal));
      headers.authorization = `Bearer ${token}`;
      result = await this.#transport.send(call);
      if (result.status === 401 || isScopeRefusal(method, result)) {
        // The token may have been revoked, the server restarted, or the scope granted since the
        // token was issued: one fresh token, one retry.
        tokens.purge(options.access, token);
        token = await tokens.token(options.access, options.signal);
        headers.authorization = `Bearer ${token}`;
        result = await this.#transport.send(call);
      }
    } else {
      if (this.#apiKey) headers[this.#apiKey.header.toLowerCase()] = this.#apiKey.key;
      result = await this.#transport.send(call);
    }

    if (result.status < 200 || result.status >= 300) {
      // The credential this call sent (the access token, the API key), should the answer repeat it.
      const sent = headers.authorization?.slice('Bearer '.length) ?? (this.#apiKey ? this.#apiKey.key : '');
      throw withoutSecretValues(
        responseError(
          {
            method,
            path: url.pathname,
            status: result.status,
            headers: result.headers,
            text: bodyText(result.body),
          },
          this.#authContext(options.access),
        ),
        [sent],
      );
    }
    return result;
  }

  #authContext(access: Access): AuthContext {
    if (this.#tokens) {
      return {
        type: 'oauth2',
        issuer: this.#tokens.issuer,
        clientId: this.#tokens.clientId,
        access,
        scopes: this.#tokens.scopes(access),
      };
    }
    return { type: 'apiKey', header: this.#apiKey?.header ?? 'X-IServ-Authentication' };
  }

  /** Builds the target of a call, refusing anything outside the configured API. */
  #resolve(path: string, query: SuccessorQuery | undefined): CallTarget {
    return resolveTarget(this.#apiBase, path, query);
  }
}

/**
 * A 403 about the token's permissions, not a refusal of the operation itself: its Bearer
 * challenge says a scope is lacking, or it refuses a read (the successor protects entities from
 * change, never from being read).
 */
function isScopeRefusal(method: string, result: { status: number; headers: HeaderLookup }): boolean {
  if (result.status !== 403) return false;
  if (isReadMethod(method)) return true;
  return parseBearerChallenge(result.headers.get('www-authenticate'))?.error === 'insufficient_scope';
}

/**
 * Parses a 2xx body; an empty body is undefined, anything but JSON is a bad_response. A body that
 * is not JSON is described by position only, and the parser's error is not kept as the cause: its
 * message quotes the body, which may hold a secret (the temporary password of a reset), and the
 * log's error serializer writes the messages of causes too.
 */
function parseBody(method: string, url: CallTarget, result: HttpResult): unknown {
  if (result.status === 204 || result.status === 205) return undefined;
  let text: string;
  try {
    text = bodyText(result.body);
  } catch (error) {
    // Longer than the longest string V8 makes (possible only with a very high maxResponseBytes).
    if (error instanceof RangeError)
      throw badResponse(
        method,
        url,
        result,
        'a body too large to read as text; lower successor.maxResponseBytes',
      );
    throw error;
  }
  if (text === '') return undefined;
  const type = result.headers.get('content-type') ?? '';
  if (type !== '' && !JSON_TYPE.test(type))
    throw badResponse(method, url, result, `content type ${type.split(';')[0]} instead of JSON`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badResponse(method, url, result, `a body that is ${jsonSyntaxMessage(error)}`);
  }
}

const JSON_TYPE = /[/+]json\b/i;

function badResponse(method: string, url: CallTarget, result: HttpResult, what: string): UpstreamError {
  return new UpstreamError(
    'bad_response',
    `the successor answered ${method} ${url.pathname} (${result.status}) with ${what}`,
    { source: 'api', status: result.status, method, path: url.pathname },
  );
}

function httpUrl(value: string, name: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`successor client option ${name}: not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`successor client option ${name}: must be an http or https URL`);
  }
  return url;
}

function nonEmpty(value: string, name: string): void {
  if (typeof value !== 'string' || value === '')
    throw new TypeError(`successor client option ${name}: must not be empty`);
}

function positiveInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`successor client option ${name}: must be a positive integer`);
  return value;
}

function nonNegativeInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0)
    throw new TypeError(`successor client option ${name}: must be an integer ≥ 0`);
  return value;
}
