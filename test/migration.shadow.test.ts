// Shadow mode, recording, replay/compare, the dashboard and cutover (SPEC 8), with real processes'
// parts on loopback: the old server is a second idm-compat on its own sandbox whose data differs
// on purpose (one changed first name, one extra user); the proxy under test shadows it against the
// file's shared sandbox. Shadow must find exactly those differences and nothing else.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { brotliCompressSync, deflateRawSync, gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { MAX_BODY_DEPTH } from '../src/migration/recording.js';
import { reloadOnSignal } from '../src/reload.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import {
  type AuthHarness,
  basic,
  call,
  closeSharedSandbox,
  sharedSandbox,
  startHarness,
} from './auth-helpers.js';
import { launchBrowser } from './browser.js';
import { runCliCaptured } from './cli-helpers.js';
import { makeFifo, readFifo } from './fifo.js';
import { type OldServer, shadowRunnerOn, startFront, startOldServer } from './migration-helpers.js';
import { type LoopbackServer, startLoopback } from './successor-helpers.js';
import { tempDir } from './temp-dir.js';

after(closeSharedSandbox);

const CORE = '/iserv/api/Service/Core';

const cli = runCliCaptured;

/** A line of a recording, as these tests read it back. */
interface RecordedLine {
  requestId: string;
  responseBody: unknown;
  responseBodyOmitted?: string;
}

/** The lines of `front`'s recording in `file` once there are `count` (flushed every 20 ms, for 2 s at most). */
async function recordedLines(front: AuthHarness, file: string, count: number): Promise<RecordedLine[]> {
  const recording = front.services.migration.recording;
  assert.ok(recording);
  let lines: RecordedLine[] = [];
  for (let i = 0; i < 100 && lines.length < count; i++) {
    await sleep(20);
    await recording.flush();
    lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as RecordedLine);
  }
  return lines;
}

/** `idm-compat replay FILE --target URL` as `account`, its password from the environment, into `out`; `extra` options after. */
function replay(
  file: string,
  target: string,
  account: { user: string; password: string },
  out: string,
  ...extra: string[]
) {
  return cli(
    [
      'replay',
      file,
      '--target',
      target,
      '--user',
      account.user,
      '--password-env',
      'REPLAY_PASSWORD',
      '--out',
      out,
      ...extra,
    ],
    { REPLAY_PASSWORD: account.password },
  );
}

interface ShadowJson {
  operations: {
    operation: string;
    pairs: number;
    matched: number;
    mismatched: number;
    errors: number;
    skipped: number;
    paths: { path: string; count: number }[];
  }[];
}

describe('shadow mode against an old server whose data differs on purpose', () => {
  let old: OldServer;
  let front: AuthHarness;
  let password: string;
  let recording: string;

  before(async () => {
    old = await startOldServer();
    // The planted differences, made through the old server's own legacy API.
    const asOld = { user: old.username, password: old.password };
    const renamed = await call(`${old.baseUrl}/Service/Core/Entity/User/thomas.becker`, {
      ...asOld,
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ firstname: 'Tom' }),
    });
    assert.equal(renamed.status, 200, renamed.text);
    const extra = await call(`${old.baseUrl}/Service/Core/Entity/User`, {
      ...asOld,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'only.old', firstname: 'Only', lastname: 'Old' }),
    });
    assert.equal(extra.status, 201, extra.text);
    recording = path.join(tempDir('rec'), 'traffic.ndjson');
    front = await startFront(
      old,
      {
        modes: { 'user.*': 'shadow', 'group.list': 'shadow', 'sso.*': 'translate' },
        shadow: { timeoutMs: 4_000 },
        recording: { path: recording },
        dashboard: { username: 'ops', password: 'dash-secret' },
      },
      { config: { usage: { flushIntervalSeconds: 300 } } },
    );
    password = await front.addUser('integration', ['127.0.0.0/8']);
  });
  after(async () => {
    await front?.close();
    await old?.close();
  });

  const viaFront = (
    p: string,
    init: { method?: string; body?: string; headers?: Record<string, string> } = {},
  ) => call(`${front.url}${CORE}${p}`, { user: 'integration', password, ...init });
  const shadow = () => {
    const runner = front.services.migration.shadow;
    assert.ok(runner);
    return runner;
  };
  async function report(): Promise<Map<string, ShadowJson['operations'][number]>> {
    await shadow().settle();
    await shadow().flush();
    const run = await cli(['shadow', 'report', '--json', '--config', front.configFile]);
    assert.equal(run.code, 0, run.stderr);
    return new Map((JSON.parse(run.stdout) as ShadowJson).operations.map((op) => [op.operation, op]));
  }

  it('answers exactly what the old server answers', async () => {
    for (const p of [
      '/Entity/User',
      '/Entity/User/thomas.becker',
      '/Entity/User/only.old',
      '/Entity/Group',
    ]) {
      const [proxied, original] = [
        await viaFront(p),
        await call(`${old.baseUrl}/Service/Core${p}`, { user: old.username, password: old.password }),
      ];
      assert.equal(proxied.status, original.status, p);
      assert.equal(proxied.text, original.text, p);
      if (p.endsWith('thomas.becker')) assert.equal((proxied.body as { firstname: string }).firstname, 'Tom');
    }
  });

  it('finds the planted differences and nothing else under the default rules', async () => {
    await viaFront('/Entity/User/lena.mueller');
    const ops = await report();
    assert.deepEqual(
      { ...ops.get('user.get'), samples: undefined },
      {
        operation: 'user.get',
        pairs: 3,
        matched: 1,
        mismatched: 2,
        rate: 1 / 3,
        onlyA: 0,
        onlyB: 0,
        errors: 0,
        skipped: 0,
        paths: [
          { path: '$.firstname', count: 1 },
          { path: 'status', count: 1 },
        ],
        samples: undefined,
      },
    );
    const list = ops.get('user.list');
    assert.equal(list?.pairs, 1);
    assert.equal(list?.mismatched, 1);
    assert.deepEqual(
      list?.paths.map((p) => p.path).sort(),
      ['$[*]', '$[*].firstname'],
      'the list differs only where the extra user and the changed first name are',
    );
    const groups = ops.get('group.list');
    assert.deepEqual([groups?.pairs, groups?.matched], [1, 1], 'identical groups match');
  });

  it('does not shadow writes unless enabled: the write lands on the old server only, counted as skipped', async () => {
    const successor = await sharedSandbox();
    const created = await viaFront('/Entity/User', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'shadow.write', firstname: 'Shadow', lastname: 'Write' }),
    });
    assert.equal(created.status, 201, created.text);
    assert.ok(old.sandbox.data.userByAccount('shadow.write'));
    assert.equal(successor.data.userByAccount('shadow.write'), undefined);
    assert.equal((await report()).get('user.create')?.skipped, 1);
  });

  it('answers before the slowed translation finishes, and skips (counts) comparisons beyond the bound under a flood', async () => {
    const successor = await sharedSandbox();
    successor.faults.set({ latencyMs: 1_500 });
    try {
      const before = (await report()).get('user.get')?.skipped ?? 0;
      const first = await viaFront('/Entity/User/lena.mueller');
      assert.equal(first.status, 200);
      assert.equal(shadow().running, 1, 'the caller has its answer while its translation still runs');
      // maxConcurrent is 8: with 8 running, every further shadowed read is skipped, not queued.
      await Promise.all(Array.from({ length: 7 }, () => viaFront('/Entity/User/lena.mueller')));
      assert.equal(shadow().running, 8);
      const flood = await Promise.all(
        Array.from({ length: 20 }, () => viaFront('/Entity/User/lena.mueller')),
      );
      assert.ok(flood.every((answer) => answer.status === 200));
      assert.equal(shadow().running, 8, 'never more than the bound');
      const after = (await report()).get('user.get');
      assert.equal((after?.skipped ?? 0) - before, 20);
    } finally {
      successor.faults.reset();
    }
  });

  it('records every request with its answer, redacted: no password, temporary password, SSO token or credentials', async () => {
    const secret = 'N3w-Passw0rd-Secret!';
    const set = await viaFront('/User/lena.mueller/password', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: secret }),
    });
    assert.equal(set.status, 204, set.text);
    // Password bodies of the wrong shape: redaction by key name would miss them, and the JSON
    // parser's own message quotes the body. Each is refused, its secret in no answer.
    const misshapen = [
      ['Misspelt-Key-Secret', (s: string) => JSON.stringify({ pass: s })],
      ['Bare-Array-Secret', (s: string) => JSON.stringify([s])],
      ['Unquoted-Value-Secret', (s: string) => `{"password":${s}}`],
      ['Plain-Text-Secret', (s: string) => s],
    ] as const;
    for (const [leak, body] of misshapen) {
      const refused = await viaFront('/User/lena.mueller/password', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(leak),
      });
      assert.equal(refused.status, 400, refused.text);
      assert.ok(!refused.text.includes(leak.slice(0, 8)), `the answer quotes the body: ${refused.text}`);
    }
    const reset = await viaFront('/User/lena.mueller/password/reset', { method: 'POST' });
    assert.equal(reset.status, 200, reset.text);
    const temporary = (reset.body as { password: string }).password;
    const sso = await call(`${front.url}/iserv/api/Service/Sso/authenticate`, {
      user: 'integration',
      password,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'username=lena.mueller',
    });
    assert.equal(sso.status, 200, sso.text);
    const token = (sso.body as { token: string }).token;
    await front.services.migration.recording?.flush();
    const text = readFileSync(recording, 'utf8');
    for (const leaked of [
      secret,
      ...misshapen.map(([leak]) => leak.slice(0, 8)),
      temporary,
      token,
      password,
      basic('integration', password).slice(6),
      old.password,
    ])
      assert.ok(!text.includes(leaked), 'a secret reached the recording');
    const lines = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const byOperation = new Map(lines.map((line) => [line.operation, line]));
    // A password body is recorded as a whole [redacted], whatever its shape.
    assert.ok(lines.filter((line) => line.operation === 'user.password.set').length >= 5);
    for (const line of lines.filter((line) => line.operation === 'user.password.set'))
      assert.equal(line.requestBody, '[redacted]', JSON.stringify(line));
    assert.deepEqual(byOperation.get('user.password.reset')?.responseBody, { password: '[redacted]' });
    assert.equal(byOperation.get('user.get')?.mode, 'shadow');
    assert.equal(byOperation.get('sso.authenticate')?.mode, 'translate');
    assert.ok(lines.every((line) => line.apiUser === 'integration'));
  });

  it('records a translated HEAD as the caller got it, without a body: its replay matches (100 %)', async () => {
    // It was recorded with the GET's body, and its replay (no body) was a mismatch at `$`.
    for (const p of ['/Entity/Role/ROLE_ADMIN', '/Entity/Role']) {
      const head = await viaFront(p, { method: 'HEAD' });
      assert.equal(head.status, 200, p);
      assert.equal(head.text, '');
    }
    await front.services.migration.recording?.flush();
    const heads = readFileSync(recording, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.method === 'HEAD');
    assert.deepEqual(
      heads.map((line) => [line.operation, line.mode, line.status, line.responseBody]),
      [
        ['role.get', 'translate', 200, null],
        ['role.list', 'translate', 200, null],
      ],
    );
    const dir = tempDir('head-replay');
    const recorded = path.join(dir, 'heads.ndjson');
    writeFileSync(recorded, `${heads.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const out = path.join(dir, 'replayed.ndjson');
    const replayed = await replay(recorded, `${front.url}/iserv/api`, { user: 'integration', password }, out);
    assert.equal(replayed.code, 0, replayed.stderr);
    const compared = await cli(['compare', recorded, out, '--json']);
    assert.equal(compared.code, 0, compared.stdout);
    const totals = (JSON.parse(compared.stdout) as { totals: { pairs: number; rate: number } }).totals;
    assert.deepEqual(totals, { ...totals, pairs: 2, rate: 1 });
  });

  it('replays the recorded reads against the old server (100 %) and the translation (the planted differences)', async () => {
    const dir = path.dirname(recording);
    const againstOld = path.join(dir, 'old.ndjson');
    const replayed = await replay(
      recording,
      old.baseUrl,
      { user: old.username, password: old.password },
      againstOld,
      '--operations',
      'user.get',
      '--json',
    );
    assert.equal(replayed.code, 0, replayed.stderr);
    const same = await cli(['compare', recording, againstOld, '--json']);
    const sameReport = JSON.parse(same.stdout) as { totals: { pairs: number; rate: number } };
    assert.ok(sameReport.totals.pairs > 0);
    assert.equal(sameReport.totals.rate, 1, same.stdout);

    // The translation side: the same proxy with every operation translated (a second harness on the successor).
    const translated = await startFront(old, {}, {});
    try {
      const user = 'replayer';
      const pw = await translated.addUser(user, ['127.0.0.0/8']);
      const out = path.join(dir, 'translated.ndjson');
      const run = await replay(
        recording,
        `${translated.url}/iserv/api`,
        { user, password: pw },
        out,
        '--operations',
        'user.get',
        '--json',
      );
      assert.equal(run.code, 0, run.stderr);
      const compared = await cli(['compare', recording, out, '--json']);
      const ops = (JSON.parse(compared.stdout) as ShadowJson).operations.filter((op) => op.pairs > 0);
      assert.deepEqual(
        ops.map((op) => [op.operation, op.paths.map((p) => p.path).sort()]),
        [['user.get', ['$.firstname', 'status'].sort()]],
      );
    } finally {
      await translated.close();
    }
  });

  describe('the migration dashboard', () => {
    let browser: Browser;
    before(async () => {
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
    });

    it('refuses wrong or missing credentials', async () => {
      assert.equal((await call(`${front.url}/_migration/`)).status, 401);
      assert.equal(
        (await call(`${front.url}/_migration/api/status`, { user: 'ops', password: 'wrong' })).status,
        401,
      );
      const status = await call(`${front.url}/_migration/api/status`, {
        user: 'ops',
        password: 'dash-secret',
      });
      assert.equal(status.status, 200);
      // Usage figures and sample differences, as on the page: no cache keeps them, no sniffing.
      assert.equal(status.headers.get('cache-control'), 'no-store');
      assert.equal(status.headers.get('x-content-type-options'), 'nosniff');
      const body = status.body as {
        operations: { operation: string; mode: string; usage: { apiUser: string }[] }[];
      };
      assert.equal(body.operations.length, 41);
      assert.equal(body.operations.find((op) => op.operation === 'user.get')?.mode, 'shadow');
      assert.equal(body.operations.find((op) => op.operation === 'role.list')?.mode, 'translate');
    });

    it('loads in headless Chromium with its table, modes, usage and shadow figures, without script or network', async () => {
      await front.services.usage.flush();
      const context = await browser.newContext({
        httpCredentials: { username: 'ops', password: 'dash-secret' },
        javaScriptEnabled: false,
      });
      const requested: string[] = [];
      context.on('request', (request) => requested.push(request.url()));
      try {
        const page = await context.newPage();
        const response = await page.goto(`${front.url}/_migration/`);
        assert.equal(response?.status(), 200);
        assert.equal(await page.locator('#operations tbody tr').count(), 41);
        const row = page.locator('tr[data-operation="user.get"]');
        assert.match((await row.innerText()) ?? '', /shadow/);
        assert.match(await row.innerText(), /integration: \d+ in 24 h/);
        assert.match(await row.innerText(), /\$\.firstname/);
        assert.deepEqual(requested, [`${front.url}/_migration/`], 'no other request: no CDN, no script');
      } finally {
        await context.close();
      }
    });
  });

  it('cuts over on SIGHUP: user.get from shadow to translate, without dropping a request', async () => {
    const configFile = front.configFile;
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    config.migration.modes['user.get'] = 'translate';
    // A key a reload does not apply, changed too: the operator is told it takes a restart.
    config.logging = { ...config.logging, level: 'warn' };
    writeFileSync(configFile, JSON.stringify(config));
    const stop = reloadOnSignal(front.services, {
      file: configFile,
      env: {},
      logger: front.services.logger,
      tlsAtStart: undefined,
    });
    try {
      let running = true;
      const statuses: number[] = [];
      const load = (async () => {
        while (running) statuses.push((await viaFront('/Entity/User/thomas.becker')).status);
      })();
      await sleep(100);
      process.kill(process.pid, 'SIGHUP');
      for (
        let i = 0;
        i < 100 && front.services.migration.modes.current().modeOf('user.get') !== 'translate';
        i++
      )
        await sleep(20);
      await sleep(100);
      running = false;
      await load;
      assert.equal(front.services.migration.modes.current().modeOf('user.get'), 'translate');
      assert.ok(statuses.length > 2);
      assert.ok(
        statuses.every((status) => status === 200),
        `every request answered: ${statuses.join(',')}`,
      );
      const notApplied = front.logSink
        .lines()
        .filter(
          (line) =>
            typeof line.msg === 'string' && line.msg.startsWith('configuration changed where a reload'),
        )
        .map((line) => line.notApplied as string[]);
      assert.equal(notApplied.length, 1);
      // (The harness starts its server on 127.0.0.1, which its file does not say.)
      assert.deepEqual(
        notApplied[0]?.filter((key) => key !== 'server.host'),
        ['logging.level'],
        'the changed key, not migration.modes, which the reload applied',
      );
      // Translated now: the successor's first name, not the old server's.
      assert.equal(
        ((await viaFront('/Entity/User/thomas.becker')).body as { firstname: string }).firstname,
        'Thomas',
      );
    } finally {
      stop();
    }
  });

  it("counts a translated call's successor calls in its log line", async () => {
    // user.get is translated since the cut-over above. (A shadowed call's background translation
    // is not counted to its caller: it gets no counter, and it ends after the caller's line.)
    const translated = await viaFront('/Entity/User/thomas.becker', {
      headers: { 'x-request-id': 'translate-line-1' },
    });
    assert.equal(translated.status, 200);
    const completed = front.logSink
      .lines()
      .filter((l) => l.reqId === 'translate-line-1' && l.msg === 'request completed');
    assert.deepEqual(
      completed.map((l) => l.successorCalls),
      [1],
    );
  });
});

describe("shadowed password writes: the mismatch samples keep no password, whatever the body's shape", () => {
  // The old server answers 204 to everything, so a body the translation refuses (400) is a
  // mismatch whose sample keeps the request body: by key name alone, `pass` and a bare array
  // would keep the password.
  let old: LoopbackServer;
  let front: AuthHarness;
  let password: string;

  before(async () => {
    old = await startLoopback((request, res) => {
      // A refusal that repeats the new password and the proxy's own account, as a debugging old
      // server might; anything else it takes.
      const sent = request.body.includes('Echo-')
        ? (JSON.parse(request.body) as { password: string }).password
        : '';
      if (sent === '') return void res.writeHead(204).end();
      const account = Buffer.from(
        String(request.headers.authorization).replace(/^Basic /, ''),
        'base64',
      ).toString();
      res.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          code: 400,
          message: 'Invalid request body',
          // The refused value and who asked, where compare looks (it ignores the messages).
          errors: [
            { path: 'body.password', message: 'too weak', refused: `${sent} (checked for ${account})` },
          ],
        }),
      );
    });
    front = await startFront(
      { baseUrl: `${old.url}/iserv/api`, username: 'proxy-account', password: 'old-secret' },
      { modes: { 'user.password.set': 'shadow' }, shadow: { writes: true, timeoutMs: 4_000 } },
    );
    password = await front.addUser('integration', ['127.0.0.0/8']);
  });
  after(async () => {
    await front?.close();
    await old?.close();
  });

  it('stores and shows the body of user.password.set as a whole [redacted]', async () => {
    const bodies = [
      ['Misspelt-Key-Secret', (s: string) => JSON.stringify({ pass: s })],
      ['Bare-Array-Secret', (s: string) => JSON.stringify([s])],
    ] as const;
    for (const [secret, body] of bodies) {
      const answer = await call(`${front.url}${CORE}/User/lena.mueller/password`, {
        user: 'integration',
        password,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(secret),
      });
      assert.equal(answer.status, 204, 'the caller gets the old server answer');
    }
    const runner = front.services.migration.shadow;
    assert.ok(runner);
    await runner.settle();
    await runner.flush();
    const samples = await front.services.store.shadow.samples({ operation: 'user.password.set', limit: 10 });
    assert.equal(samples.length, bodies.length, JSON.stringify(samples));
    for (const sample of samples) {
      assert.equal(sample.outcome, 'mismatch');
      assert.equal((sample.detail as { requestBody?: unknown }).requestBody, '[redacted]');
    }
    const dashboard = await call(`${front.url}/_migration/api/status`);
    assert.equal(dashboard.status, 200);
    for (const text of [JSON.stringify(samples), dashboard.text]) {
      for (const [secret] of bodies) assert.ok(!text.includes(secret), `${secret} was kept: ${text}`);
    }
  });

  it("keeps neither the new password nor the proxy's own account out of an old server's refusal that repeats them", async () => {
    const answer = await call(`${front.url}${CORE}/User/lena.mueller/password`, {
      user: 'integration',
      password,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // Seven characters: the translation is refused too (the sandbox wants eight), so the two
      // refusals' bodies are compared and the sample quotes them.
      body: JSON.stringify({ password: 'Echo-7!' }),
    });
    assert.equal(answer.status, 400, 'the caller gets the old server answer, as it is');
    assert.match(answer.text, /Echo-7!/);
    const runner = front.services.migration.shadow;
    assert.ok(runner);
    await runner.settle();
    await runner.flush();
    const samples = await front.services.store.shadow.samples({ operation: 'user.password.set', limit: 10 });
    const text = JSON.stringify(samples);
    assert.match(text, /"a":"\[redacted\] \(checked for \[redacted\]\)"/, text);
    for (const secret of ['Echo-7!', 'old-secret'])
      assert.ok(!text.includes(secret), `${secret} was kept: ${text}`);
  });
});

describe('shadow outcomes of answers too deep to compare', () => {
  it(`counts an answer nested deeper than ${MAX_BODY_DEPTH} levels as an error, not as nothing`, async () => {
    const store = openSqliteStore(path.join(tempDir('shadow'), 'store.db'));
    try {
      const { runner } = shadowRunnerOn(store);
      // As JSON.parse gives an old server's answer of 100,000 nested arrays: the recursive
      // comparison overflowed the stack, and the outcome went missing from the counts.
      const nested = (depth: number) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`) as unknown;
      const get = (requestId: string, legacy: unknown) =>
        runner.submit({
          operation: 'user.get',
          apiUser: 'integration',
          requestId,
          method: 'GET',
          path: '/Service/Core/Entity/User/ada.l',
          query: '',
          requestBody: null,
          write: false,
          legacy: { status: 200, body: legacy },
          translate: async () => ({ status: 200, body: [] }),
        });
      get('deep', nested(100_000));
      get('deeper', nested(MAX_BODY_DEPTH + 1));
      get('limit', nested(MAX_BODY_DEPTH));
      await runner.close();
      assert.deepEqual((await store.shadow.counts()).map((c) => [c.operation, c.outcome, c.count]).sort(), [
        ['user.get', 'error', 2],
        ['user.get', 'mismatch', 1],
      ]);
      const errors = (await store.shadow.samples({ limit: 10 })).filter((s) => s.outcome === 'error');
      assert.deepEqual(errors.map((s) => s.requestId).sort(), ['deep', 'deeper']);
      for (const sample of errors) {
        assert.match(
          (sample.detail as { error: string }).error,
          new RegExp(`nested deeper than ${MAX_BODY_DEPTH} levels`),
        );
      }
    } finally {
      await store.close();
    }
  });
});

describe('shadow mode with an answer too large to compare', () => {
  it('gives the caller the whole answer, streamed as in passthrough, and counts the comparison as skipped', async () => {
    // A large school's list, just over the 32 MiB the proxy reads whole to compare.
    const item = JSON.stringify({ _id: 'x', username: 'x', firstname: 'y'.repeat(400) });
    const count = Math.ceil((33 * 1024 * 1024) / (item.length + 1));
    const big = Buffer.from(`[${Array(count).fill(item).join(',')}]`);
    const old = await startLoopback((_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': big.length }).end(big);
    });
    const front = await startFront(
      { baseUrl: `${old.url}/iserv/api`, username: 'proxy-account', password: 'old-secret' },
      { modes: { 'user.list': 'shadow' } },
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const answer = await fetch(`${front.url}${CORE}/Entity/User`, {
        headers: { authorization: basic('integration', password) },
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('content-type'), 'application/json');
      const body = Buffer.from(await answer.arrayBuffer());
      assert.equal(body.length, big.length);
      assert.ok(body.equals(big), 'the caller gets the old server answer byte for byte');
      const runner = front.services.migration.shadow;
      assert.ok(runner);
      await runner.settle();
      await runner.flush();
      assert.deepEqual(await front.services.store.shadow.counts(), [
        { operation: 'user.list', outcome: 'skipped', count: 1 },
      ]);
    } finally {
      await front.close();
      await old.close();
    }
  });
});

describe('a recorded answer too large to keep', () => {
  it('is recorded as null marked too-large, and compare counts it as not compared, not as a match', async () => {
    // Over the 8 MiB a recording keeps; an answer without a body (204) is null unmarked.
    const big = Buffer.from(JSON.stringify([{ _id: 'x', firstname: 'y'.repeat(9 * 1024 * 1024) }]));
    const old = await startLoopback((request, res) => {
      if (request.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': big.length }).end(big);
      } else res.writeHead(204).end();
    });
    const file = path.join(tempDir('rec-large'), 'traffic.ndjson');
    const front = await startFront(
      { baseUrl: `${old.url}/iserv/api`, username: 'proxy-account', password: 'old-secret' },
      { modes: { '*': 'passthrough' }, recording: { path: file } },
    );
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const list = await fetch(`${front.url}${CORE}/Entity/User`, {
        headers: { authorization: basic('integration', password), 'x-request-id': 'large-list' },
      });
      assert.equal(Buffer.from(await list.arrayBuffer()).length, big.length);
      const deleted = await fetch(`${front.url}${CORE}/Entity/User/ada.l`, {
        method: 'DELETE',
        headers: { authorization: basic('integration', password), 'x-request-id': 'no-body' },
      });
      assert.equal(deleted.status, 204);
      const lines = await recordedLines(front, file, 2);
      assert.deepEqual(
        lines
          .map((line) => [line.requestId, line.responseBody, line.responseBodyOmitted])
          .sort(([x], [y]) => String(x).localeCompare(String(y))),
        [
          ['large-list', null, 'too-large'],
          ['no-body', null, undefined],
        ],
      );
      const compared = await cli(['compare', file, file, '--json']);
      assert.equal(compared.code, 1, 'an answer not compared is no pass');
      const totals = (JSON.parse(compared.stdout) as { totals: Record<string, unknown> }).totals;
      assert.deepEqual([totals.pairs, totals.matched, totals.skipped], [1, 1, 1]);
    } finally {
      await front.close();
      await old.close();
    }
  });
});

describe("the shadow runner's reading of the old server's answer", () => {
  it('reads it only for a request it compares, and skips one it cannot read without translating it', async () => {
    // It was decoded and parsed on the caller's path, for every request, compared or not.
    const store = openSqliteStore(path.join(tempDir('shadow-lazy'), 'store.db'));
    const { runner } = shadowRunnerOn(store);
    const read: string[] = [];
    const translated: string[] = [];
    const request = (
      requestId: string,
      write: boolean,
      answer: { status: number; body: unknown } | undefined,
    ) => ({
      operation: write ? 'user.update' : 'user.get',
      apiUser: 'integration',
      requestId,
      method: write ? 'PUT' : 'GET',
      path: '/Entity/User/ada.l',
      query: '',
      requestBody: null,
      write,
      legacy: async () => {
        read.push(requestId);
        return answer;
      },
      translate: async () => {
        translated.push(requestId);
        return { status: 200, body: { a: 1 } };
      },
    });
    try {
      runner.submit(request('write', true, { status: 200, body: { a: 1 } }));
      runner.submit(request('unreadable', false, undefined));
      runner.submit(request('read', false, { status: 200, body: { a: 1 } }));
      await runner.close();
      assert.deepEqual(read.sort(), ['read', 'unreadable'], 'a write not shadowed is not read');
      assert.deepEqual(translated, ['read']);
      assert.deepEqual((await store.shadow.counts()).map((c) => [c.operation, c.outcome, c.count]).sort(), [
        ['user.get', 'match', 1],
        ['user.get', 'skipped', 1],
        ['user.update', 'skipped', 1],
      ]);
    } finally {
      await store.close();
    }
  });
});

describe('shadow outcomes at shutdown', () => {
  it('says which counts it could not write, instead of keeping them for a flush that never comes', async () => {
    // A real store closed before the runner: the runner's last batch fails.
    const store = openSqliteStore(path.join(tempDir('shadow'), 'store.db'));
    const { runner, log: logSink } = shadowRunnerOn(store);
    // A write is not shadowed by default: counted as skipped, never translated.
    runner.submit({
      operation: 'user.update',
      apiUser: 'integration',
      requestId: 'r1',
      method: 'PUT',
      path: '/Entity/User/ada.l',
      query: '',
      requestBody: { firstname: 'Ada' },
      write: true,
      legacy: { status: 200, body: {} },
      translate: () => Promise.reject(new Error('not to be translated')),
    });
    await store.close();
    await runner.close();
    const lines = logSink.lines();
    const lost = lines.filter(
      (line) => line.msg === 'shadow outcomes not written at shutdown; these counts are lost',
    );
    assert.equal(lost.length, 1, logSink.text);
    assert.equal(lost[0]?.level, 50);
    assert.deepEqual(
      ((lost[0]?.lost ?? []) as { operation: string; outcome: string; count: number }[]).map((c) => [
        c.operation,
        c.outcome,
        c.count,
      ]),
      [['user.update', 'skipped', 1]],
    );
    assert.ok(!lines.some((line) => String(line.msg).includes('kept for the next flush')));
  });
});

describe('a recording whose disk stalls', () => {
  it('leaves exchanges out past maxPendingLines, counts them in the metrics and says so in the log', async () => {
    // The count was kept where nobody could read it: exchanges went missing from the recording
    // that compare is built on, and nothing said so.
    const dir = tempDir('stalled-recording');
    const fifo = path.join(dir, 'recording.ndjson');
    // A FIFO nobody reads: opening it for writing waits, as a write to a stalled disk does.
    makeFifo(fifo);
    const front = await startHarness({
      config: { migration: { recording: { path: fifo, maxPendingLines: 3 } } },
    });
    let drained: Promise<string> | undefined;
    let dropped = 0;
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      for (let i = 0; i < 8; i += 1) {
        const answer = await call(`${front.url}${CORE}/Entity/Role`, { user: 'integration', password });
        assert.equal(answer.status, 200, 'the callers notice nothing');
      }
      const metrics = await (await fetch(`${front.url}/metrics`)).text();
      // Three wait in the queue (and one, perhaps, in the write under way); the rest are left out.
      dropped = Number(/^idm_compat_recording_lines_dropped_total (\d+)$/m.exec(metrics)?.[1]);
      assert.ok(dropped >= 4 && dropped <= 5, `${dropped} dropped`);
      const warnings = front.logSink
        .lines()
        .filter((line) => String(line.msg).startsWith('recording queue full'))
        .map((line) => line.dropped);
      assert.deepEqual(warnings, [1], 'the first drop is told, not each one');
    } finally {
      // A reader lets the writer finish, so the harness can close.
      drained = readFifo(fifo);
      await front.close();
    }
    assert.equal((await drained).trim().split('\n').length, 8 - dropped, 'the others are recorded');
  });
});

describe('an old server that compresses its answers though asked not to', () => {
  it('is compared, recorded and replayed decoded (gzip, deflate, br); one that cannot be read is not compared', async () => {
    // The old server's gzip answer was compared and recorded as null: every shadowed read a
    // mismatch, every recorded answer empty.
    const old = await startOldServer();
    const encodings: string[] = [];
    const encode = (encoding: string, json: Buffer): [string, Buffer] => {
      if (encoding === 'gzip') return ['gzip', gzipSync(json)];
      if (encoding === 'deflate') return ['deflate', deflateRawSync(json)];
      if (encoding === 'br') return ['br', brotliCompressSync(json)];
      if (encoding === 'bomb') return ['gzip', gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20))];
      return [encoding, json];
    };
    // Forwards to the old server and compresses its answer with the next of `encodings`.
    const gz = await startLoopback(async (request, res) => {
      const upstream = await fetch(`${old.baseUrl}${request.url.pathname.slice('/iserv/api'.length)}`, {
        headers: { authorization: String(request.headers.authorization) },
      });
      const [encoding, bytes] = encode(
        encodings.shift() ?? 'identity',
        Buffer.from(await upstream.arrayBuffer()),
      );
      res
        .writeHead(upstream.status, {
          'content-type': 'application/json',
          ...(encoding === 'identity' ? {} : { 'content-encoding': encoding }),
        })
        .end(bytes);
    });
    const dir = tempDir('rec-encoded');
    const file = path.join(dir, 'traffic.ndjson');
    const legacy = { baseUrl: `${gz.url}/iserv/api`, username: old.username, password: old.password };
    const front = await startFront(legacy, { modes: { 'user.get': 'shadow' }, recording: { path: file } });
    try {
      const password = await front.addUser('integration', ['127.0.0.0/8']);
      const sent = ['gzip', 'deflate', 'br', 'compress', 'bomb'];
      for (const encoding of sent) {
        encodings.push(encoding);
        const answer = await fetch(`${front.url}${CORE}/Entity/User/lena.mueller`, {
          headers: { authorization: basic('integration', password), 'x-request-id': encoding },
        });
        assert.equal(answer.status, 200);
        await answer.arrayBuffer();
      }
      const runner = front.services.migration.shadow;
      assert.ok(runner);
      await runner.settle();
      await runner.flush();
      assert.deepEqual((await front.services.store.shadow.counts()).map((c) => [c.outcome, c.count]).sort(), [
        ['match', 3],
        ['skipped', 2],
      ]);
      const lines = await recordedLines(front, file, sent.length);
      const recorded = new Map(lines.map((line) => [line.requestId, line]));
      for (const encoding of ['gzip', 'deflate', 'br']) {
        assert.equal(
          (recorded.get(encoding)?.responseBody as { username?: string })?.username,
          'lena.mueller',
          encoding,
        );
      }
      assert.deepEqual(
        ['compress', 'bomb'].map((id) => [
          recorded.get(id)?.responseBody,
          recorded.get(id)?.responseBodyOmitted,
        ]),
        [
          [null, 'undecodable'],
          [null, 'too-large'],
        ],
      );
      // A replay target that compresses is recorded decoded too.
      encodings.push('gzip');
      const one = path.join(dir, 'gzip.ndjson');
      writeFileSync(one, `${JSON.stringify(recorded.get('gzip'))}\n`);
      const replayed = path.join(dir, 'replayed.ndjson');
      const run = await replay(one, legacy.baseUrl, { user: old.username, password: old.password }, replayed);
      assert.equal(run.code, 0, run.stderr);
      const line = JSON.parse(readFileSync(replayed, 'utf8')) as { responseBody: { username?: string } };
      assert.equal(line.responseBody.username, 'lena.mueller');
    } finally {
      await front.close();
      await gz.close();
      await old.close();
    }
  });
});
