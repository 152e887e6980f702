import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

/** A request a loopback test server saw. */
export interface SeenRequest {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A small loopback HTTP server for the faults the sandbox cannot produce. */
export interface LoopbackServer {
  url: string;
  requests: SeenRequest[];
  /** TCP connections accepted so far (to see keep-alive reuse). */
  readonly connections: number;
  close(): Promise<void>;
}

type Handler = (request: SeenRequest, res: ServerResponse) => void | Promise<void>;

/** Starts a loopback server on a random port; `handler` answers every request. */
export async function startLoopback(handler: Handler): Promise<LoopbackServer> {
  const requests: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const seen: SeenRequest = {
        method: req.method ?? 'GET',
        url: new URL(req.url ?? '/', 'http://127.0.0.1'),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(seen);
      Promise.resolve(handler(seen, res)).catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
    });
  });
  let connections = 0;
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** An answer as `forward` got it: status, headers (hop-by-hop ones left out) and the whole body. */
export interface ForwardedAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'trailer']);

/**
 * Sends a request a loopback server saw on to `origin` (a reverse proxy in front of the sandbox,
 * as nginx is in front of a real successor), so a test can reshape the real answer.
 */
export function forward(origin: string, seen: SeenRequest): Promise<ForwardedAnswer> {
  const target = new URL(origin);
  return new Promise((resolve, reject) => {
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: seen.method,
        path: `${seen.url.pathname}${seen.url.search}`,
        headers: { ...seen.headers, host: target.host },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('error', reject);
        answer.on('end', () => {
          const headers: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(answer.headers))
            if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
          resolve({ status: answer.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
        });
      },
    );
    upstream.on('error', reject);
    upstream.end(seen.body);
  });
}

/** Writes a forwarded answer as it came. */
export function sendForwarded(res: ServerResponse, answer: ForwardedAnswer): void {
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/** Writes a JSON response. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  contentType = 'application/json',
): void {
  res.writeHead(status, { 'content-type': contentType });
  res.end(JSON.stringify(body));
}

/** `count` fake entities with distinct UUID-ish ids. */
export function fakeItems(count: number, offset = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    '@id': `/iserv/idm/api/v1/users/${String(offset + i).padStart(12, '0')}`,
    user: `user${offset + i}`,
  }));
}

/** A loopback port that takes no more connections: a connect there hangs until the caller gives up. */
export interface FullListener {
  url: string;
  /** False when the system still completed every connection (then nothing hangs). */
  full: boolean;
  close(): Promise<void>;
}

// Listens with a backlog of 1 and then blocks its event loop, so it never accepts: the kernel
// completes two handshakes into the accept queue and drops every further SYN unanswered.
const FULL_LISTENER = `
const server = require('node:net').createServer();
server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  process.stdout.write(server.address().port + '\\n', () => {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);
    process.exit(0);
  });
});
`;

/**
 * Starts a loopback listener in a child process and fills its accept queue, so that further
 * connections to it hang in the TCP handshake (for connect timeouts without leaving loopback).
 */
export async function startFullListener(): Promise<FullListener> {
  const child = spawn(process.execPath, ['-e', FULL_LISTENER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the listener process exited (${code})`)));
  });
  const fillers: Socket[] = [];
  const connected = await Promise.all(
    Array.from(
      { length: 4 },
      () =>
        new Promise<boolean>((resolve) => {
          const socket = connect(port, '127.0.0.1');
          fillers.push(socket);
          const timer = setTimeout(() => resolve(false), 300);
          socket.once('connect', () => {
            clearTimeout(timer);
            resolve(true);
          });
          socket.on('error', () => {
            clearTimeout(timer);
            resolve(false);
          });
        }),
    ),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    full: connected.includes(false),
    async close() {
      for (const socket of fillers) socket.destroy();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
