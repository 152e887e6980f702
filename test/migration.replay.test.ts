// `idm-compat replay` and `idm-compat compare` end to end: a hand-written recording replayed
// (in-process CLI, real HTTP via undici) against the real proxy on the real sandbox IDM, twice
// → 100 % match; a write replayed through the proxy changes one user → exactly that difference.
// Also: what is skipped, bad input, an unreachable target, and that the password never shows.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { REDACTED } from '../src/lib/redact.js';
import type { RecordedExchange } from '../src/migration/recording.js';
import { readRecording } from '../src/migration/recording.js';
import { replayExchanges } from '../src/migration/replay.js';
import { type CompareReport, compareReportSchema } from '../src/migration/report.js';
import { type AuthHarness, call, closeSharedSandbox, startHarness } from './auth-helpers.js';
import { runCliCaptured } from './cli-helpers.js';
import { makeFifo, readFifo } from './fifo.js';
import { hardLinkTo, keepingShippedFiles } from './shipped-files.js';
import { sendJson, startLoopback } from './successor-helpers.js';
import { tempDir } from './temp-dir.js';

const cli = runCliCaptured;

let n = 0;
function recorded(operation: string, method: string, p: string, over: Partial<RecordedExchange> = {}) {
  n += 1;
  return {
    time: '2026-03-02T08:00:00.000Z',
    requestId: `rec-${n}`,
    apiUser: 'untis',
    operation,
    mode: 'passthrough',
    method,
    path: p,
    query: '',
    requestBody: null,
    status: 200,
    responseBody: null,
    durationMs: 3,
    ...over,
  } satisfies RecordedExchange;
}

const ndjson = (lines: unknown[]) => `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`;

after(closeSharedSandbox);

describe('replay and compare against the real proxy', () => {
  let h: AuthHarness;
  let dir = '';
  let target = '';
  let password = '';
  let env: NodeJS.ProcessEnv = {};
  let reads = '';

  const replay = (file: string, out: string, ...extra: string[]) =>
    cli(
      [
        'replay',
        file,
        '--target',
        target,
        '--user',
        'migration',
        '--password-env',
        'MIGRATION_PW',
        '--out',
        out,
        ...extra,
      ],
      env,
    );
  const compare = async (...args: string[]) => {
    const run = await cli(['compare', ...args, '--json']);
    return { run, report: compareReportSchema.parse(JSON.parse(run.stdout)) as CompareReport };
  };

  before(async () => {
    h = await startHarness();
    password = await h.addUser('migration', ['127.0.0.1/32']);
    env = { MIGRATION_PW: password };
    target = `${h.url}/iserv/api`;
    dir = tempDir('replay');
    reads = path.join(dir, 'reads.ndjson');
    writeFileSync(
      reads,
      ndjson([
        recorded('user.get', 'GET', '/Service/Core/Entity/User/thomas.becker'),
        recorded('user.list', 'GET', '/Service/Core/Entity/User', { query: 'extended=1' }),
        recorded('group.get', 'GET', '/Service/Core/Entity/Group/lehrer'),
        recorded('user.get', 'GET', '/Service/Core/Entity/User/no.such.user', { status: 404 }),
        // Skipped without --writes:
        recorded('user.update', 'PUT', '/Service/Core/Entity/User/thomas.becker', {
          requestBody: { firstname: 'Never' },
        }),
        // Skipped even with --writes: the password in the body was redacted when recorded.
        recorded('user.password.set', 'POST', '/Service/Core/User/thomas.becker/password', {
          requestBody: { password: REDACTED },
          status: 204,
        }),
      ]),
    );
  });
  after(async () => {
    await h?.close();
  });

  it('records a body it cannot hold (not UTF-8, not JSON, never read: compressed or too large) as null marked unreadable, which replay --writes does not send', async () => {
    // Recorded decoded, the Latin-1 `ü` became U+FFFD: the replay created group "Gr\uFFFDn AG".
    // Recorded as a bare null, a DELETE refused for its body was replayed without one: deleted.
    const file = path.join(dir, 'latin1.ndjson');
    const recorder = await startHarness({
      config: { server: { bodyLimitBytes: 4096 }, migration: { recording: { path: file } } },
    });
    try {
      const integration = await recorder.addUser('integration', ['127.0.0.0/8']);
      const send = (id: string, method: string, at: string, headers: Record<string, string>, body: Buffer) =>
        call(`${recorder.url}/iserv/api/Service/Core${at}`, {
          user: 'integration',
          password: integration,
          method,
          headers: { ...headers, 'x-request-id': id },
          body,
        });
      const json = { 'content-type': 'application/json' };
      const latin1 = Buffer.from('{"name":"Gr\u00fcn AG"}', 'latin1');
      for (const [id, method, at, headers, body, status] of [
        [
          'latin-1',
          'POST',
          '/Entity/Group',
          { 'content-type': 'application/json; charset=iso-8859-1' },
          latin1,
          400,
        ],
        ['delete-latin-1', 'DELETE', '/Entity/User/clara.vogel', json, Buffer.from('\xfc', 'latin1'), 400],
        [
          'delete-text',
          'DELETE',
          '/Entity/User/andreas.wolf',
          { 'content-type': 'text/plain' },
          Buffer.from('please'),
          400,
        ],
        // Never read, so never held: refused for its Content-Encoding, and for its length.
        [
          'delete-gzip',
          'DELETE',
          '/Entity/User/clara.vogel',
          { ...json, 'content-encoding': 'gzip' },
          gzipSync('{"reason":"x"}'),
          415,
        ],
        [
          'delete-large',
          'DELETE',
          '/Entity/User/andreas.wolf',
          json,
          Buffer.from(JSON.stringify({ reason: 'x'.repeat(5000) })),
          413,
        ],
      ] as const) {
        const refused = await send(id, method, at, headers, body);
        assert.equal(refused.status, status, `${id}: ${refused.text}`);
      }
      await recorder.services.migration.recording?.flush();
    } finally {
      await recorder.close();
    }
    const { exchanges } = await readRecording(file);
    assert.deepEqual(
      exchanges.map((e) => [e.requestId, e.status, e.requestBody, e.requestBodyOmitted]),
      [
        ['latin-1', 400, null, 'unreadable'],
        ['delete-latin-1', 400, null, 'unreadable'],
        ['delete-text', 400, null, 'unreadable'],
        ['delete-gzip', 415, null, 'unreadable'],
        ['delete-large', 413, null, 'unreadable'],
      ],
    );
    const read = async (at: string) =>
      (await call(`${target}/Service/Core${at}`, { user: 'migration', password })).body;
    const state = async () => [
      await read('/Entity/Group'),
      await read('/Entity/User/clara.vogel'),
      await read('/Entity/User/andreas.wolf'),
    ];
    // As versions before the mark recorded such a refusal: no body, no mark. Not replayed either.
    const { requestBodyOmitted: _, ...unmarked } = exchanges[4] as RecordedExchange;
    appendFileSync(file, `${JSON.stringify({ ...unmarked, requestId: 'delete-large-unmarked' })}\n`);
    const before = await state();
    const run = await replay(file, path.join(dir, 'latin1-out.ndjson'), '--writes', '--json');
    const summary = JSON.parse(run.stdout);
    assert.deepEqual([summary.replayed, summary.skipped.unreadableBody], [0, 6], run.stderr);
    assert.deepEqual(await state(), before);
  });

  it('records no request of an API user refused for its address (403), which replay --writes would make', async () => {
    // The 403 was recorded once the refusal was counted as the user's: a DELETE without a body,
    // replayed with --writes, deleted on the target what the proxy had refused.
    const file = path.join(dir, 'refused.ndjson');
    const recorder = await startHarness({ config: { migration: { recording: { path: file } } } });
    try {
      const far = await recorder.addUser('faraway', ['10.9.0.0/16']);
      const near = await recorder.addUser('nearby', ['127.0.0.0/8']);
      const refused = await call(`${recorder.url}/iserv/api/Service/Core/Entity/Group/ag.robotik`, {
        user: 'faraway',
        password: far,
        method: 'DELETE',
      });
      assert.equal(refused.status, 403, refused.text);
      const read = await call(`${recorder.url}/iserv/api/Service/Core/Entity/Group/ag.robotik`, {
        user: 'nearby',
        password: near,
        headers: { 'x-request-id': 'admitted' },
      });
      assert.equal(read.status, 200, read.text);
      await recorder.services.migration.recording?.flush();
    } finally {
      await recorder.close();
    }
    const { exchanges } = await readRecording(file);
    assert.deepEqual(
      exchanges.map((e) => [e.requestId, e.apiUser, e.status]),
      [['admitted', 'nearby', 200]],
    );
  });

  it('replays the reads, skipping writes, with the same request ids', async () => {
    const out = path.join(dir, 'first.ndjson');
    const run = await replay(reads, out, '--json');
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout);
    assert.deepEqual(
      {
        total: summary.total,
        replayed: summary.replayed,
        failed: summary.failed,
        skipped: summary.skipped,
        statuses: summary.statuses,
      },
      {
        total: 6,
        replayed: 4,
        failed: 0,
        skipped: { writes: 2, operations: 0, redactedBody: 0, unreadableBody: 0 },
        statuses: { 200: 3, 404: 1 },
      },
    );
    const { exchanges, problems } = await readRecording(out);
    assert.deepEqual(problems, []);
    assert.deepEqual(
      exchanges.map((e) => [e.requestId, e.operation, e.mode, e.apiUser, e.status]),
      [
        ['rec-1', 'user.get', 'replay', 'migration', 200],
        ['rec-2', 'user.list', 'replay', 'migration', 200],
        ['rec-3', 'group.get', 'replay', 'migration', 200],
        ['rec-4', 'user.get', 'replay', 'migration', 404],
      ],
    );
    const user = exchanges[0]?.responseBody as { username: string; firstname: string };
    assert.equal(user.username, 'thomas.becker');
    const list = exchanges[1]?.responseBody as { username: string; groups?: string[] }[];
    assert.ok(
      list.some((u) => u.username === 'thomas.becker' && Array.isArray(u.groups)),
      'extended=1 was sent',
    );
    for (const text of [run.stdout, run.stderr, readFileSync(out, 'utf8')])
      assert.ok(!text.includes(password));
  });

  it('a second replay matches the first: 100 %', async () => {
    const first = path.join(dir, 'first.ndjson');
    const second = path.join(dir, 'second.ndjson');
    assert.equal((await replay(reads, second, '--concurrency', '2', '--rate', '50')).code, 0);
    const { run, report } = await compare(first, second);
    assert.equal(run.code, 0, run.stdout);
    assert.deepEqual(report.totals, {
      pairs: 4,
      matched: 4,
      mismatched: 0,
      rate: 1,
      onlyA: 0,
      onlyB: 0,
      skipped: 0,
    });
    assert.deepEqual(
      report.operations.map((o) => [o.operation, o.pairs, o.rate]),
      [
        ['group.get', 1, 1],
        ['user.get', 2, 1],
        ['user.list', 1, 1],
      ],
    );
    // The text form: one row per operation and the totals.
    const text = await cli(['compare', first, second]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^OPERATION\s+PAIRS\s+MATCHED\s+MISMATCHED\s+RATE/);
    assert.match(text.stdout, /\nuser\.get\s+2\s+2\s+0\s+100\.0 %/);
    assert.match(text.stdout, /\nTOTAL\s+4\s+4\s+0\s+100\.0 %/);
  });

  it('after one user changed through the proxy, compare shows exactly that difference', async () => {
    const writes = path.join(dir, 'writes.ndjson');
    writeFileSync(
      writes,
      ndjson([
        recorded('user.update', 'PUT', '/Service/Core/Entity/User/thomas.becker', {
          requestBody: { firstname: 'Tomas' },
        }),
        recorded('user.password.set', 'POST', '/Service/Core/User/thomas.becker/password', {
          requestBody: { password: REDACTED },
        }),
      ]),
    );
    const written = await replay(writes, path.join(dir, 'writes-out.ndjson'), '--writes', '--json');
    assert.equal(written.code, 0, written.stderr);
    assert.deepEqual(JSON.parse(written.stdout).skipped, {
      writes: 0,
      operations: 0,
      redactedBody: 1,
      unreadableBody: 0,
    });
    assert.deepEqual(JSON.parse(written.stdout).statuses, { 200: 1 });

    const changed = path.join(dir, 'changed.ndjson');
    assert.equal((await replay(reads, changed)).code, 0);
    const { run, report } = await compare(path.join(dir, 'first.ndjson'), changed);
    assert.equal(run.code, 1);
    assert.deepEqual(report.totals, {
      pairs: 4,
      matched: 2,
      mismatched: 2,
      rate: 0.5,
      onlyA: 0,
      onlyB: 0,
      skipped: 0,
    });
    const get = report.operations.find((o) => o.operation === 'user.get');
    assert.deepEqual(get?.paths, [{ path: '$.firstname', count: 1 }]);
    assert.deepEqual(get?.samples[0]?.differences, [{ path: '$.firstname', a: 'Thomas', b: 'Tomas' }]);
    assert.equal(get?.samples[0]?.path, '/Service/Core/Entity/User/thomas.becker');
    const list = report.operations.find((o) => o.operation === 'user.list');
    assert.deepEqual(list?.paths, [{ path: '$[*].firstname', count: 1 }]);
    assert.equal(list?.samples[0]?.differences.length, 1);
    assert.equal(list?.samples[0]?.query, 'extended=1');
    assert.equal(report.operations.find((o) => o.operation === 'group.get')?.rate, 1);

    // --operations narrows the replay to matching operation ids.
    const only = await replay(reads, path.join(dir, 'only.ndjson'), '--operations', 'group.*', '--json');
    assert.deepEqual(JSON.parse(only.stdout).skipped, {
      writes: 0,
      operations: 5,
      redactedBody: 0,
      unreadableBody: 0,
    });
    assert.equal(JSON.parse(only.stdout).replayed, 1);
  });

  it('bad input is a usage error (exit 2) and names the problem; the password never shows', async () => {
    const out = path.join(dir, 'x.ndjson');
    const emptyA = path.join(dir, 'empty-a.ndjson');
    const emptyB = path.join(dir, 'empty-b.ndjson');
    writeFileSync(emptyA, '');
    writeFileSync(emptyB, '\n');
    const base = ['replay', reads, '--target', target, '--user', 'migration', '--out', out];
    const SHIPPED =
      /(--html|--out) .* is in the folder idm-compat ships its mapping profiles and compare rules in .*; writing there would break them/;
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [base, env, /exactly one of --password-env VAR or --password-file FILE/],
      [[...base, '--password-env', 'UNSET'], env, /UNSET is not set/],
      [[...base, '--password-file', path.join(dir, 'none')], env, /cannot read password file .*ENOENT/],
      [[...base, '--password-env', 'MIGRATION_PW', '--writes', '--reads-only'], env, /exclude each other/],
      [
        [...base, '--password-env', 'MIGRATION_PW', '--concurrency', '0'],
        env,
        /--concurrency must be a positive integer/,
      ],
      [
        // Past Node's longest timer: it printed Node's own range error, exit 1.
        [...base, '--password-env', 'MIGRATION_PW', '--timeout', '99999999999'],
        env,
        /--timeout must be at most 2147483647/,
      ],
      [
        [...base, '--password-env', 'MIGRATION_PW', '--rate', 'fast'],
        env,
        /--rate must be a positive number/,
      ],
      [
        [...base, '--password-env', 'MIGRATION_PW', '--operations', '*.list'],
        env,
        /--operations \*\.list: must be an operation id such as user\.list/,
      ],
      // A typo replayed nothing, "0 of N", exit 0.
      [
        [...base, '--password-env', 'MIGRATION_PW', '--operations', 'user.lsit'],
        env,
        /--operations user\.lsit: no legacy operation is named "user\.lsit"; closest: user\.list/,
      ],
      [
        [...base, '--password-env', 'MIGRATION_PW', '--operations', 'users.*'],
        env,
        /--operations users\.\*: no legacy operation is matched by "users\.\*"; closest: user\.\*/,
      ],
      [
        [
          'replay',
          reads,
          '--target',
          `http://migration:${password}@127.0.0.1:1/`,
          '--user',
          'm',
          '--password-env',
          'MIGRATION_PW',
          '--out',
          out,
        ],
        env,
        /must not hold credentials/,
      ],
      [
        [
          'replay',
          reads,
          '--target',
          'ftp://x',
          '--user',
          'm',
          '--password-env',
          'MIGRATION_PW',
          '--out',
          out,
        ],
        env,
        /http or https/,
      ],
      [
        [
          'replay',
          path.join(dir, 'none.ndjson'),
          '--target',
          target,
          '--user',
          'm',
          '--password-env',
          'MIGRATION_PW',
          '--out',
          out,
        ],
        env,
        /cannot read .*ENOENT/,
      ],
      [['compare', reads], {}, /give two recordings/],
      [['compare', reads, reads, '--rules', path.join(dir, 'none.json')], {}, /cannot read .*ENOENT/],
      [['compare', reads, reads, '--rules', reads], {}, /: not valid JSON at line 2, column 1/],
      [['compare', reads, reads, '--exact', '--rules', 'x'], {}, /exclude each other/],
      // It was written over the recording, after the comparison.
      [['compare', reads, emptyA, '--html', reads], {}, /--html .* is recording A; it would be emptied/],
      // Two empty recordings (recording never switched on) matched vacuously: exit 0, "100 %".
      [['compare', emptyA, emptyB], {}, /no exchanges in either recording: nothing to compare/],
      // As compare: it replayed "0 of 0" with exit 0.
      [
        ['replay', emptyB, '--target', target, '--user', 'm', '--password-env', 'MIGRATION_PW', '--out', out],
        env,
        /no exchanges in .*empty-b\.ndjson: nothing to replay/,
      ],
    ];
    // What idm-compat ships in mappings/: the rules a compare without --rules reads, the profile
    // every start reads. Overwritten, they stopped every later compare, or every start.
    const shipped = (...parts: string[]) => path.resolve('mappings', ...parts);
    cases.push(
      [['compare', reads, emptyA, '--html', shipped('compare-rules.default.json')], {}, SHIPPED],
      [['compare', reads, emptyA, '--html', shipped('iserv-idm-v1', 'profile.json')], {}, SHIPPED],
      [['compare', reads, emptyA, '--html', shipped('iserv-idm-v1', 'report.html')], {}, SHIPPED],
      // A hard link is the same file under another name, anywhere.
      [
        [
          'compare',
          reads,
          emptyA,
          '--html',
          hardLinkTo(shipped('compare-rules.default.json'), dir, 'rules.html'),
        ],
        {},
        SHIPPED,
      ],
      [
        [...base.slice(0, -1), shipped('compare-rules.default.json'), '--password-env', 'MIGRATION_PW'],
        env,
        SHIPPED,
      ],
    );
    const touched = await keepingShippedFiles(async () => {
      for (const [args, e, message] of cases) {
        const run = await cli(args, e);
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, message);
        assert.ok(!run.stderr.includes(password) && !run.stdout.includes(password));
      }
    });
    assert.deepEqual(touched, []);
    // An --out that is an input file (also through a link) was emptied before it was read: the
    // recording, perhaps the only copy of the old server's answers, ended at 0 bytes.
    const recorded = readFileSync(reads, 'utf8');
    const link = path.join(dir, 'link-to-reads.ndjson');
    symlinkSync(reads, link);
    const pwFile = path.join(dir, 'pw-out.txt');
    writeFileSync(pwFile, password);
    for (const [outFile, what, auth] of [
      [reads, 'the recording FILE', ['--password-env', 'MIGRATION_PW']],
      [link, 'the recording FILE', ['--password-env', 'MIGRATION_PW']],
      [pwFile, '--password-file', ['--password-file', pwFile]],
    ] as const) {
      const run = await cli(
        ['replay', reads, '--target', target, '--user', 'migration', ...auth, '--out', outFile],
        env,
      );
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, new RegExp(`--out .* is ${what}; it would be emptied`));
    }
    assert.equal(readFileSync(reads, 'utf8'), recorded);
    assert.equal(readFileSync(pwFile, 'utf8'), password);
    // Unusable lines are named and left out; the rest is compared, and the run is no pass.
    const broken = path.join(dir, 'broken.ndjson');
    writeFileSync(broken, `${readFileSync(path.join(dir, 'first.ndjson'), 'utf8')}{"half":\n`);
    const partly = await cli(['compare', path.join(dir, 'first.ndjson'), broken, '--json']);
    assert.equal(partly.code, 1, partly.stderr);
    assert.match(partly.stderr, /broken\.ndjson:5: not JSON/);
    assert.equal(JSON.parse(partly.stdout).totals.matched, 4);
    const rules = path.join(dir, 'rules.json');
    writeFileSync(rules, JSON.stringify({ default: { ignore: ['lastlogin'] } }));
    const invalid = await cli(['compare', reads, reads, '--rules', rules]);
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /rules\.json \$\.default\.ignore\[0\]: must start with \$/);
  });

  it('a password file works; an unreachable target is reported per request (exit 1), without the password', async () => {
    const file = path.join(dir, 'pw.txt');
    writeFileSync(file, `${password}\n`);
    // An --out that is there already, readable by all: replaced, and readable by its owner only.
    writeFileSync(path.join(dir, 'pf.ndjson'), 'old\n', { mode: 0o644 });
    const ok = await cli(
      [
        'replay',
        reads,
        '--target',
        target,
        '--user',
        'migration',
        '--password-file',
        file,
        '--out',
        path.join(dir, 'pf.ndjson'),
        '--json',
      ],
      {},
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout).statuses, { 200: 3, 404: 1 });
    assert.equal(statSync(path.join(dir, 'pf.ndjson')).mode & 0o777, 0o600);

    // A port that was free a moment ago: connections are refused.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const down = await cli(
      [
        'replay',
        reads,
        '--target',
        `http://127.0.0.1:${port}/iserv/api`,
        '--user',
        'migration',
        '--password-env',
        'MIGRATION_PW',
        '--out',
        path.join(dir, 'down.ndjson'),
      ],
      env,
    );
    assert.equal(down.code, 1);
    assert.match(down.stdout, /replayed 0 of 6 requests .* 4 failed/);
    assert.match(down.stderr, /rec-1 \(user\.get\): .*ECONNREFUSED/);
    assert.ok(!down.stderr.includes(password) && !down.stdout.includes(password));
    assert.equal(readFileSync(path.join(dir, 'down.ndjson'), 'utf8'), '');
  });

  it('an --out that cannot be written (a full disk) is an error with exit 1, not a success', async () => {
    // /dev/full (Linux, where the proxy and its tests run): opening and truncating it work, every
    // write fails with ENOSPC, as on a full disk. Its mode is every user's, and stays so: it was
    // made readable and writable by root only.
    const mode = statSync('/dev/full').mode;
    const run = await replay(reads, '/dev/full');
    assert.equal(statSync('/dev/full').mode, mode, "the device's mode was changed");
    assert.equal(run.code, 1, run.stdout);
    assert.match(run.stdout, /replayed 4 of 6 requests/);
    assert.match(
      run.stderr,
      /^error: cannot write \/dev\/full: ENOSPC: no space left on device, write; 0 of 4 answers written$/m,
    );
  });

  it('writes to a FIFO as it is, and refuses a folder before replaying anything', async () => {
    // A FIFO was opened twice (emptied, then written): its reader took the first close for the
    // end, and replay hung on the second open. A folder failed only after the whole replay.
    const fifo = path.join(dir, 'answers.fifo');
    makeFifo(fifo);
    const read = readFifo(fifo);
    const run = await replay(reads, fifo);
    assert.equal(run.code, 0, run.stderr);
    const lines = (await read).trim().split('\n');
    assert.equal(lines.length, 4);
    const folder = await replay(reads, dir);
    assert.equal(folder.code, 2, folder.stderr);
    assert.match(folder.stderr, /cannot write .*: EISDIR/);
    assert.doesNotMatch(folder.stdout, /replayed/);
  });

  it('a wrong password gets 401 answers recorded, which compare shows as status differences', async () => {
    const out = path.join(dir, 'unauth.ndjson');
    const run = await cli(
      [
        'replay',
        reads,
        '--target',
        target,
        '--user',
        'migration',
        '--password-env',
        'PW',
        '--out',
        out,
        '--json',
      ],
      { PW: 'wrong' },
    );
    assert.equal(run.code, 0);
    assert.deepEqual(JSON.parse(run.stdout).statuses, { 401: 4 });
    // Said so: the run looked like any other.
    assert.match(run.stderr, /warning: every answer was 401: .* refused the credentials of --user migration/);
    const { report } = await compare(path.join(dir, 'first.ndjson'), out);
    assert.deepEqual(report.operations.find((o) => o.operation === 'group.get')?.paths, [
      { path: 'status', count: 1 },
    ]);
  });

  it("keeps a password operation's body of any shape out of replay's --out and compare's samples", async () => {
    // A recording the proxy did not write (by hand, an older version, another tool) may hold a
    // password under another key or bare. Redaction by key name let it into both files.
    const secrets = ['Secret-Pass-Key7', 'Secret-Bare-String8', 'Secret-Array-Item9'];
    const file = path.join(dir, 'foreign-passwords.ndjson');
    writeFileSync(
      file,
      ndjson(
        [{ pass: secrets[0] }, secrets[1], { pw: [secrets[2]] }].map((body) =>
          recorded('user.password.set', 'POST', '/Service/Core/User/thomas.becker/password', {
            requestBody: body,
            status: 204,
          }),
        ),
      ),
    );
    const out = path.join(dir, 'foreign-passwords.out.ndjson');
    const run = await replay(file, out, '--writes', '--json');
    assert.equal(run.code, 0, run.stderr);
    // Sent as recorded (the proxy refuses these shapes), written out only as [redacted].
    assert.deepEqual(JSON.parse(run.stdout).statuses, { 400: 3 });
    const written = readFileSync(out, 'utf8');
    const lines = written
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as RecordedExchange);
    assert.deepEqual(
      lines.map((line) => line.requestBody),
      [REDACTED, REDACTED, REDACTED],
    );
    const html = path.join(dir, 'foreign-passwords.html');
    const compared = await cli(['compare', file, out, '--json', '--html', html]);
    assert.equal(compared.code, 1, compared.stderr);
    const report = compareReportSchema.parse(JSON.parse(compared.stdout)) as CompareReport;
    const samples = report.operations.find((o) => o.operation === 'user.password.set')?.samples ?? [];
    assert.equal(samples.length, 3);
    assert.ok(samples.every((sample) => sample.requestBody === REDACTED));
    for (const text of [written, compared.stdout, readFileSync(html, 'utf8')])
      for (const secret of secrets) assert.ok(!text.includes(secret), `${secret} was written`);
  });

  it("keeps a password reset's answer of any shape out of compare's samples, compared by its shape", async () => {
    // An answer the proxy did not record (another tool, an old server of its own ways) may hold
    // the temporary password under another key or bare: redaction by key name let it into the
    // samples' differences, and into the HTML report.
    const secrets = ['Secret-Temp-Key7', 'Secret-Bare-Answer8', 'Secret-Array-Item9'];
    const file = path.join(dir, 'foreign-resets.ndjson');
    writeFileSync(
      file,
      ndjson(
        [{ temp: secrets[0] }, secrets[1], { password: REDACTED }, { initial: [secrets[2]] }].map((body) =>
          recorded('user.password.reset', 'POST', '/Service/Core/User/thomas.becker/password/reset', {
            responseBody: body,
          }),
        ),
      ),
    );
    const out = path.join(dir, 'foreign-resets.out.ndjson');
    const run = await replay(file, out, '--writes', '--json');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).statuses, { 200: 4 });
    const html = path.join(dir, 'foreign-resets.html');
    const compared = await cli(['compare', file, out, '--json', '--html', html]);
    assert.equal(compared.code, 1, compared.stderr);
    const report = compareReportSchema.parse(JSON.parse(compared.stdout)) as CompareReport;
    const reset = report.operations.find((o) => o.operation === 'user.password.reset');
    // The answer of the legacy shape matches; the three others differ in shape, not in value.
    assert.deepEqual([reset?.pairs, reset?.matched], [4, 1]);
    assert.deepEqual(
      reset?.samples.map((sample) => sample.differences),
      [
        [
          { path: '$.temp', a: REDACTED },
          { path: '$.password', b: REDACTED },
        ],
        [{ path: '$', a: REDACTED, b: { password: REDACTED } }],
        [
          { path: '$.initial', a: [REDACTED] },
          { path: '$.password', b: REDACTED },
        ],
      ],
    );
    for (const text of [compared.stdout, readFileSync(html, 'utf8')])
      for (const secret of secrets) assert.ok(!text.includes(secret), `${secret} was written`);
  });

  it('has --help', async () => {
    for (const command of ['replay', 'compare']) {
      const run = await cli([command, '--help']);
      assert.equal(run.code, 0);
      assert.match(run.stdout, new RegExp(`^Usage: idm-compat ${command} `));
    }
  });
});

describe('replay order and concurrency', () => {
  it('reads run up to --concurrency at once; a write runs alone, after everything before it', async () => {
    // A legacy-speaking stand-in on loopback that notes what was in flight when each request
    // arrived; it holds reads until two are in flight and writes for a moment (timers only
    // release requests, so that a request sent too early shows; nothing waits on them).
    const arrivals: { id: string; method: string; inFlight: number; duringWrite: boolean }[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    let writing = 0;
    const waiting: (() => void)[] = [];
    const server = createHttpServer((req, res) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const write = req.method !== 'GET';
      arrivals.push({
        id: String(req.headers['x-request-id']),
        method: req.method ?? '',
        inFlight,
        duringWrite: writing > 0,
      });
      if (write) writing += 1;
      const answer = () => {
        inFlight -= 1;
        if (write) writing -= 1;
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ id: req.headers['x-request-id'], auth: req.headers.authorization?.slice(0, 6) }),
        );
      };
      req.resume();
      if (write) {
        setTimeout(answer, 50);
        return;
      }
      waiting.push(answer);
      if (waiting.length >= 2) for (const release of waiting.splice(0)) release();
      else
        setTimeout(() => {
          for (const release of waiting.splice(0)) release();
        }, 100).unref();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const list = [
        ...['r1', 'r2', 'r3', 'r4'].map((id) =>
          recorded('user.get', 'GET', `/Service/Core/Entity/User/${id}`, { requestId: id }),
        ),
        recorded('user.update', 'PUT', '/Service/Core/Entity/User/x', {
          requestId: 'w1',
          requestBody: { firstname: 'X' },
        }),
        ...['r5', 'r6'].map((id) =>
          recorded('user.get', 'GET', `/Service/Core/Entity/User/${id}`, { requestId: id }),
        ),
        recorded('user.delete', 'DELETE', '/Service/Core/Entity/User/x', { requestId: 'w2' }),
        recorded('user.get', 'GET', '/Service/Core/Entity/User/r7', { requestId: 'r7' }),
      ];
      const out: RecordedExchange[] = [];
      const summary = await replayExchanges(
        list,
        {
          target: `http://127.0.0.1:${port}/iserv/api`,
          user: 'u',
          password: 'p',
          writes: true,
          concurrency: 2,
        },
        (exchange) => out.push(exchange),
      );
      assert.equal(summary.replayed, 9);
      assert.equal(maxInFlight, 2);
      assert.deepEqual(
        arrivals.filter((a) => a.duringWrite).map((a) => a.id),
        [],
        'nothing was sent while a write was in flight',
      );
      const order = arrivals.map((a) => a.id);
      for (const write of ['w1', 'w2']) {
        const at = order.indexOf(write);
        assert.equal(arrivals[at]?.inFlight, 1, `${write} ran alone`);
        const before = list.findIndex((e) => e.requestId === write);
        // Everything recorded before the write arrived before it, everything after it after it.
        assert.deepEqual(new Set(order.slice(0, at)), new Set(list.slice(0, before).map((e) => e.requestId)));
      }
      // The answers come out in recorded order, each paired with its request.
      assert.deepEqual(
        out.map((e) => [e.requestId, (e.responseBody as { id: string }).id]),
        list.map((e) => [e.requestId, e.requestId]),
      );
      assert.ok(out.every((e) => (e.responseBody as { auth: string }).auth === 'Basic '));
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('replay timeouts', () => {
  it("keeps the replay's own credentials out of --out when the target repeats them in an answer", async () => {
    // A target that echoes who asked: the password, `user:password` and its base64.
    const server = await startLoopback((request, res) => {
      const basic = String(request.headers.authorization).slice('Basic '.length);
      const pair = Buffer.from(basic, 'base64').toString('utf8');
      sendJson(res, 200, {
        importId: pair,
        auxInfo: `signed in as replayer with ${pair.slice(pair.indexOf(':') + 1)}`,
        note: `credentials ${basic}`,
      });
    });
    const dir = tempDir('replay-echo');
    const file = path.join(dir, 'rec.ndjson');
    const out = path.join(dir, 'out.ndjson');
    writeFileSync(
      file,
      ndjson([recorded('user.get', 'GET', '/Service/Core/Entity/User/ok', { requestId: 'echo' })]),
    );
    try {
      const args = ['replay', file, '--target', `${server.url}/iserv/api`, '--user', 'replayer'];
      const run = await cli([...args, '--password-env', 'PW', '--out', out], { PW: 'Replay-Secret-77' });
      assert.equal(run.code, 0, run.stderr);
      const { exchanges } = await readRecording(out);
      assert.deepEqual(exchanges[0]?.responseBody, {
        importId: '[redacted]',
        auxInfo: 'signed in as replayer with [redacted]',
        note: 'credentials [redacted]',
      });
      const base64 = Buffer.from('replayer:Replay-Secret-77').toString('base64');
      assert.doesNotMatch(readFileSync(out, 'utf8'), new RegExp(`Replay-Secret-77|${base64}`));
    } finally {
      await server.close();
    }
  });

  it('a target that never answers fails that request after --timeout, and the others go on', async () => {
    const server = createHttpServer((req, res) => {
      req.resume();
      if (req.url?.endsWith('/hang')) return; // never answers
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const dir = tempDir('replay-timeout');
    const file = path.join(dir, 'rec.ndjson');
    writeFileSync(
      file,
      ndjson([
        recorded('user.get', 'GET', '/Service/Core/Entity/User/hang', { requestId: 'slow' }),
        recorded('user.get', 'GET', '/Service/Core/Entity/User/ok', { requestId: 'fast' }),
      ]),
    );
    try {
      const run = await cli(
        [
          'replay',
          file,
          '--target',
          `http://127.0.0.1:${port}/iserv/api`,
          '--user',
          'u',
          '--password-env',
          'PW',
          '--timeout',
          '200',
          '--out',
          path.join(dir, 'out.ndjson'),
          '--json',
        ],
        { PW: 'SecretPw-123' },
      );
      assert.equal(run.code, 1);
      const summary = JSON.parse(run.stdout);
      assert.equal(summary.replayed, 1);
      assert.deepEqual(
        summary.failures.map((f: { requestId: string }) => f.requestId),
        ['slow'],
      );
      assert.match(summary.failures[0].message, /timeout/i);
      assert.match(run.stderr, /^ {2}slow \(user\.get\): timeout/m, 'listed on stderr with --json too');
      assert.ok(!run.stdout.includes('SecretPw-123'));
      const { exchanges } = await readRecording(path.join(dir, 'out.ndjson'));
      assert.deepEqual(
        exchanges.map((e) => e.requestId),
        ['fast'],
      );
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('--timeout bounds the whole answer: a target that trickles its body fails that request, and the others go on', async () => {
    const server = await startLoopback((request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (!request.url.pathname.endsWith('/trickle')) {
        res.end('{"ok":true}');
        return;
      }
      // Headers at once, then a byte every 100 ms: never idle for long enough for an idle timeout.
      res.write('[');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    });
    const dir = tempDir('replay-trickle');
    const file = path.join(dir, 'rec.ndjson');
    const out = path.join(dir, 'out.ndjson');
    writeFileSync(
      file,
      ndjson([
        recorded('user.get', 'GET', '/Service/Core/Entity/User/trickle', { requestId: 'trickle' }),
        recorded('user.get', 'GET', '/Service/Core/Entity/User/ok', { requestId: 'fast' }),
      ]),
    );
    try {
      const args = ['replay', file, '--target', `${server.url}/iserv/api`, '--user', 'u'];
      const run = await Promise.race([
        cli([...args, '--password-env', 'PW', '--timeout', '500', '--out', out], { PW: 'pw' }),
        sleep(10_000).then(() => undefined),
      ]);
      assert.ok(run, 'replay with --timeout 500 was still waiting for the trickling answer after 10 s');
      assert.equal(run.code, 1, run.stdout);
      assert.match(run.stdout, /replayed 1 of 2 requests .*1 failed/);
      assert.match(run.stderr, /^ {2}trickle \(user\.get\): timeout: no whole answer within 500 ms$/m);
      const { exchanges } = await readRecording(out);
      assert.deepEqual(
        exchanges.map((e) => e.requestId),
        ['fast'],
      );
    } finally {
      await server.close();
    }
  });
});

describe('replay of a large answer', () => {
  it('records an answer over 8 MiB without its body, marked too-large like the proxy does, and stops reading it at the cap', async () => {
    // An endless answer, sent as fast as it is read: without the cap replay would hold it in
    // memory until --timeout.
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const server = await startLoopback((request, res) => {
      if (request.url.pathname.endsWith('/small')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"_id":"small"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const more = () => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on('drain', more);
      more();
    });
    const dir = tempDir('replay-large');
    const file = path.join(dir, 'rec.ndjson');
    const out = path.join(dir, 'out.ndjson');
    writeFileSync(
      file,
      ndjson([
        recorded('user.list', 'GET', '/Service/Core/Entity/User', { requestId: 'endless' }),
        // Too large when it was recorded, small now: the line says what happened to this answer.
        recorded('user.get', 'GET', '/Service/Core/Entity/User/small', {
          requestId: 'small',
          responseBodyOmitted: 'too-large',
        }),
      ]),
    );
    try {
      const args = ['replay', file, '--target', `${server.url}/iserv/api`, '--user', 'u'];
      const run = await cli([...args, '--password-env', 'PW', '--timeout', '5000', '--out', out], {
        PW: 'pw',
      });
      assert.equal(run.code, 0, `${run.stdout}${run.stderr}`);
      const { exchanges } = await readRecording(out);
      assert.deepEqual(
        exchanges.map((e) => [e.requestId, e.status, e.responseBody, e.responseBodyOmitted]),
        [
          ['endless', 200, null, 'too-large'],
          ['small', 200, { _id: 'small' }, undefined],
        ],
      );
      // The answer left out is not compared: not a match of two nulls.
      const compared = await cli(['compare', out, out, '--json']);
      assert.equal(compared.code, 1);
      const report = compareReportSchema.parse(JSON.parse(compared.stdout));
      assert.deepEqual([report.totals.pairs, report.totals.matched, report.totals.skipped], [1, 1, 1]);
    } finally {
      await server.close();
    }
  });
});
