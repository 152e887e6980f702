// POST /Service/Sso/authenticate over real HTTP: the real server in sandbox mode (embedded sandbox
// IDM with demo data), a real SQLite file, an API user from the store.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqliteConnection } from '../src/store/sqlite/database.js';
import { type SsoAnswer, type SsoProxy, startSsoProxy } from './sso-helpers.js';
import { tempDir } from './temp-dir.js';

interface ErrorBody {
  code: number;
  message: string;
  errors?: { path: string; message: string }[];
}

function tokenRows(
  proxy: SsoProxy,
): { token_hash: string; username: string; user_uuid: string; api_user: string }[] {
  assert.ok(existsSync(proxy.dbPath), proxy.dbPath);
  const db = openSqliteConnection(proxy.dbPath);
  try {
    return db.prepare('SELECT * FROM sso_tokens').all() as {
      token_hash: string;
      username: string;
      user_uuid: string;
      api_user: string;
    }[];
  } finally {
    db.close();
  }
}

describe('POST /Service/Sso/authenticate', () => {
  let proxy: SsoProxy;
  before(async () => {
    proxy = await startSsoProxy({ config: { sandbox: { ssoLogin: false } } });
  });
  after(() => proxy?.close());

  it('answers username, a random 256-bit base64url token and return_to on the proxy', async () => {
    const answer = await proxy.authenticate({ username: 'lena.mueller' });
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    const body = answer.body as SsoAnswer;
    assert.deepEqual(Object.keys(body), ['username', 'token', 'return_to']);
    assert.equal(body.username, 'lena.mueller');
    assert.match(body.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(body.token, 'base64url').length, 32, '256 bits, at least the 128 required');
    assert.equal(body.return_to, `${proxy.server.publicUrl}/sso/continue?token=${body.token}`);
    const again = await proxy.token('lena.mueller');
    assert.notEqual(again.token, body.token);
  });

  it('stores only a SHA-256 hash of the token, with the user, its UUID and the API user', async () => {
    const { token } = await proxy.token('thomas.becker');
    const hash = createHash('sha256').update(token).digest('hex');
    const rows = tokenRows(proxy);
    const row = rows.find((r) => r.token_hash === hash);
    assert.ok(row, 'a row keyed by the hash');
    assert.equal(row.username, 'thomas.becker');
    assert.equal(row.user_uuid, proxy.sandbox.data.userByAccount('thomas.becker')?.id);
    assert.equal(row.api_user, 'portal-app');
    assert.ok(!JSON.stringify(rows).includes(token), 'the plain token is in no row');
    for (const file of [proxy.dbPath, `${proxy.dbPath}-wal`]) {
      if (!existsSync(file)) continue;
      const bytes = readFileSync(file);
      assert.equal(bytes.indexOf(token), -1, `the plain token is not in ${file}`);
      assert.equal(bytes.indexOf(Buffer.from(token, 'base64url')), -1, `nor its raw bytes in ${file}`);
    }
  });

  it('costs one successor read (the resolution of the username answers the entity)', async () => {
    const calls = () =>
      Object.fromEntries(
        Object.entries(proxy.sandbox.counters.snapshot()).filter(([key]) => !key.includes('/token')),
      );
    proxy.sandbox.counters.reset();
    await proxy.token('noah.hartmann');
    assert.deepEqual(calls(), { 'GET /users': 1 });
    proxy.sandbox.counters.reset();
    await proxy.token('noah.hartmann');
    assert.equal(
      Object.values(calls()).reduce((sum, n) => sum + n, 0),
      1,
      JSON.stringify(calls()),
    );
  });

  it('accepts multipart/form-data as well', async () => {
    const form = new FormData();
    form.set('username', 'mia.fischer');
    const answer = await proxy.authenticate(undefined, { body: form });
    assert.equal(answer.status, 200, answer.text);
    assert.equal((answer.body as SsoAnswer).username, 'mia.fischer');
  });

  it('refuses unknown, soft-deleted and locked users with 400 and stores nothing', async () => {
    const before = tokenRows(proxy).length;
    for (const [username, message] of [
      ['nobody.here', /^Unknown user "nobody\.here"$/],
      ['ben.krause', /^User "ben\.krause" is deleted$/],
      ['leon.weber', /^User "leon\.weber" is locked$/],
    ] as const) {
      const answer = await proxy.authenticate({ username });
      assert.equal(answer.status, 400, `${username}: ${answer.text}`);
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
      const body = answer.body as ErrorBody;
      assert.equal(body.code, 400);
      assert.match(body.message, message);
      assert.equal(body.errors?.[0]?.path, 'body.username');
    }
    assert.equal(tokenRows(proxy).length, before);
  });

  it('gives no token when a plain field passes on a locked that is no boolean: 502; a deleted without its date format does not load', async () => {
    // Only `true` refused, and anything but null was "deleted": a profile whose locked passed the
    // successor's status on let every user through; one whose deleted was a boolean flag refused all.
    const profileWith = (name: string, field: string, mapped: unknown) => {
      const dir = tempDir(name);
      cpSync(path.resolve('mappings', 'iserv-idm-v1'), path.join(dir, 'iserv-idm-v1'), { recursive: true });
      const file = path.join(dir, 'iserv-idm-v1', 'fields', 'user.json');
      const table = JSON.parse(readFileSync(file, 'utf8')) as { fields: Record<string, unknown> };
      table.fields[field] = mapped;
      writeFileSync(file, JSON.stringify(table));
      return dir;
    };
    const dir = profileWith('sso-locked', 'locked', { attribute: 'status', direction: 'read' });
    const plain = await startSsoProxy({ config: { sandbox: { ssoLogin: false }, mappings: { dir } } });
    try {
      const answer = await plain.authenticate({ username: 'lena.mueller' });
      assert.equal(answer.status, 502, answer.text);
      assert.doesNotMatch(answer.text, /token/);
      assert.equal(tokenRows(plain).length, 0);
      const [line] = plain.logSink.lines().filter((entry) => entry.msg === 'request failed');
      assert.match(
        String(line?.err && (line.err as { message: string }).message),
        /has locked "\\"active\\"", which is no boolean/,
      );
    } finally {
      await plain.close();
    }
    // A plain deleted (a boolean flag, an empty default) is a legacy date without its format: the
    // profile check refuses it before any token, where SSO's own check (no string: 502) is the
    // second line.
    for (const mapped of [
      { attribute: 'locked', direction: 'read' },
      { attribute: 'deleted', direction: 'read', default: '' },
    ]) {
      await assert.rejects(
        startSsoProxy({
          config: {
            sandbox: { ssoLogin: false },
            mappings: { dir: profileWith('sso-deleted', 'deleted', mapped) },
          },
        }),
        /\$\.fields\.deleted\.format: the legacy field deleted is a date \(YYYY-MM-DD\), but no format answers/,
      );
    }
  });

  it('refuses a JSON body, a missing or empty username and unknown fields with 400', async () => {
    const json = await proxy.authenticate(undefined, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'lena.mueller' }),
    });
    assert.equal(json.status, 400);
    assert.match((json.body as ErrorBody).message, /Expected form data/);

    const missing = await proxy.authenticate({});
    assert.equal(missing.status, 400);
    assert.equal((missing.body as ErrorBody).errors?.[0]?.path, 'body.username');

    const empty = await proxy.authenticate({ username: '' });
    assert.equal(empty.status, 400);

    const none = await proxy.authenticate(undefined);
    assert.equal(none.status, 400);

    const extra = await proxy.authenticate({ username: 'lena.mueller', password: 'x' });
    assert.equal(extra.status, 400);
    assert.ok((extra.body as ErrorBody).errors?.some((e) => e.path === 'body'));
  });

  it('refuses a username with a control character before any successor call', async () => {
    // `lena\u0000mueller` was sent to the successor as a query (`user=lena%00mueller`).
    proxy.sandbox.counters.reset();
    // (A lone surrogate cannot be sent as form data: the encoder makes it U+FFFD.)
    for (const username of ['lena\u0000mueller', 'lena\nmueller', 'lena\u0085']) {
      const answer = await proxy.authenticate({ username });
      assert.equal(answer.status, 400, answer.text);
      const body = answer.body as ErrorBody;
      assert.equal(body.errors?.[0]?.path, 'body.username');
      assert.match(body.errors?.[0]?.message ?? '', /control characters/);
    }
    assert.equal(proxy.sandbox.counters.total(), 0, 'nothing asked of the successor');
  });

  it('quotes an unknown username as every input is quoted: escaped and cut after 100 characters', async () => {
    // It was echoed raw: a `"` unescaped, U+202E as it came, 250 characters whole.
    for (const [username, message] of [
      ['a"b', 'Unknown user "a\\"b"'],
      ['admin\u202e', 'Unknown user "admin\\u202e"'],
      ['x'.repeat(250), `Unknown user "${'x'.repeat(100)}"…`],
    ] as const) {
      const answer = await proxy.authenticate({ username });
      assert.equal(answer.status, 400, answer.text);
      assert.equal((answer.body as ErrorBody).message, message);
    }
  });

  it('refuses a repeated username (form or multipart) and username[] with 400, signing in no one', async () => {
    const before = tokenRows(proxy).length;
    const multipart = new FormData();
    multipart.append('username', 'thomas.becker');
    multipart.append('username', 'admin');
    const bodies: RequestInit['body'][] = [
      new URLSearchParams('username=thomas.becker&username=admin'),
      new URLSearchParams('username=admin&username=thomas.becker'),
      new URLSearchParams('username=thomas.becker&username=thomas.becker'),
      multipart,
      new URLSearchParams('username[]=admin'),
    ];
    for (const body of bodies) {
      const answer = await proxy.authenticate(undefined, { body });
      assert.equal(answer.status, 400, answer.text);
      const error = answer.body as ErrorBody;
      assert.equal(error.code, 400);
      assert.ok(
        error.errors?.some((e) => e.path.startsWith('body')),
        answer.text,
      );
      if (!(body instanceof URLSearchParams && body.has('username[]'))) {
        assert.deepEqual(error.errors, [{ path: 'body.username', message: 'must be given once' }]);
      }
    }
    assert.equal(tokenRows(proxy).length, before, 'no token was issued');
  });

  it('refuses multipart file parts with 400 like text fields: an extra one, and username as a file', async () => {
    const before = tokenRows(proxy).length;
    const extra = new FormData();
    extra.set('username', 'lena.mueller');
    extra.set('password', new Blob(['x']), 'password.txt');
    const unknown = await proxy.authenticate(undefined, { body: extra });
    assert.equal(unknown.status, 400, unknown.text);
    assert.deepEqual((unknown.body as ErrorBody).errors, [
      { path: 'body', message: 'Unrecognized key: "password"' },
    ]);

    for (const append of [
      (form: FormData) => form.append('username', new Blob(['lena.mueller']), 'username.txt'),
      (form: FormData) => {
        form.append('username', 'lena.mueller');
        form.append('username', new Blob(['admin']), 'username.txt');
      },
    ]) {
      const form = new FormData();
      append(form);
      const answer = await proxy.authenticate(undefined, { body: form });
      assert.equal(answer.status, 400, answer.text);
      const message =
        form.getAll('username').length === 1 ? 'must be a text field, not a file' : 'must be given once';
      assert.deepEqual((answer.body as ErrorBody).errors, [{ path: 'body.username', message }]);
    }
    assert.equal(tokenRows(proxy).length, before, 'no token was issued');
  });

  it('needs API-user credentials (401) and answers 405 to GET', async () => {
    const url = `${proxy.url}/iserv/api/Service/Sso/authenticate`;
    const anonymous = await fetch(url, {
      method: 'POST',
      body: new URLSearchParams({ username: 'lena.mueller' }),
    });
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Basic realm=/);
    const wrong = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('portal-app:wrong').toString('base64')}` },
      body: new URLSearchParams({ username: 'lena.mueller' }),
    });
    assert.equal(wrong.status, 401);
    const get = await fetch(url, { headers: { authorization: proxy.authorization } });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
  });

  it('never writes the token to the log, and ties issue and use by request id and token id', async () => {
    const answer = await proxy.authenticate({ username: 'paul.wagner' });
    assert.equal(answer.status, 200, answer.text);
    const { token } = answer.body as { token: string };
    const requestId = answer.headers.get('x-request-id');
    await fetch(`${proxy.url}/sso/continue?token=${token}`, { redirect: 'manual' });
    assert.ok(!proxy.logSink.text.includes(token));
    const issued = proxy.logSink
      .lines()
      .find((line) => line.msg === 'SSO token issued' && line.reqId === requestId);
    const sso = issued?.sso as { username?: string; tokenId?: string } | undefined;
    assert.equal(sso?.username, 'paul.wagner', JSON.stringify(issued));
    assert.match(sso?.tokenId ?? '', /^[0-9a-f]{12}$/);
    const used = proxy.logSink.lines().find((line) => line.msg === 'SSO token used');
    assert.equal((used?.sso as { tokenId?: string } | undefined)?.tokenId, sso?.tokenId);
  });

  it('is documented with its form body in the interactive docs', async () => {
    const response = await fetch(`${proxy.url}/iserv/api/docs/openapi.json`, {
      headers: { authorization: proxy.authorization },
    });
    const document = (await response.json()) as {
      paths: Record<string, Record<string, { operationId: string; requestBody?: { content: object } }>>;
    };
    const operation = document.paths['/Sso/authenticate']?.post;
    assert.equal(operation?.operationId, 'sso.authenticate');
    assert.deepEqual(Object.keys(operation?.requestBody?.content ?? {}), [
      'application/x-www-form-urlencoded',
      'multipart/form-data',
    ]);
  });
});

describe('POST /Service/Sso/authenticate with the successor down', () => {
  let proxy: SsoProxy;
  before(async () => {
    proxy = await startSsoProxy({ config: { sandbox: { ssoLogin: false } } });
  });
  after(() => proxy?.close());

  it('answers 503 when no successor token can be had, 502 when the API fails, and issues nothing', async () => {
    proxy.sandbox.faults.set({ tokenEndpointDown: true });
    const noToken = await proxy.authenticate({ username: 'lena.mueller' });
    assert.equal(noToken.status, 503, noToken.text);
    assert.match(noToken.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal((noToken.body as ErrorBody).code, 503);

    proxy.sandbox.faults.reset();
    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', status: 503 }] });
    const failing = await proxy.authenticate({ username: 'lena.mueller' });
    assert.equal(failing.status, 502, failing.text);
    assert.equal((failing.body as ErrorBody).code, 502);

    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', status: 0 }] });
    const dropped = await proxy.authenticate({ username: 'lena.mueller' });
    assert.equal(dropped.status, 502, dropped.text);

    assert.equal(tokenRows(proxy).length, 0);
    proxy.sandbox.faults.reset();
    assert.equal((await proxy.authenticate({ username: 'lena.mueller' })).status, 200);
  });
});
