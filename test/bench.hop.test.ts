// The bench's hop (bench/hop.ts, in its own process as the bench runs it) forwards what it gets
// unchanged: the bench's "hop" figures are only a yardstick if it does. An origin server on
// 127.0.0.1 echoes what arrived.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { type HopProcess, startHop } from '../bench/processes.js';

describe('bench hop', () => {
  let origin: Server;
  let hop: HopProcess;
  before(async () => {
    origin = createServer(async (req, res) => {
      const body = await text(req);
      const status = req.url?.startsWith('/missing') ? 404 : 200;
      res.writeHead(status, { 'content-type': 'application/json', 'x-origin': 'yes' });
      res.end(JSON.stringify({ method: req.method, url: req.url, auth: req.headers.authorization, body }));
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    hop = await startHop({ url: `http://127.0.0.1:${(origin.address() as AddressInfo).port}` });
  });
  after(async () => {
    await hop?.stop();
    await new Promise((resolve) => origin.close(resolve));
  });

  it('forwards a GET with its path, query and headers, and answers with the origin status, headers and body', async () => {
    const response = await fetch(`${hop.url}/users/abc?_attributes=a%2Cb`, {
      headers: { authorization: 'Bearer t' },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('x-origin'), 'yes');
    assert.deepEqual(await response.json(), {
      method: 'GET',
      url: '/users/abc?_attributes=a%2Cb',
      auth: 'Bearer t',
      body: '',
    });
  });

  it('forwards a request body whole, sized or chunked, and statuses other than 200', async () => {
    const body = JSON.stringify({ addedGroups: ['x'.repeat(100_000)] });
    // Compared by length first: a failure prints two numbers, not 100 kB.
    const received = async (response: Response) => ((await response.json()) as { body: string }).body;
    const sized = await received(await fetch(`${hop.url}/users/abc/groups`, { method: 'POST', body }));
    assert.equal(sized.length, body.length);
    assert.ok(sized === body);
    const chunked = await received(
      await fetch(`${hop.url}/users/abc/groups`, {
        method: 'POST',
        body: new Blob([body]).stream(),
        duplex: 'half',
      } as RequestInit),
    );
    assert.equal(chunked.length, body.length);
    assert.ok(chunked === body);
    const missing = await fetch(`${hop.url}/missing`, { method: 'DELETE' });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { method: string }).method, 'DELETE');
  });
});
