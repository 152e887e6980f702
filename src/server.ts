import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createApp } from './app.js';
import { DEMO_USER, ensureDemoUser } from './auth/admin.js';
import type { AppConfig } from './config/load.js';
import { loadTlsFiles, type TlsFiles, tlsDigest } from './config/tls.js';
import { configWarnings } from './config/warnings.js';
import { connectionDropReporter } from './http/connection-limit.js';
import {
  continueWhenRead,
  NODE_SERVER_OPTIONS,
  nodeRequestListener,
  UNFRAMED_BODY,
} from './http/node-listener.js';
import { serverOrigin } from './http/public-url.js';
import { type Clock, systemClock } from './lib/clock.js';
import type { Logger } from './lib/logger.js';
import type { RunningSandbox } from './sandbox/index.js';
import { buildServices, type Services } from './services.js';

export interface StartServerOptions {
  config: AppConfig;
  logger: Logger;
  clock?: Clock;
  /** A stop signal during start-up: ends the store's retries, and startServer rejects with its reason. */
  signal?: AbortSignal | undefined;
}

/** A listening proxy. */
export interface RunningServer {
  /** Where the proxy listens, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The URL clients are told to use (legacy.publicUrl, else `url`). */
  publicUrl: string;
  services: Services;
  /** The embedded sandbox IDM, in sandbox mode. */
  sandbox: RunningSandbox | undefined;
  /** Sandbox mode: the API user `demo`, with its password only when this start created it. */
  demoUser: { name: string; ranges: string[]; password: string | undefined } | undefined;
  /** `tlsDigest` of the certificate and key it serves (HTTPS), for a reload to compare. */
  tlsAtStart: string | undefined;
  /** Graceful stop: no new connections, in-flight requests finish (up to server.shutdownTimeoutMs), then everything closes. */
  close(): Promise<void>;
}

/** Builds the services from the configuration and starts listening. The only place that listens. */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, logger } = options;
  const clock = options.clock ?? systemClock;
  // The certificate and key before anything is opened: a file that cannot serve HTTPS is a
  // configuration error naming its key (exit 2), as `config check` reports it.
  const tls = loadTlsFiles(config);
  const services = await buildServices(config, { logger, clock, signal: options.signal });
  let server: Server | undefined;
  try {
    // Sandbox mode only (SPEC 2): a loopback-only API user so a fresh `npm start` can be tried at once.
    let demoUser: RunningServer['demoUser'];
    if (config.mode === 'sandbox') {
      const created = await ensureDemoUser(services.store, clock);
      const ranges = created?.ranges ?? (await services.store.apiUsers.get(DEMO_USER.name))?.ranges ?? [];
      demoUser = { name: DEMO_USER.name, ranges, password: created?.password };
    }
    const app = createApp(services);
    const drain: Drain = { draining: false };
    server = await listen(config, tls, drain);
    if (config.server.maxConnections !== undefined) {
      server.maxConnections = config.server.maxConnections;
      server.on(
        'drop',
        connectionDropReporter(config.server.maxConnections, logger, services.observer, clock),
      );
    }
    const address = server.address() as AddressInfo;
    const url = serverOrigin(config.server.tls !== undefined, address.address, address.port);
    const publicUrl = services.publicUrl ?? url;
    // Attached once the address is known (port 0 picks one): between the end of listen() and here
    // only promise continuations run, never an I/O callback, so no request arrives without it.
    const listener = nodeRequestListener(app.fetch, { defaultHost: new URL(publicUrl).host, logger });
    server.on('request', listener);
    server.on('checkContinue', continueWhenRead(listener));
    logger.info(
      { url, mode: config.mode, successor: services.config.successor.baseUrl },
      'idm-compat listening',
    );
    for (const warning of configWarnings(config))
      logger.warn({ setting: warning.path }, `${warning.path}: ${warning.message}`);

    let closing: Promise<void> | undefined;
    const listening = server;
    const close = () => {
      closing ??= (async () => {
        drain.draining = true;
        const timeoutMs = config.server.shutdownTimeoutMs;
        await stopListening(listening, timeoutMs, () => services.inFlight.cuttingOff());
        await handlersSettled(services, timeoutMs);
        await services.close();
        logger.info('idm-compat stopped');
      })();
      return closing;
    };
    return {
      url,
      publicUrl,
      services,
      sandbox: services.sandbox,
      demoUser,
      tlsAtStart: tls && tlsDigest(tls),
      close,
    };
  } catch (error) {
    // A failure once the server listens (before its request listener is attached, or after):
    // without this it would keep the port and accept connections nobody answers.
    if (server) await closeAtOnce(server);
    await services.close();
    throw error;
  }
}

/** Listens with the server's settings; the request listener is attached by the caller, once the address is known. */
async function listen(config: AppConfig, tls: TlsFiles | undefined, drain: Drain): Promise<Server> {
  const { requestTimeoutMs } = config.server;
  const options = {
    ...NODE_SERVER_OPTIONS,
    ServerResponse: closingWhenDraining(drain),
    // A client sending its request slowly (a slow body, headers a byte at a time) holds a socket
    // and the request's state for this long at most; Node's own 300 s let 20,000 of them take
    // every file descriptor. Node looks for such requests every connectionsCheckingInterval (30 s
    // by default), so they are cut within 1.5 times the timeout.
    requestTimeout: requestTimeoutMs,
    headersTimeout: requestTimeoutMs,
    connectionsCheckingInterval: Math.min(30_000, Math.ceil(requestTimeoutMs / 2)),
  };
  const server: Server = tls
    ? createHttpsServer({ ...options, cert: tls.cert, key: tls.key })
    : createHttpServer(options);
  server.on('clientError', answerClientError);
  server.on('checkExpectation', answerUnmetExpectation);
  server.on('connect', answerConnect);
  // Node's default (5 s) is shorter than what many clients and load balancers keep an idle
  // connection for, so the server would close connections they are about to reuse ("socket hang
  // up"). The headers and request timeouts count from a request's first byte, not from the
  // connection's previous answer (Node 20: a kept connection idle for 6 s took its next request
  // with both at 2 s), so they may be shorter than this.
  server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.server.port, config.server.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** Requests Node's HTTP parser refuses never reach the app: status, reason phrase and message. */
type ClientErrorAnswer = [status: number, reason: string, message: string];
const CLIENT_ERRORS: Record<string, ClientErrorAnswer> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'Request header fields too large'],
  // The listener (src/http/node-listener.ts) refuses the request in the same words, whichever of
  // the two reaches the client first.
  HPE_INVALID_TRANSFER_ENCODING: [400, 'Bad Request', `Malformed request: ${UNFRAMED_BODY}`],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'The request did not arrive in time'],
};
const MALFORMED: ClientErrorAnswer = [400, 'Bad Request', 'Malformed request'];

/**
 * Answers what Node's parser refuses (oversized headers: 431, else 400) with the legacy JSON body
 * instead of Node's bare one; like Node, only while no response of the connection has started.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const response = (socket as Duplex & { _httpMessage?: { headersSent: boolean } | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, message] = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
  endWithLegacyError(socket, status, reason, message);
}

/** Writes the legacy JSON error straight onto the socket and closes it (no app, no request id). */
function endWithLegacyError(socket: Duplex, status: number, reason: string, message: string): void {
  const body = JSON.stringify({ code: status, message });
  const head = `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  socket.end(head + body, () => socket.destroy());
}

/**
 * Answers a CONNECT, which Node hands to no request listener (the socket closed without a word
 * before): 501 with the legacy JSON body, the method not being one the server implements for any
 * target (a 405 would need an `Allow` for a target that is no resource here). The proxy is no
 * tunnel, so the connection is closed after it.
 */
function answerConnect(_request: IncomingMessage, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  endWithLegacyError(socket, 501, 'Not Implemented', 'CONNECT is not supported: this server is no tunnel');
}

/**
 * Answers a request whose `Expect` is not `100-continue` (RFC 9110 10.1.1: 417), which Node does
 * not hand to the app, with the legacy JSON body instead of Node's empty one; the connection is
 * closed, as the client may send the body it announced all the same.
 */
function answerUnmetExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const body = JSON.stringify({
    code: 417,
    message: 'Expectation failed: the only Expect this server meets is 100-continue',
  });
  response.writeHead(417, {
    'Content-Type': 'application/json',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  });
  response.end(body);
}

/** Whether the server drains: set once its shutdown starts. */
interface Drain {
  draining: boolean;
}

/**
 * The server's response class: once `drain.draining` is set, every answer whose head is not
 * written yet closes its connection (`Connection: close`) — the requests in flight when the
 * shutdown starts, and any that still come on a kept connection. Without it, such an answer says
 * `Connection: keep-alive`, the client sends its next request on that connection, and the server
 * closes it as idle at the same moment: that request is lost (ECONNRESET), where with
 * `Connection: close` the client opens a new connection (to another replica, behind a load
 * balancer). An answer whose head went out before (a streamed list) keeps its connection until it
 * ends. Node writes every head through `writeHead` (an implicit one too), so this costs a request
 * one flag check: no listener, no bookkeeping.
 */
function closingWhenDraining(drain: Drain) {
  return class DrainAwareResponse extends ServerResponse {
    override writeHead(...args: unknown[]): this {
      // (An explicit `Connection: keep-alive` header would win over this; the proxy never sets one.)
      if (drain.draining) this.shouldKeepAlive = false;
      const written = Reflect.apply(super.writeHead, this, args) as this;
      // An answer that closes its connection before its request's body has all arrived (a 401 or
      // 413 refused unread, or in the middle of a chunked body): see `lingerBeforeClosing`.
      if (this.socket && !this.req.complete && closesConnection(this)) lingerBeforeClosing(this.socket);
      return written;
    }
  };
}

/**
 * Whether the connection closes once this answer is out: Node's own `_last` (set from
 * `shouldKeepAlive` and a `Connection: close` header as the head is written), or, should a Node
 * version drop that field, the same two read directly.
 */
function closesConnection(response: ServerResponse): boolean {
  const last = (response as unknown as { _last?: boolean })._last;
  if (typeof last === 'boolean') return last;
  return !response.shouldKeepAlive || /\bclose\b/i.test(String(response.getHeader('connection') ?? ''));
}

/** How long, and for how many more bytes, a connection closed before its request body ended keeps reading it. */
const LINGER_MS = 2_000;
const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * Node closes a connection whose answer says `Connection: close` as soon as the answer is out. If
 * the client is still sending its body then (a 401 or a 413 to a large upload), the bytes arriving
 * at a closed socket make the kernel answer with a reset, and the client typically sees EPIPE or
 * ECONNRESET instead of the answer (a 20 MB body over a 1 MiB limit: 9 in 10). So such a
 * connection ends only its own side once the answer is out and goes on reading (and dropping) what
 * the client sends, until the client closes too, for at most LINGER_MS or LINGER_BYTES, as web
 * servers' "lingering close" does; then it is cut.
 */
function lingerBeforeClosing(socket: Socket): void {
  socket.destroySoon = () => {
    let received = 0;
    const cut = () => socket.destroy();
    const timer = setTimeout(cut, LINGER_MS);
    timer.unref();
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > LINGER_BYTES) cut();
    };
    socket.on('data', onData);
    socket.once('end', cut);
    socket.once('close', () => {
      clearTimeout(timer);
      socket.off('data', onData);
    });
    socket.end();
  };
}

/**
 * Waits, up to `timeoutMs` more, for the handlers of the requests whose connections the shutdown
 * cut: they still call the successor (a multi-step write, its rollback), which must not be closed
 * under them. Those still running after it are logged, and fail on the closed client.
 */
async function handlersSettled(services: Services, timeoutMs: number): Promise<void> {
  const running = services.inFlight.running;
  if (running === 0) return;
  const { logger } = services;
  logger.warn(
    { requests: running },
    `shutdown: ${running} request(s) still running with their connections closed (cut at server.shutdownTimeoutMs, or left by their clients); waiting up to ${timeoutMs} ms more for their successor calls to end`,
  );
  const left = await services.inFlight.settled(timeoutMs);
  if (left > 0)
    logger.error(
      { requests: left },
      `shutdown: ${left} request(s) still running; closing the successor client under them (their writes may be partly applied: see their log lines)`,
    );
}

/** Stops listening and drops every connection: nothing was answered yet, nothing is waited for. */
async function closeAtOnce(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

/**
 * Stops accepting connections, lets in-flight requests finish, and cuts what is left after the
 * timeout (`cuttingOff` is told first).
 */
async function stopListening(server: Server, timeoutMs: number, cuttingOff: () => void): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // close() drops only the connections idle at that moment; a keep-alive connection whose
  // in-flight request finishes later would hold shutdown open until the client lets go.
  const sweeper = setInterval(() => server.closeIdleConnections(), 50);
  const timer = setTimeout(() => {
    cuttingOff();
    server.closeAllConnections();
  }, timeoutMs);
  await closed;
  clearInterval(sweeper);
  clearTimeout(timer);
}
