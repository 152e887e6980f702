// Requests the Node adapter (@hono/node-server) cannot turn into a fetch Request, over a raw
// socket to the real server (startServer): without Host, HTTP/1.0 is served (HAProxy's default
// `option httpchk GET /healthz` sends exactly that) and HTTP/1.1 is a 400, whatever the form of
// its request target; a Host that is no host name, `OPTIONS *` and a backslash in the path are a
// 400 with the legacy JSON body, never the adapter's empty one, and never a 500; nor is a client that
// hangs up before its announced body arrived (a 400 in the log, not a server error).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AuthHarness, closeSharedSandbox, startHarness } from './auth-helpers.js';
import { parseRaw, rawExchange } from './raw-http.js';

after(closeSharedSandbox);

/** Status code, headers and body of a raw exchange. */
async function exchange(url: string, request: string) {
  const { statusLine, headers, body } = parseRaw(await rawExchange(url, request));
  return { status: Number(statusLine.split(' ')[1]), statusLine, headers, body };
}

describe('requests the Node adapter cannot read', () => {
  let h: AuthHarness;

  before(async () => {
    h = await startHarness();
  });
  after(() => h?.close());

  it('serves an HTTP/1.0 health check without Host (HAProxy option httpchk)', async () => {
    const answer = await exchange(h.url, 'GET /healthz HTTP/1.0\r\n\r\n');
    assert.equal(answer.status, 200, answer.body);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(JSON.parse(answer.body), { status: 'ok' });
    assert.ok(answer.headers.get('x-request-id'), 'it went through the app');
  });

  it('treats HTTP/1.0 without Host as an ordinary request of the legacy surface (401 without credentials)', async () => {
    const answer = await exchange(h.url, 'GET /iserv/api/Service/Core/Entity/User HTTP/1.0\r\n\r\n');
    assert.equal(answer.status, 401, answer.body);
    assert.match(answer.headers.get('www-authenticate') ?? '', /^Basic realm=/);
    assert.equal(JSON.parse(answer.body).code, 401);
  });

  const unparsable: [what: string, request: string, message: RegExp][] = [
    ['HTTP/1.1 without Host', 'GET /healthz HTTP/1.1\r\n\r\n', /missing host header/],
    // The adapter takes an absolute-form target at its word and asks for no Host.
    [
      'HTTP/1.1 without Host, in absolute form',
      'GET http://x/healthz HTTP/1.1\r\n\r\n',
      /missing host header/,
    ],
    ['a Host with a space', 'GET /healthz HTTP/1.1\r\nHost: x y\r\n\r\n', /invalid URL/],
    ['a Host with a port beyond 65535', 'GET /healthz HTTP/1.1\r\nHost: x:99999\r\n\r\n', /invalid URL/],
    ['OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n', /invalid URL/],
    [
      'a backslash in the path',
      'GET /iserv/api/Service/Core/Entity/User\\admin HTTP/1.1\r\nHost: localhost\r\n\r\n',
      /backslash in request path/,
    ],
    [
      'a body on a request with a bad Host',
      'POST /healthz HTTP/1.1\r\nHost: x y\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      /invalid URL/,
    ],
  ];
  for (const [what, request, message] of unparsable) {
    it(`400 with the legacy JSON body for ${what}`, async () => {
      const answer = await exchange(h.url, request);
      assert.equal(answer.statusLine, 'HTTP/1.1 400 Bad Request', answer.body);
      assert.equal(answer.headers.get('content-type'), 'application/json');
      assert.equal(answer.headers.get('content-length'), String(Buffer.byteLength(answer.body)));
      assert.equal(answer.headers.get('connection'), 'close');
      const body = JSON.parse(answer.body) as { code: number; message: string };
      assert.deepEqual(Object.keys(body).sort(), ['code', 'message']);
      assert.equal(body.code, 400);
      assert.match(body.message, /^Malformed request: /);
      assert.match(body.message, message);
    });
  }

  // Cut off by the client, or broken by it (a chunk of bad syntax, which Node's parser answers with
  // its own 400): the app's log line, metrics and usage say 400, with no error-level line. A body
  // sent in chunks went through hono's body limit, which read it itself, and was a 500.
  const cutOff: [what: string, framing: string, body: string, then: string | undefined][] = [
    ['hangs up before its announced length arrived', 'Content-Length: 20', '["le', undefined],
    ['hangs up in the middle of a chunked body', 'Transfer-Encoding: chunked', '4\r\n["le\r\n', undefined],
    ['sends a chunk of bad syntax', 'Transfer-Encoding: chunked', '4\r\n["le\r\n', 'ZZ\r\nxx\r\n'],
  ];
  for (const [index, [what, framing, body, then]] of cutOff.entries()) {
    it(`counts a client that ${what} as a 400, not a server error`, async () => {
      const name = `leaves.early${index}`;
      const password = await h.addUser(name, ['127.0.0.0/8']);
      const authorization = `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
      const { hostname, port } = new URL(h.url);
      const requestId = `hangs-up-${index}`;
      const socket = connect(Number(port), hostname);
      socket.on('error', () => {});
      await once(socket, 'connect');
      socket.write(
        'POST /iserv/api/Service/Core/Entity/User/paul.wagner/link/groups HTTP/1.1\r\n' +
          `Host: localhost\r\nAuthorization: ${authorization}\r\nX-Request-Id: ${requestId}\r\n` +
          `Content-Type: application/json\r\n${framing}\r\n\r\n${body}`,
      );
      // Part of the body, then the client is gone (or sends what the parser refuses).
      await sleep(100);
      if (then === undefined) socket.destroy();
      else socket.end(then);
      let line: Record<string, unknown> | undefined;
      for (let waited = 0; !line && waited < 5_000; waited += 20) {
        await sleep(20);
        line = h.logSink.lines().find((l) => l.reqId === requestId && l.msg === 'request completed');
      }
      assert.equal(line?.status, 400, JSON.stringify(line));
      assert.equal(line?.operation, 'user.link.groups.add');
      const failures = h.logSink.lines().filter((l) => l.reqId === requestId && Number(l.level) >= 50);
      assert.deepEqual(failures, [], 'no error-level line');
      socket.destroy();
    });
  }

  it('answers an Expect other than 100-continue with 417 and the legacy JSON body (Node sent an empty one)', async () => {
    const answer = await exchange(
      h.url,
      'PUT /iserv/api/Service/Core/Entity/User/admin HTTP/1.1\r\nHost: localhost\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    );
    assert.equal(answer.statusLine, 'HTTP/1.1 417 Expectation Failed', answer.body);
    assert.equal(answer.headers.get('content-type'), 'application/json');
    assert.equal(answer.headers.get('connection'), 'close');
    assert.deepEqual(JSON.parse(answer.body), {
      code: 417,
      message: 'Expectation failed: the only Expect this server meets is 100-continue',
    });
  });

  it('answers CONNECT with 501 and the legacy JSON body (the socket closed without a word)', async () => {
    for (const target of ['/iserv/api/Service/Core/Entity/User', '127.0.0.1:80']) {
      const answer = await exchange(h.url, `CONNECT ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      assert.equal(answer.statusLine, 'HTTP/1.1 501 Not Implemented', target);
      assert.equal(answer.headers.get('connection'), 'close');
      assert.deepEqual(JSON.parse(answer.body), {
        code: 501,
        message: 'CONNECT is not supported: this server is no tunnel',
      });
    }
  });

  it('keeps serving afterwards', async () => {
    assert.equal((await fetch(`${h.url}/healthz`)).status, 200);
  });
});
