import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
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
