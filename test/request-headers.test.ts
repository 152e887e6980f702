// The request header lookup reads the Node server's distinct headers; it must answer exactly what
// fetch's Headers would: case-insensitive names, repeated fields joined with ", ".
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { announcesBody, requestHeader } from '../src/http/request-headers.js';
import { parseRaw, rawExchange } from './raw-http.js';

/** The body of the answer to one raw request. */
const rawBody = async (port: number, head: string) =>
  parseRaw(await rawExchange(`http://127.0.0.1:${port}`, head)).body;

const NAMES = ['x-forwarded-for', 'authorization', 'x-absent', 'content-length', 'x-empty'];

describe('requestHeader', () => {
  let server: ServerType;
  let port: number;

  before(async () => {
    const app = new Hono();
    app.all('*', (c) =>
      c.json({
        fast: NAMES.map((name) => requestHeader(c, name) ?? null),
        fetch: NAMES.map((name) => c.req.header(name) ?? null),
        announces: announcesBody(c),
      }),
    );
    await new Promise<void>((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
        port = info.port;
        resolve();
      });
    });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers what fetch Headers answers: any case, repeated fields joined', async () => {
    const body = await rawBody(
      port,
      [
        'POST /x HTTP/1.1',
        'Host: 127.0.0.1',
        'X-Forwarded-For: 10.0.0.1',
        'x-forwarded-for: 10.0.0.2',
        'AUTHORIZATION: Basic dXNlcjpwdw==',
        'X-Empty: ',
        'Content-Length: 2',
        'Connection: close',
        '',
        'ab',
      ].join('\r\n'),
    );
    const answer = JSON.parse(body) as { fast: unknown[]; fetch: unknown[]; announces: boolean };
    assert.deepEqual(answer.fast, answer.fetch);
    assert.deepEqual(answer.fast, ['10.0.0.1, 10.0.0.2', 'Basic dXNlcjpwdw==', null, '2', '']);
    assert.equal(answer.announces, true);
  });

  it('sees no body on a GET without Content-Length or Transfer-Encoding, and the Request agrees without the Node server', async () => {
    const body = await rawBody(port, 'GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.equal((JSON.parse(body) as { announces: boolean }).announces, false);
    const app = new Hono();
    app.all('*', (c) => c.json({ header: requestHeader(c, 'x-forwarded-for'), announces: announcesBody(c) }));
    const direct = await app.request('/x', {
      method: 'POST',
      headers: { 'X-Forwarded-For': '10.0.0.9', 'content-length': '0' },
    });
    assert.deepEqual(await direct.json(), { header: '10.0.0.9', announces: false });
  });
});
