// The legacy error model over real HTTP: every error is JSON {"code","message","errors"?};
// 401/403/404/405/413/429 and malformed JSON; no stack traces; no secret in the logs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LEGACY_OPERATIONS } from '../src/legacy/operations.js';
import {
  type AuthHarness,
  basic,
  call,
  closeSharedSandbox,
  PROTECTED,
  startHarness,
} from './auth-helpers.js';
import { LogSink } from './log-sink.js';

interface ErrorBody {
  code: number;
  message: string;
  errors?: { path: string; message: string }[];
}

const LIMIT = 4096;

function assertLegacyError(
  response: { status: number; headers: Headers; body: unknown; text: string },
  status: number,
) {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const body = response.body as ErrorBody;
  assert.equal(body.code, status);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0);
  for (const key of Object.keys(body))
    assert.ok(['code', 'message', 'errors'].includes(key), `unexpected key ${key}`);
  if (body.errors !== undefined) {
    assert.ok(Array.isArray(body.errors) && body.errors.length > 0);
    for (const item of body.errors) assert.deepEqual(Object.keys(item).sort(), ['message', 'path']);
  }
  assert.doesNotMatch(response.text, /\n\s+at |node_modules|\.ts:\d+/, 'no stack trace');
  return body;
}

/** The paths the legacy operations answer on (below the first namespace), with their methods. */
function knownPaths(): Map<string, Set<string>> {
  const paths = new Map<string, Set<string>>();
  for (const operation of LEGACY_OPERATIONS) {
    const concrete = operation.path.replace(/\{[^}]+\}/g, 'some-id');
    const methods = paths.get(concrete) ?? new Set<string>();
    methods.add(operation.method.toUpperCase());
    paths.set(concrete, methods);
  }
  return paths;
}

after(closeSharedSandbox);

describe('legacy error model', () => {
  const sink = new LogSink();
  let h: AuthHarness;
  let password = '';
  let elsewhere = '';
  const auth = () => ({ user: 'errors', password });

  before(async () => {
    h = await startHarness({
      logSink: sink,
      config: { server: { bodyLimitBytes: LIMIT }, legacy: { namespaces: ['Service', 'IServ'] } },
    });
    password = await h.addUser('errors', ['127.0.0.0/8']);
    elsewhere = await h.addUser('elsewhere', ['10.0.0.0/8']);
  });
  after(() => h?.close());

  it('401 with WWW-Authenticate on a legacy operation without credentials', async () => {
    const response = await call(`${h.url}/iserv/api/Service/Core/Entity/User`);
    assertLegacyError(response, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Basic realm="idm-compat"/);
  });

  it('403 outside the ranges', async () => {
    const response = await call(`${h.url}${PROTECTED}`, { user: 'elsewhere', password: elsewhere });
    assert.match(assertLegacyError(response, 403).message, /may not call from 127\.0\.0\.1/);
  });

  it('404 for unknown paths below the base path (after authentication) and outside it', async () => {
    const below = await call(`${h.url}/iserv/api/Service/Core/Entity/Nothing`, auth());
    assert.match(assertLegacyError(below, 404).message, /No such path/);
    assertLegacyError(await call(`${h.url}/iserv/api/Other/Core/Entity/User`, auth()), 404);
    assertLegacyError(await call(`${h.url}/not-the-api`), 404);
  });

  it('405 with Allow for a known path with another method, under every namespace', async () => {
    const paths = knownPaths();
    assert.ok(paths.size > 0, 'LEGACY_OPERATIONS is empty');
    for (const namespace of ['Service', 'IServ']) {
      for (const [path, methods] of paths) {
        const wrong = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].find((m) => !methods.has(m)) ?? 'PATCH';
        const response = await call(`${h.url}/iserv/api/${namespace}${path}`, { ...auth(), method: wrong });
        assertLegacyError(response, 405);
        assert.deepEqual(new Set(response.headers.get('allow')?.split(', ')), methods, `${wrong} ${path}`);
      }
    }
  });

  it('404, not a self-contradicting 405, for a known path with a trailing slash', async () => {
    const response = await call(`${h.url}/iserv/api/Service/Core/Entity/User/`, auth());
    assert.match(assertLegacyError(response, 404).message, /No such path/);
  });

  it('400, not 500, for form data that cannot be parsed', async () => {
    const response = await call(`${h.url}/iserv/api/Service/Sso/authenticate`, {
      ...auth(),
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=----nope' },
      body: '------broken\r\nContent-Disposition: form-data; name="username"\r\n\r\nx',
    });
    const body = assertLegacyError(response, 400);
    assert.match(body.message, /Malformed form data/);
  });

  it('405 on the docs for methods other than GET/HEAD', async () => {
    const response = await call(`${h.url}${PROTECTED}`, { ...auth(), method: 'POST', body: '{}' });
    assertLegacyError(response, 405);
    assert.equal(response.headers.get('allow'), 'GET, HEAD');
  });

  it('400 with errors for malformed JSON', async () => {
    const create = LEGACY_OPERATIONS.find((op) => op.body?.kind === 'json' && !op.path.includes('{'));
    assert.ok(create, 'a legacy operation with a JSON body');
    const response = await call(`${h.url}/iserv/api/Service${create.path}`, {
      ...auth(),
      method: create.method.toUpperCase(),
      headers: { 'content-type': 'application/json' },
      body: '{"username": ',
    });
    const body = assertLegacyError(response, 400);
    assert.match(body.message, /Malformed JSON/);
    assert.equal(body.errors?.[0]?.path, 'body');
  });

  it('413 over the body limit, by Content-Length and when streamed', async () => {
    const big = JSON.stringify({ username: 'x'.repeat(LIMIT) });
    const declared = await call(`${h.url}/iserv/api/Service/Core/Entity/User`, {
      ...auth(),
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    assert.match(assertLegacyError(declared, 413).message, new RegExp(`${LIMIT} bytes`));

    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 8; i++) controller.enqueue(encoder.encode('x'.repeat(1024)));
        controller.close();
      },
    });
    const response = await fetch(`${h.url}/iserv/api/Service/Core/Entity/User`, {
      method: 'POST',
      headers: { authorization: basic('errors', password), 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    const text = await response.text();
    assertLegacyError(
      { status: response.status, headers: response.headers, body: JSON.parse(text), text },
      413,
    );
  });

  it('checks credentials before the body limit (an anonymous large body is a 401)', async () => {
    const response = await call(`${h.url}/iserv/api/Service/Core/Entity/User`, {
      method: 'POST',
      body: 'x'.repeat(LIMIT * 2),
    });
    assertLegacyError(response, 401);
  });

  it('429 with Retry-After when throttled', async () => {
    for (let i = 0; i < 6; i++)
      await call(`${h.url}${PROTECTED}`, { user: 'elsewhere', password: `bad${i}` });
    const response = await call(`${h.url}${PROTECTED}`, { user: 'elsewhere', password: 'bad' });
    assertLegacyError(response, 429);
    assert.match(response.headers.get('retry-after') ?? '', /^\d+$/);
  });

  it('serves the operations under every namespace alias', async () => {
    for (const namespace of ['Service', 'IServ']) {
      const response = await call(`${h.url}/iserv/api/${namespace}/Core/Entity/User`, auth());
      assert.equal(response.status, 200, `${namespace}: ${response.text}`);
      assert.ok(Array.isArray(response.body));
    }
  });

  it('never writes a password or an Authorization header to the log', async () => {
    await call(`${h.url}${PROTECTED}`, auth());
    await call(`${h.url}${PROTECTED}`, { user: 'errors', password: `${password}-wrong` });
    const text = sink.text;
    assert.ok(text.includes('API-user authentication refused'), 'failures are logged');
    assert.ok(text.includes('"apiUser":"errors"'));
    for (const secret of [password, `${password}-wrong`, basic('errors', password).slice('Basic '.length)]) {
      assert.ok(!text.includes(secret), 'a secret reached the log');
    }
    for (const line of sink.lines()) {
      const headers = (line.req as { headers?: Record<string, unknown> } | undefined)?.headers;
      if (headers?.authorization !== undefined) assert.equal(headers.authorization, '[redacted]');
    }
  });
});
