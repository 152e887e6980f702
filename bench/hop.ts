// The physical limit of a Node proxy that adds one hop: every request is forwarded as it is to the
// successor with a pooled undici `request`, and the answer is streamed back. No credentials check,
// no mapping, no logging. `node --import tsx bench/hop.ts <successor origin> <port>`; prints
// "ready" on stdout once it listens on 127.0.0.1.
import { createServer } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Agent, type Dispatcher } from 'undici';

const [origin, port] = process.argv.slice(2);
if (!origin || !port) throw new Error('usage: hop.ts <successor origin> <port>');
const agent = new Agent({ connections: 32, keepAliveTimeout: 30_000 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'upgrade']);

const server = createServer(async (req, res) => {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    const upstream = await agent.request({
      origin,
      path: req.url ?? '/',
      method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
      headers,
      body: chunks.length === 0 ? null : Buffer.concat(chunks),
    });
    const answer: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) answer[name] = value;
    }
    res.writeHead(upstream.statusCode, answer);
    await pipeline(upstream.body, res);
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
