// A successor, token endpoint or old server that repeats what it was sent (a debugging error page,
// an OAuth `error_description` quoting the token request, a refusal quoting the new password)
// hands the proxy its own secrets back: the client secret, the access token, a password. None of
// them may reach /readyz (which needs no credentials), the log, the legacy error bodies or the
// recording. The proxy runs on a loopback relay in front of the sandbox, which answers in the
// sandbox's stead as such a server would.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { readRecording } from '../src/migration/recording.js';
import { basic, call, closeSharedSandbox } from './auth-helpers.js';
import { startFront } from './migration-helpers.js';
import {
  forward,
  type LoopbackServer,
  type SeenRequest,
  sendForwarded,
  startLoopback,
} from './successor-helpers.js';
import { tempDir } from './temp-dir.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

after(closeSharedSandbox);

/** Answers a call in the sandbox's stead; returns false to pass it on. */
type Instead = (request: SeenRequest, res: import('node:http').ServerResponse) => boolean;

/** What a server that echoes its request puts in its error text: the body and the Authorization header. */
const echo = (request: SeenRequest) =>
  `received ${request.body} with ${String(request.headers.authorization)}`;

describe('secrets a successor repeats in its errors', () => {
  let proxy: UserProxy;
  let relay: LoopbackServer;
  let instead: Instead | undefined;
  let sandboxOrigin = '';
  let clientSecret = '';
  const recording = path.join(tempDir('echo'), 'traffic.ndjson');

  before(async () => {
    // The relay stands for the successor and its OAuth2 server: the discovery document names the
    // relay, so that token requests come through it too.
    relay = await startLoopback(async (request, res) => {
      if (instead?.(request, res)) return;
      const answer = await forward(sandboxOrigin, request);
      if (request.url.pathname.includes('/.well-known/'))
        answer.body = Buffer.from(answer.body.toString('utf8').replaceAll(sandboxOrigin, relay.url));
      sendForwarded(res, answer);
    });
    proxy = await startUserProxy({
      successor: (sandbox) => {
        sandboxOrigin = new URL(sandbox.url).origin;
        clientSecret = sandbox.clients.readWrite.clientSecret;
        return {
          baseUrl: sandbox.apiBaseUrl.replace(sandboxOrigin, relay.url),
          auth: {
            type: 'oauth2',
            issuer: sandbox.issuer.replace(sandboxOrigin, relay.url),
            clientId: sandbox.clients.readWrite.clientId,
            clientSecret: sandbox.clients.readWrite.clientSecret,
            // The secret in the token request's body, where an echo of the body shows it.
            authMethod: 'client_secret_post',
          },
        };
      },
      config: { migration: { recording: { path: recording } } },
    });
  });
  after(async () => {
    await proxy?.close();
    await relay?.close();
  });
  beforeEach(() => {
    instead = undefined;
    proxy.logSink.text = '';
  });

  /** The proxy's access token as the relay last saw it on an API call. */
  const accessToken = () => {
    const seen = relay.requests.filter((r) => r.url.pathname.startsWith('/iserv/idm/api/'));
    const header = String(seen.at(-1)?.headers.authorization ?? '');
    assert.match(header, /^Bearer \S{20,}/);
    return header.slice('Bearer '.length);
  };

  const readyz = async () => {
    const answer = await fetch(`${proxy.url}/readyz`);
    return { status: answer.status, text: await answer.text() };
  };

  it('an API error repeating the access token and a database URL: /readyz and the log say so without them', async () => {
    assert.equal((await proxy.call('GET', '/Entity/User/lena.mueller')).status, 200);
    const token = accessToken();
    instead = (request, res) => {
      if (!request.url.pathname.startsWith('/iserv/idm/api/')) return false;
      res.writeHead(503, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({
          title: 'Service Unavailable',
          detail: `postgres://idm:Db-Secret-50@db:5432/idm down; ${echo(request)}`,
        }),
      );
      return true;
    };
    const ready = await readyz();
    assert.equal(ready.status, 503, ready.text);
    const answer = await proxy.call('GET', '/Entity/User/lena.mueller');
    assert.equal(answer.status, 502, answer.text);
    for (const [where, text] of [
      ['/readyz', ready.text],
      ['the error body', answer.text],
      ['the log', proxy.logSink.text],
    ]) {
      assert.ok(!text.includes(token), `${where} holds the access token: ${text}`);
      assert.ok(!text.includes(token.slice(0, 40)), `${where} holds part of the access token`);
      assert.ok(!text.includes('Db-Secret-50'), `${where} holds the database password: ${text}`);
    }
    assert.match(ready.text, /postgres:\/\/idm:\[redacted\]@db/, 'the reason is still told');
    assert.match(proxy.logSink.text, /received {2}with \[redacted\]/, 'the echo is logged, redacted');
  });

  it('an API error repeating the access token without a label, or a URL password past the cut of its detail: /readyz has neither', async () => {
    assert.equal((await proxy.call('GET', '/Entity/User/lena.mueller')).status, 200);
    const token = accessToken();
    for (const detail of [
      `JWT ${token} could not be verified`,
      `${'x'.repeat(470)} postgres://idm:Db-Secret-51-abcdefghijklmnopqrstuvwxyz@db/x`,
    ]) {
      instead = (request, res) => {
        if (!request.url.pathname.startsWith('/iserv/idm/api/')) return false;
        res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': token });
        res.end(JSON.stringify({ title: 'Service Unavailable', detail }));
        return true;
      };
      const ready = await readyz();
      assert.equal(ready.status, 503, ready.text);
      assert.ok(!ready.text.includes(token.slice(0, 40)), `/readyz holds the access token: ${ready.text}`);
      assert.doesNotMatch(ready.text, /Db-Secret-51/);
      assert.doesNotMatch(proxy.logSink.text, /Db-Secret-51/);
    }
  });

  it('a redirect to a URL with credentials: /readyz names it without them', async () => {
    instead = (request, res) => {
      if (!request.url.pathname.startsWith('/iserv/idm/api/')) return false;
      res.writeHead(302, {
        location:
          'https://svc:Url-Secret-1@login.example/auth?access_token=Url-Secret-2&client_secret=Url-Secret-3',
      });
      res.end();
      return true;
    };
    const ready = await readyz();
    assert.equal(ready.status, 503, ready.text);
    assert.match(ready.text, /redirected .*login\.example/);
    assert.doesNotMatch(ready.text, /Url-Secret-/);
  });

  it('a validation error repeating the access token: the legacy 400 says what was refused, without the token', async () => {
    assert.equal((await proxy.call('GET', '/Entity/User/lena.mueller')).status, 200);
    const token = accessToken();
    instead = (request, res) => {
      if (request.method !== 'PATCH') return false;
      res.writeHead(422, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({
          title: 'Unprocessable',
          violations: [
            {
              propertyPath: 'firstname',
              message: `refused: request with Authorization: ${String(request.headers.authorization)}; client_secret=${clientSecret}`,
            },
          ],
        }),
      );
      return true;
    };
    const answer = await proxy.call('PUT', '/Entity/User/lena.mueller', { firstname: 'Lena' });
    assert.equal(answer.status, 400, answer.text);
    assert.match(answer.text, /refused: request with Authorization: \[redacted\]/);
    assert.ok(!answer.text.includes(token.slice(0, 40)), answer.text);
    assert.ok(!answer.text.includes(clientSecret), answer.text);
  });

  it('a refused new password repeated by the successor: neither the error body nor the recording holds it', async () => {
    instead = (request, res) => {
      if (request.method !== 'POST' || !request.url.pathname.endsWith('/password')) return false;
      const sent = (JSON.parse(request.body) as { password?: string }).password;
      res.writeHead(422, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({
          title: 'Unprocessable',
          violations: [{ propertyPath: 'password', message: `The value ${sent} is too weak.` }],
        }),
      );
      return true;
    };
    const answer = await proxy.call('POST', '/User/lena.mueller/password', { password: 'Weak-Pass-77' });
    assert.equal(answer.status, 400, answer.text);
    assert.match(answer.text, /The value \[redacted\] is too weak/);
    assert.doesNotMatch(answer.text, /Weak-Pass-77/);
    await proxy.services.migration.recording?.flush();
    const { exchanges } = await readRecording(recording);
    const line = exchanges.find((e) => e.operation === 'user.password.set');
    assert.ok(line, 'the password set is recorded');
    assert.equal(line.requestBody, '[redacted]');
    assert.doesNotMatch(JSON.stringify(line), /Weak-Pass-77/);
  });

  it('a new password the successor repeats in a failure (5xx) stays out of the log line of that request', async () => {
    instead = (request, res) => {
      if (request.method !== 'POST' || !request.url.pathname.endsWith('/password')) return false;
      const sent = (JSON.parse(request.body) as { password?: string }).password;
      res.writeHead(500, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Internal Server Error', detail: `could not hash ${sent}` }));
      return true;
    };
    const answer = await proxy.call('POST', '/User/lena.mueller/password', { password: 'Weak-Pass-99' });
    assert.equal(answer.status, 502, answer.text);
    assert.match(proxy.logSink.text, /could not hash \[redacted\]/, 'the failure is logged');
    assert.doesNotMatch(proxy.logSink.text, /Weak-Pass-99/);
    assert.doesNotMatch(answer.text, /Weak-Pass-99/);
  });

  // Last: it leaves the proxy without a token it could renew.
  it('a token endpoint repeating the token request: /readyz and the log name the refusal without the client secret', async () => {
    instead = (request, res) => {
      if (request.method !== 'POST' || request.url.pathname.startsWith('/iserv/idm/api/')) return false;
      const form = new URLSearchParams(request.body);
      const pair = `${form.get('client_id')}:${form.get('client_secret')}`;
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: 'invalid_client',
          // Labelled, and not: the secret alone, the pair, the pair in base64.
          error_description: `client authentication failed: ${echo(request)}; presented secret '${form.get('client_secret')}', pair ${pair}, credentials ${Buffer.from(pair).toString('base64')} not accepted`,
        }),
      );
      return true;
    };
    // A fresh token is needed: the cached one is dropped when the API refuses it.
    const refuseApi: Instead = (request, res) => {
      if (!request.url.pathname.startsWith('/iserv/idm/api/')) return false;
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' });
      res.end();
      return true;
    };
    const tokenEcho = instead;
    instead = (request, res) => refuseApi(request, res) || tokenEcho(request, res);
    const ready = await readyz();
    assert.equal(ready.status, 503, ready.text);
    const answer = await proxy.call('GET', '/Entity/User/lena.mueller');
    assert.ok(answer.status >= 500, answer.text);
    assert.ok(
      relay.requests.some((r) => r.method === 'POST' && r.body.includes(`client_secret=${clientSecret}`)),
      'the token request carried the secret in its body',
    );
    const pairBase64 = Buffer.from(
      `${proxy.services.config.successor.auth.type === 'oauth2' ? proxy.services.config.successor.auth.clientId : ''}:${clientSecret}`,
    ).toString('base64');
    for (const [where, text] of [
      ['/readyz', ready.text],
      ['the error body', answer.text],
      ['the log', proxy.logSink.text],
    ]) {
      assert.ok(!text.includes(clientSecret), `${where} holds the client secret: ${text}`);
      assert.ok(!text.includes(pairBase64), `${where} holds the client's credentials in base64: ${text}`);
    }
    // The proxy's own words around the quote stay whole.
    assert.doesNotMatch(proxy.logSink.text, /clientSecret: \[redacted\]|credentials: \[redacted\]/);
    assert.match(ready.text, /invalid_client/, 'the refusal is still named');
    assert.match(proxy.logSink.text, /client_secret=\[redacted\]/);
  });
});

/**
 * A proxy passing every operation through to `old` (listening here, signed in to as
 * `proxy-account` / `Old-Pass-9`), recording into a file of its own; `close` stops both.
 */
async function passthroughFront(old: Server, label: string) {
  await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
  const recording = path.join(tempDir(label), 'traffic.ndjson');
  const legacy = {
    baseUrl: `http://127.0.0.1:${(old.address() as AddressInfo).port}/iserv/api`,
    username: 'proxy-account',
    password: 'Old-Pass-9',
  };
  const front = await startFront(legacy, {
    modes: { '*': 'passthrough' },
    legacy,
    recording: { path: recording },
  });
  return {
    front,
    recording,
    async close() {
      await front.close();
      old.closeAllConnections();
      await new Promise<void>((resolve) => old.close(() => resolve()));
    },
  };
}

describe('secrets an old server repeats in passthrough', () => {
  it('a refused new password sent as a form, multipart or in Latin-1, and the Basic credentials repeated with their scheme, are left out of the recording', async () => {
    // The old server (PHP) reads a form as well as JSON, in the charset the request declares.
    const old = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', async () => {
        const type = String(req.headers['content-type']);
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString(type.includes('iso-8859-1') ? 'latin1' : 'utf8');
        const part = type.startsWith('multipart/')
          ? (await new Response(bytes, { headers: { 'content-type': type } }).formData()).get('password')
          : undefined;
        const sent = type.startsWith('multipart/')
          ? typeof part === 'string'
            ? part
            : await part?.text()
          : type.includes('form')
            ? new URLSearchParams(text).get('password')
            : (JSON.parse(text) as { password?: string }).password;
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            message: `The value ${sent} is too weak`,
            errors: [{ path: 'password', message: String(sent) }],
            detail: `auth was ${String(req.headers.authorization)}`,
          }),
        );
      });
    });
    const { front, recording, close } = await passthroughFront(old, 'echo-old-form');
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const form = new FormData();
      form.set('password', 'Winterzeit-2026m');
      // curl -F password=@file: a file part, its line break sent with it.
      const filed = new FormData();
      filed.set('password', new Blob(['Dateipasswort-2026f\n']), 'pw.txt');
      const filedPart = new Response(filed);
      // As curl -F sends it: multipart, its boundary in the type.
      const multipart = new Response(form);
      const sends: [string | undefined, string | Buffer][] = [
        // curl -d's default: a form, the password a field of it.
        ['application/x-www-form-urlencoded', 'password=Fruehling-2026x'],
        [
          'application/json; charset=iso-8859-1',
          Buffer.from('{"password":"Sch\u00f6nesWetter-2026"}', 'latin1'),
        ],
        [multipart.headers.get('content-type') ?? undefined, Buffer.from(await multipart.arrayBuffer())],
        [filedPart.headers.get('content-type') ?? undefined, Buffer.from(await filedPart.arrayBuffer())],
      ];
      for (const [type, body] of sends) {
        const answer = await call(`${front.url}/iserv/api/Service/Core/User/lena.mueller/password`, {
          method: 'POST',
          headers: {
            authorization: basic('integration', password),
            ...(type ? { 'content-type': type } : {}),
          },
          body,
        });
        assert.equal(answer.status, 400, answer.text);
      }
      await front.services.migration.recording?.flush();
      const { exchanges } = await readRecording(recording);
      const lines = exchanges.filter((e) => e.operation === 'user.password.set');
      assert.equal(lines.length, 4);
      for (const line of lines)
        assert.deepEqual(line.responseBody, {
          message: 'The value [redacted] is too weak',
          errors: [{ path: 'password', message: '[redacted]' }],
          detail: 'auth was [redacted]',
        });
      assert.doesNotMatch(JSON.stringify(lines), /Fruehling|nesWetter|Winterzeit|Dateipasswort|Old-Pass-9/);
    } finally {
      await close();
    }
  });

  it("a refused new password and the proxy's own credentials repeated by the old server are left out of the recording", async () => {
    const old = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const sent = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { password?: string }).password;
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            code: 400,
            message: `Password ${sent} is too weak`,
            errors: [
              {
                path: 'body',
                message: `caller ${String(req.headers.authorization).slice('Basic '.length)} = proxy-account:Old-Pass-9`,
              },
            ],
          }),
        );
      });
    });
    const { front, recording, close } = await passthroughFront(old, 'echo-old');
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const answer = await call(`${front.url}/iserv/api/Service/Core/User/lena.mueller/password`, {
        method: 'POST',
        headers: { authorization: basic('integration', password), 'content-type': 'application/json' },
        body: JSON.stringify({ password: 'Weak-Pass-88' }),
      });
      // The old server's answer, passed through as it is: the caller sent that password itself.
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.text, /Password Weak-Pass-88 is too weak/);
      await front.services.migration.recording?.flush();
      const { exchanges } = await readRecording(recording);
      const line = exchanges.find((e) => e.operation === 'user.password.set');
      assert.ok(line, 'the password set is recorded');
      assert.deepEqual(line.responseBody, {
        code: 400,
        message: 'Password [redacted] is too weak',
        errors: [{ path: 'body', message: 'caller [redacted] = [redacted]' }],
      });
      assert.doesNotMatch(JSON.stringify(line), /Weak-Pass-88|Old-Pass-9/);
    } finally {
      await close();
    }
  });
});
