// Passthrough (SPEC 8): after the proxy's own API-user auth, requests go unchanged to the old
// server, signed in with the proxy's own account, and its answers come back byte for byte; writes
// land on the old server only; an old server that is down or slow gives the legacy 502/504 body.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { request as undiciRequest } from 'undici';
import { type AuthHarness, basic, call, closeSharedSandbox, sharedSandbox } from './auth-helpers.js';
import { type OldServer, startFront, startOldServer } from './migration-helpers.js';

after(closeSharedSandbox);

/**
 * An old server of a few lines (`handler`) on loopback, and a front that passes `modes` to it
 * (with `totalMs` as migration.legacy.timeouts.totalMs); `close` ends both.
 */
async function frontOnFake(
  handler: RequestListener,
  modes: Record<string, string>,
  totalMs?: number,
): Promise<{ front: AuthHarness; close: () => Promise<void> }> {
  const fake = createHttpServer(handler);
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(fake.address() as { port: number }).port}/iserv/api`;
  const legacy = {
    baseUrl,
    username: 'proxy-account',
    password: 'x',
    ...(totalMs === undefined ? {} : { timeouts: { totalMs } }),
  };
  const front = await startFront(legacy, { modes, legacy });
  return {
    front,
    async close() {
      await front.close();
      fake.closeAllConnections();
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    },
  };
}

const CORE = '/iserv/api/Service/Core';

describe('passthrough', () => {
  let old: OldServer;
  let front: AuthHarness;
  let password: string;
  before(async () => {
    old = await startOldServer();
    front = await startFront(old, { modes: { '*': 'passthrough' } });
    password = await front.addUser('integration', ['127.0.0.0/8']);
  });
  after(async () => {
    await front?.close();
    await old?.close();
  });
  const viaFront = (
    path: string,
    init: { method?: string; body?: string; headers?: Record<string, string> } = {},
  ) => call(`${front.url}${CORE}${path}`, { user: 'integration', password, ...init });
  const direct = (path: string) =>
    call(`${old.baseUrl}/Service/Core${path}`, { user: old.username, password: old.password });

  it('answers byte for byte what the old server answers, for every resource kind', async () => {
    for (const path of [
      '/Entity/User',
      '/Entity/User?extended=1',
      '/Entity/User/thomas.becker',
      '/Entity/User/nobody.here',
      '/Entity/Group/lehrer',
      '/Entity/Group?extended[]=',
      '/Entity/Role',
      '/Entity/Role/ROLE_ADMIN',
      '/Entity/Privilege',
    ]) {
      const [proxied, original] = [await viaFront(path), await direct(path)];
      assert.equal(proxied.status, original.status, path);
      assert.equal(proxied.headers.get('content-type'), original.headers.get('content-type'), path);
      assert.equal(proxied.text, original.text, path);
    }
  });

  it("answers with the request's id, as translated answers do", async () => {
    const given = await viaFront('/Entity/User/thomas.becker', {
      headers: { 'x-request-id': 'passthrough-1' },
    });
    assert.equal(given.status, 200, given.text);
    assert.equal(given.headers.get('x-request-id'), 'passthrough-1');
    const made = await viaFront('/Entity/Role');
    assert.match(
      made.headers.get('x-request-id') ?? '',
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
  });

  it('lands writes on the old server, not on the successor, signed in as the proxy account', async () => {
    const successor = await sharedSandbox();
    const marker = old.harness.logSink.lines().length;
    const created = await viaFront('/Entity/User', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'passed.through', firstname: 'Pass', lastname: 'Through' }),
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((created.body as { username: string }).username, 'passed.through');
    // The old server's Location, moved to the proxy the caller talks to.
    assert.equal(created.headers.get('location'), `${front.url}${CORE}/Entity/User/passed.through`);
    assert.ok(old.sandbox.data.userByAccount('passed.through'), 'on the old server');
    assert.equal(successor.data.userByAccount('passed.through'), undefined, 'not on the successor');
    const seen = old.harness.logSink
      .lines()
      .slice(marker)
      .filter((line) => line.msg === 'request completed' && line.operation === 'user.create');
    assert.deepEqual(
      seen.map((line) => line.apiUser),
      ['proxy-account'],
      "the old server saw the proxy's account, never the caller's",
    );
  });

  it('refuses an ID with an encoded path separator or dot segment before anything is forwarded (404)', async () => {
    const marker = old.harness.logSink.lines().length;
    for (const id of ['x%2F..%2F..%2FGroup%2Flehrer', 'x%5C..', '..%2F', '.']) {
      const answer = await viaFront(`/Entity/User/${id}`);
      assert.equal(answer.status, 404, `${id}: ${answer.text}`);
    }
    assert.deepEqual(
      old.harness.logSink
        .lines()
        .slice(marker)
        .filter((line) => line.msg === 'request completed'),
      [],
      'nothing reached the old server',
    );
  });

  it("still asks for the caller's own credentials first", async () => {
    assert.equal((await call(`${front.url}${CORE}/Entity/User`)).status, 401);
    assert.equal(
      (await call(`${front.url}${CORE}/Entity/User`, { user: 'integration', password: 'wrong' })).status,
      401,
    );
  });

  it("always serves SSO itself: the token and return_to are the proxy's own", async () => {
    const sso = await call(`${front.url}/iserv/api/Service/Sso/authenticate`, {
      user: 'integration',
      password,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=thomas.becker',
    });
    assert.equal(sso.status, 200, sso.text);
    assert.ok((sso.body as { return_to: string }).return_to.startsWith(front.url));
  });

  it("counts passthrough requests by mode and the old server's answers by status", async () => {
    const metrics = await (await fetch(`${front.url}/metrics`)).text();
    assert.match(
      metrics,
      /^idm_compat_mode_requests_total\{operation="user\.list",mode="passthrough"\} [1-9]/m,
    );
    assert.match(metrics, /^idm_compat_legacy_upstream_requests_total\{status="200"\} [1-9]/m);
    assert.match(metrics, /^idm_compat_legacy_upstream_requests_total\{status="404"\} 1$/m);
  });
});

describe('passthrough of an answer the old server sends slowly', () => {
  let slow: Server;
  let baseUrl: string;
  before(async () => {
    // Every answer: the headers and the first half of the body at once, the rest 500 ms later.
    slow = createServer((socket) => {
      socket.once('data', () => {
        socket.write(
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n[\r\n',
        );
        setTimeout(() => socket.end('1\r\n]\r\n0\r\n\r\n'), 500);
      });
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/iserv/api`;
  });
  after(async () => {
    await new Promise<void>((resolve) => slow.close(() => resolve()));
  });

  it("logs the request when the answer's last byte is out, with that duration", async () => {
    const front = await startFront(
      { baseUrl, username: 'proxy-account', password: 'x' },
      { modes: { 'user.*': 'passthrough' } },
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const answer = await call(`${front.url}${CORE}/Entity/User`, {
        user: 'integration',
        password,
        headers: { 'x-request-id': 'slow-passthrough' },
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.text, '[]');
      const line = front.logSink
        .lines()
        .find((l) => l.reqId === 'slow-passthrough' && l.msg === 'request completed');
      assert.ok(line, 'the completion line is written by the time the answer has arrived');
      assert.ok(Number(line.durationMs) >= 450, `durationMs ${String(line.durationMs)}`);
    } finally {
      await front.close();
    }
  });
});

describe('passthrough of an answer the old server breaks off', () => {
  let breaking: Server;
  let baseUrl: string;
  const sockets = new Set<Socket>();
  before(async () => {
    // `/cut`: 15 of 1,000 announced bytes, then the connection is gone. `/stall`: `[` and then
    // nothing, past the total timeout.
    breaking = createServer((socket) => {
      sockets.add(socket);
      socket.once('data', (request) => {
        const head = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n';
        if (request.toString().includes('/cut')) {
          socket.write(`${head}Content-Length: 1000\r\n\r\n[{"_id":"ada.l"`);
          setTimeout(() => socket.destroy(), 50);
        } else socket.write(`${head}Transfer-Encoding: chunked\r\n\r\n1\r\n[\r\n`);
      });
    });
    await new Promise<void>((resolve) => breaking.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(breaking.address() as { port: number }).port}/iserv/api`;
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => breaking.close(() => resolve()));
  });

  it('cuts the caller off and logs it at error level, once: a broken connection, and an answer past the timeout', async () => {
    // The caller got a body without its end, and the log had only the completion line, status 200.
    const front = await startFront(
      { baseUrl, username: 'proxy-account', password: 'x' },
      {
        modes: { 'user.get': 'passthrough' },
        legacy: { baseUrl, username: 'proxy-account', password: 'x', timeouts: { totalMs: 600 } },
      },
    );
    // The Node adapter printed each failure (with the old server's address) on stderr besides.
    const printed: unknown[] = [];
    const consoleError = console.error;
    console.error = (...args: unknown[]) => printed.push(args);
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      for (const [id, why] of [
        ['cut', /^old server's answer cut off: it broke off$/],
        [
          'stall',
          /^old server's answer cut off: it sent nothing for 600 ms \(migration\.legacy\.timeouts\.totalMs\)$/,
        ],
      ] as const) {
        const requestId = `passthrough-${id}`;
        const body = await fetch(`${front.url}${CORE}/Entity/User/${id}`, {
          headers: {
            authorization: `Basic ${Buffer.from(`integration:${password}`).toString('base64')}`,
            'x-request-id': requestId,
          },
        }).then(
          (response) =>
            response.text().then(
              () => 'whole',
              () => 'cut off',
            ),
          () => 'cut off',
        );
        assert.equal(body, 'cut off', id);
        const lines = () => front.logSink.lines().filter((l) => l.reqId === requestId);
        for (
          let waited = 0;
          !lines().some((l) => l.msg === 'request completed') && waited < 5_000;
          waited += 20
        )
          await new Promise((resolve) => setTimeout(resolve, 20));
        const failed = lines().filter((l) => Number(l.level) >= 50 && l.msg !== 'request completed');
        assert.equal(failed.length, 1, JSON.stringify(lines()));
        assert.match(String(failed[0]?.msg), why);
        assert.equal(failed[0]?.operation, 'user.get');
      }
      assert.deepEqual(printed, [], 'nothing printed on stderr');
    } finally {
      console.error = consoleError;
      await front.close();
    }
  });
});

describe('passthrough to an old server that fails', () => {
  let silent: Server;
  let port: number;
  const sockets = new Set<Socket>();
  before(async () => {
    // Accepts connections and never answers: a stalled old server.
    silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    port = (silent.address() as { port: number }).port;
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  async function frontOn(baseUrl: string): Promise<{ front: AuthHarness; password: string }> {
    const front = await startFront(
      { baseUrl, username: 'proxy-account', password: 'not-used' },
      {
        modes: { 'user.*': 'passthrough' },
        legacy: { baseUrl, username: 'proxy-account', password: 'x', timeouts: { totalMs: 300 } },
      },
    );
    return { front, password: await front.addUser('integration', ['127.0.0.0/8']) };
  }

  it('answers 504 with the legacy body when the old server does not answer in time', async () => {
    const { front, password } = await frontOn(`http://127.0.0.1:${port}/iserv/api`);
    try {
      const started = Date.now();
      const answer = await call(`${front.url}${CORE}/Entity/User`, { user: 'integration', password });
      assert.equal(answer.status, 504, answer.text);
      assert.deepEqual(Object.keys(answer.body as object).sort(), ['code', 'message']);
      assert.ok(Date.now() - started < 5_000, 'within the timeout, not hanging');
      // Operations not in passthrough are still translated.
      assert.equal(
        (await call(`${front.url}${CORE}/Entity/Group`, { user: 'integration', password })).status,
        200,
      );
    } finally {
      await front.close();
    }
  });

  it("gives a passed-through HEAD the old server's Content-Length, as its GET has", async () => {
    const old = await startOldServer();
    const front = await startFront(old, { modes: { '*': 'passthrough' } });
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      for (const [path, status] of [
        ['/Entity/User/thomas.becker', 200],
        ['/Entity/User/no.such.user', 404],
      ] as const) {
        const get = await call(`${front.url}${CORE}${path}`, { user: 'integration', password });
        const head = await call(`${front.url}${CORE}${path}`, {
          user: 'integration',
          password,
          method: 'HEAD',
        });
        assert.equal(get.status, status);
        assert.equal(head.status, status);
        assert.equal(head.text, '');
        assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(get.text)), path);
      }
    } finally {
      await front.close();
      await old.close();
    }
  });

  it("answers 502, not the caller's 401, when the old server refuses the proxy's own credentials", async () => {
    const old = await startOldServer();
    const front = await startFront(
      { ...old, password: 'not-the-password' },
      { modes: { '*': 'passthrough' } },
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const answer = await call(`${front.url}${CORE}/Entity/User`, { user: 'integration', password });
      assert.equal(answer.status, 502, answer.text);
      assert.equal(answer.headers.get('www-authenticate'), null);
      assert.doesNotMatch(answer.text, /not-the-password/);
    } finally {
      await front.close();
      await old.close();
    }
  });

  it('answers 502 with the legacy body when the old server answers a status HTTP does not have (600–999)', async () => {
    // Node's server writes any three digits; the fetch Response the answer became refused them
    // (RangeError), and the caller got a 500.
    const { front, close } = await frontOnFake(
      (request, response) => {
        request.resume();
        response.writeHead(Number(new URL(request.url ?? '/', 'http://x').searchParams.get('status') ?? 999));
        response.end('{}');
      },
      { 'user.list': 'passthrough', 'user.get': 'shadow' },
      2_000,
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      for (const [path, status] of [
        ['/Entity/User?status=999', 999],
        ['/Entity/User?status=600', 600],
        ['/Entity/User/thomas.becker?status=999', 999],
      ] as const) {
        const answer = await call(`${front.url}${CORE}${path}`, { user: 'integration', password });
        assert.equal(answer.status, 502, `${path}: ${answer.text}`);
        assert.deepEqual(Object.keys(answer.body as object).sort(), ['code', 'message']);
        assert.match((answer.body as { message: string }).message, new RegExp(`status ${status}`));
      }
    } finally {
      await close();
    }
  });

  it('asks the old server for its answers unencoded, and passes an encoding it uses all the same on', async () => {
    // Asked without Accept-Encoding (any coding acceptable), an old server that gzips sent gzip,
    // and the caller got the compressed bytes without Content-Encoding: unreadable.
    const json = JSON.stringify([{ username: 'gzip.user' }]);
    const seen: (string | undefined)[] = [];
    const { front, close } = await frontOnFake(
      (request, response) => {
        request.resume();
        const accepted = request.headers['accept-encoding'];
        seen.push(accepted);
        const always = request.url?.includes('always=1') === true;
        if (always || accepted === undefined || /gzip/.test(accepted)) {
          response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          response.end(gzipSync(json));
        } else {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(json);
        }
      },
      { 'user.list': 'passthrough' },
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const plain = await call(`${front.url}${CORE}/Entity/User`, { user: 'integration', password });
      assert.equal(plain.status, 200, plain.text);
      assert.deepEqual(plain.body, JSON.parse(json));
      assert.equal(seen[0], 'identity');
      // A server that compresses whatever it is asked: the coding goes with the bytes.
      const raw = await undiciRequest(`${front.url}${CORE}/Entity/User?always=1`, {
        headers: { authorization: basic('integration', password) },
      });
      assert.equal(raw.statusCode, 200);
      assert.equal(raw.headers['content-encoding'], 'gzip');
      assert.equal(gunzipSync(Buffer.from(await raw.body.arrayBuffer())).toString(), json);
    } finally {
      await close();
    }
  });

  it("gives a caller that reads slowly the whole answer: the time it holds the answer back is not the old server's", async () => {
    // The total timeout ran while the caller's slow reading held the old server's body back: a
    // large list over a slow link arrived cut off, logged as the old server's fault.
    const json = JSON.stringify(
      Array.from({ length: 60_000 }, (_, i) => ({ username: `user.${i}`, pad: 'x'.repeat(100) })),
    );
    const { front, close } = await frontOnFake(
      (request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(json);
      },
      { 'user.list': 'passthrough' },
      500,
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const answer = await undiciRequest(`${front.url}${CORE}/Entity/User`, {
        headers: { authorization: basic('integration', password) },
        highWaterMark: 16 * 1024,
      });
      assert.equal(answer.statusCode, 200);
      const chunks: Buffer[] = [];
      let paused = false;
      for await (const chunk of answer.body) {
        chunks.push(chunk as Buffer);
        // A slow link: it stops reading for three times the timeout, early in the answer.
        if (!paused) {
          paused = true;
          await sleep(1_500);
        }
      }
      assert.equal(Buffer.concat(chunks).length, Buffer.byteLength(json), 'the whole answer');
      assert.ok(
        !front.logSink.lines().some((line) => String(line.msg).startsWith("old server's answer cut off")),
        'nothing was cut off',
      );
    } finally {
      await close();
    }
  });

  it('reports the old server on /readyz while an operation is passed through or shadowed, and not otherwise', async () => {
    // /readyz checked the store and the successor only: with every call passed through to an old
    // server that was down, the load balancer kept sending traffic to a replica answering 502s.
    type Ready = { status: string; checks: Record<string, { ok: boolean; error?: string }> };
    const readyz = async (front: AuthHarness) => {
      const answer = await call(`${front.url}/readyz`);
      return { status: answer.status, body: answer.body as Ready };
    };
    const old = await startOldServer();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const downUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}/iserv/api`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = { baseUrl: downUrl, username: 'proxy-account', password: 'not-used' };
    const fronts = {
      up: await startFront(old, { modes: { '*': 'passthrough' } }),
      down: await startFront(down, { modes: { 'user.get': 'shadow' } }),
      refused: await startFront({ ...old, password: 'not-the-password' }, { modes: { '*': 'passthrough' } }),
      translating: await startFront(down, {}),
    };
    try {
      const up = await readyz(fronts.up);
      assert.equal(up.status, 200, JSON.stringify(up.body));
      assert.deepEqual(up.body.checks.legacy, { ok: true });
      const unreachable = await readyz(fronts.down);
      assert.equal(unreachable.status, 503);
      assert.equal(unreachable.body.checks.legacy?.ok, false);
      assert.match(
        unreachable.body.checks.legacy?.error ?? '',
        /^the old server is unreachable or broke off the answer: .*ECONNREFUSED 127\.0\.0\.1:\d+/,
      );
      const refused = await readyz(fronts.refused);
      assert.equal(refused.status, 503);
      assert.match(refused.body.checks.legacy?.error ?? '', /refused the proxy's own credentials/);
      assert.doesNotMatch(JSON.stringify(refused.body), /not-the-password/);
      // Every operation translated: the old server answers none of them, and is not asked.
      const translating = await readyz(fronts.translating);
      assert.equal(translating.status, 200, JSON.stringify(translating.body));
      assert.equal(translating.body.checks.legacy, undefined);
    } finally {
      await Promise.all(Object.values(fronts).map((front) => front.close()));
      await old.close();
    }
  });

  it('forwards a request that spells the base path otherwise (/iserv/%61pi) below the old server base path', async () => {
    const asked: string[] = [];
    const { front, close } = await frontOnFake(
      (request, response) => {
        request.resume();
        asked.push(request.url ?? '');
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"_id":"lena.mueller"}');
      },
      { '*': 'passthrough' },
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const answer = await call(`${front.url}/iserv/%61pi/Service/Core/Entity/User/lena.mueller?x=1`, {
        headers: { authorization: basic('integration', password) },
      });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(asked, ['/iserv/api/Service/Core/Entity/User/lena.mueller?x=1']);
    } finally {
      await close();
    }
  });

  it("reports an old server that sends the role list's headers and then stalls as not ready on /readyz", async () => {
    // Its headers made it "ok": every passed-through answer was cut off, and the replica stayed in rotation.
    const { front, close } = await frontOnFake(
      (request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('[{"_id":"ROLE_');
      },
      { '*': 'passthrough' },
    );
    try {
      const answer = await call(`${front.url}/readyz`);
      assert.equal(answer.status, 503, answer.text);
      const legacy = (answer.body as { checks: { legacy?: { ok: boolean; error?: string } } }).checks.legacy;
      assert.deepEqual(legacy, { ok: false, error: 'no answer within 2000 ms (server.readinessTimeoutMs)' });
    } finally {
      await close();
    }
  });

  it("in shadow mode, answers 504 when the old server's answer does not end within the total timeout", async () => {
    // The proxy reads a shadowed answer whole before the caller gets it: an old server trickling
    // it held the caller as long as it trickled (the total bound had become an idle one).
    const { front, close } = await frontOnFake(
      (request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"username":"slow"');
        const beat = setInterval(() => response.write(' '), 150);
        setTimeout(() => {
          clearInterval(beat);
          response.end('}');
        }, 4_000);
        response.on('close', () => clearInterval(beat));
      },
      { 'user.get': 'shadow' },
      600,
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const started = Date.now();
      const answer = await call(`${front.url}${CORE}/Entity/User/slow`, { user: 'integration', password });
      assert.equal(answer.status, 504, answer.text);
      assert.ok(Date.now() - started < 3_000, `answered after ${Date.now() - started} ms`);
    } finally {
      await close();
    }
  });

  it('answers 502 with the legacy body when the old server is down', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const downPort = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { front, password } = await frontOn(`http://127.0.0.1:${downPort}/iserv/api`);
    try {
      const answer = await call(`${front.url}${CORE}/Entity/User/thomas.becker`, {
        user: 'integration',
        password,
      });
      assert.equal(answer.status, 502, answer.text);
      assert.equal((answer.body as { code: number }).code, 502);
      assert.doesNotMatch(answer.text, /not-used|proxy-account:/);
      // The caller is told "the operator finds the details in the log": the log has the network's
      // words and the address (it had only the caller's sentence). The caller does not.
      assert.doesNotMatch(answer.text, /ECONNREFUSED|127\.0\.0\.1:\d+/);
      const failed = front.logSink.lines().find((line) => line.msg === 'request failed');
      assert.match(
        JSON.stringify(failed?.err),
        new RegExp(
          `the old server is unreachable or broke off the answer: .*ECONNREFUSED 127\\.0\\.0\\.1:${downPort}`,
        ),
      );
    } finally {
      await front.close();
    }
  });
});
