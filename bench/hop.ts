// The physical limit of a Node proxy that adds one hop: every request is forwarded as it is to the
// successor with a pooled undici `request`, and the answer is streamed back. No credentials check,
// no mapping, no logging. `node --import tsx bench/hop.ts <successor origin> <port>`; prints
// "ready" on stdout once it listens on 127.0.0.1.
//
// Kept as lean as a forwarder can be, or it is no limit: the answer goes back with `pipe`, not
// `stream/promises` `pipeline` (whose AbortController, DOMException and end-of-stream listeners per
// call cost about a third of this process's CPU for a small answer), and a request that announces
// no body is not read as a stream.
import { createServer, type IncomingMessage } from 'node:http';
import { buffer } from 'node:stream/consumers';
import { Agent, type Dispatcher } from 'undici';

const [origin, port] = process.argv.slice(2);
if (!origin || !port) throw new Error('usage: hop.ts <successor origin> <port>');
const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade']);

/** The request's body, or null when it announces none. */
async function requestBody(req: IncomingMessage): Promise<Buffer | null> {
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)
    return null;
  return buffer(req);
}

const server = createServer(async (req, res) => {
  try {
    const body = await requestBody(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    const upstream = await agent.request({
      origin,
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body,
    });
    const answer: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) answer[name] = value;
    }
    res.writeHead(upstream.statusCode, answer);
    // A failed answer ends the caller's too; a caller that hangs up stops the answer's read.
    upstream.body.once('error', () => res.destroy());
    res.once('close', () => {
      if (!upstream.body.readableEnded) upstream.body.destroy();
    });
    upstream.body.pipe(res);
  } catch {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  }
});
server.keepAliveTimeout = 30_000;
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void agent.close();
});
