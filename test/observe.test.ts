// The request pipeline's observers over real HTTP on the real server and sandbox: Prometheus
// metrics at /metrics (exact counter moves, own credentials and ranges, bounded series), the usage
// inventory (exact counts through `idm-compat usage --json`, written behind, kept across a
// restart) and deprecation headers; and what start-up refuses.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { ConfigError, parseConfig } from '../src/config/load.js';
import { ManualClock } from '../src/lib/clock.js';
import { createLogger, silentLogger } from '../src/lib/logger.js';
import { MappingError } from '../src/mapping/errors.js';
import { successorRoute } from '../src/observe/observer.js';
import { buildServices } from '../src/services.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import type { Store } from '../src/store/types.js';
import type { UsageCount } from '../src/store/usage.js';
import { type AuthHarness, basic, call, closeSharedSandbox, startHarness } from './auth-helpers.js';
import { runCliCaptured } from './cli-helpers.js';
import { LogSink } from './log-sink.js';
import { tempDir } from './temp-dir.js';

after(closeSharedSandbox);

const USERS = '/iserv/api/Service/Core/Entity/User';
const GROUPS = '/iserv/api/Service/Core/Entity/Group';

/** The samples of a Prometheus text page: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(h: AuthHarness, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const response = await call(`${h.url}/metrics`, { headers });
  assert.equal(response.status, 200, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return samples(response.text);
}

/** What moved between two scrapes, for the series named `prefix…`. */
function moved(
  before: Map<string, number>,
  after: Map<string, number>,
  prefix: string,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of after) {
    if (!key.startsWith(prefix)) continue;
    const delta = value - (before.get(key) ?? 0);
    if (delta !== 0) out[key] = delta;
  }
  return out;
}

const cli = runCliCaptured;

describe('/metrics', () => {
  let h: AuthHarness;
  let alpha: string;
  let beta: string;
  before(async () => {
    h = await startHarness();
    alpha = await h.addUser('alpha', ['127.0.0.0/8']);
    beta = await h.addUser('beta', ['10.0.0.0/8']);
  });
  after(() => h?.close());

  it('counts a 401, a 403, a 404 path and a successful list on exactly their series', async () => {
    const before = await scrape(h);
    assert.equal((await call(`${h.url}${USERS}`)).status, 401);
    assert.equal((await call(`${h.url}${USERS}`, { user: 'beta', password: beta })).status, 403);
    assert.equal(
      (await call(`${h.url}/iserv/api/Service/Nowhere`, { user: 'alpha', password: alpha })).status,
      404,
    );
    assert.equal((await call(`${h.url}${USERS}`, { user: 'alpha', password: alpha })).status, 200);
    const after = await scrape(h);
    assert.deepEqual(moved(before, after, 'idm_compat_requests_total'), {
      'idm_compat_requests_total{operation="user.list",status="401",api_user=""}': 1,
      // Refused for its address, with the right password: counted as that API user's.
      'idm_compat_requests_total{operation="user.list",status="403",api_user="beta"}': 1,
      'idm_compat_requests_total{operation="unknown",status="404",api_user="alpha"}': 1,
      'idm_compat_requests_total{operation="user.list",status="200",api_user="alpha"}': 1,
      // The scrape before this one.
      'idm_compat_requests_total{operation="ops.metrics",status="200",api_user=""}': 1,
    });
    assert.deepEqual(moved(before, after, 'idm_compat_auth_failures_total'), {
      'idm_compat_auth_failures_total{reason="missing"}': 1,
      'idm_compat_auth_failures_total{reason="address"}': 1,
    });
    assert.equal(after.get('idm_compat_request_duration_seconds_count{operation="user.list"}'), 3);
    // The successful list made successor calls; their route has no raw ID.
    const successor = moved(before, after, 'idm_compat_successor_requests_total');
    assert.ok(
      Object.keys(successor).some((key) => key.includes('route="/iserv/idm/api/v1/users"')),
      JSON.stringify(successor),
    );
    assert.ok(after.has('process_cpu_user_seconds_total'), 'process metrics are included');
  });

  it('keeps the series bounded under 1,000 requests to random paths with random user names', async () => {
    const count = (m: Map<string, number>) =>
      [...m.keys()].filter((k) => k.startsWith('idm_compat_requests_total')).length;
    await call(`${h.url}/iserv/api/x`, { user: 'nobody', password: 'x' });
    await call(`${h.url}/random`);
    const before = count(await scrape(h));
    for (let batch = 0; batch < 20; batch++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => {
          const random = randomBytes(6).toString('hex');
          const path = i % 2 === 0 ? `/iserv/api/Service/${random}` : `/${random}/x`;
          return call(`${h.url}${path}`, { user: `user-${random}`, password: random });
        }),
      );
    }
    const after = await scrape(h);
    assert.ok(count(after) <= before + 2, `series grew from ${before} to ${count(after)}`);
    assert.ok(![...after.keys()].some((k) => k.includes('user-')), 'no random user name became a label');
  });
});

describe('/metrics credentials and ranges', () => {
  it('answers 403 outside metrics.ranges, even with the right credentials', async () => {
    const h = await startHarness({
      config: { metrics: { ranges: ['10.0.0.0/8'], username: 'scraper', password: 'scrape-secret' } },
    });
    try {
      const response = await call(`${h.url}/metrics`, { user: 'scraper', password: 'scrape-secret' });
      assert.equal(response.status, 403);
      assert.deepEqual(Object.keys(response.body as object).sort(), ['code', 'message']);
    } finally {
      await h.close();
    }
  });

  it('answers 401 with a challenge without the metrics credentials, 200 with them', async () => {
    const h = await startHarness({ config: { metrics: { username: 'scraper', password: 'scrape-secret' } } });
    try {
      const none = await call(`${h.url}/metrics`);
      assert.equal(none.status, 401);
      assert.match(none.headers.get('www-authenticate') ?? '', /^Basic realm="metrics"/);
      assert.match(none.text, /"The metrics endpoint needs its own Basic credentials"/);
      assert.equal((await call(`${h.url}/metrics`, { user: 'scraper', password: 'wrong' })).status, 401);
      await scrape(h, { authorization: basic('scraper', 'scrape-secret') });
      assert.doesNotMatch(none.text, /scrape-secret/);
    } finally {
      await h.close();
    }
  });

  it('throttles wrong metrics credentials per address: 429 with Retry-After, even for the right ones, until the back-off ends', async () => {
    const clock = new ManualClock();
    const h = await startHarness({
      clock,
      config: {
        metrics: { username: 'scraper', password: 'scrape-secret' },
        auth: { throttle: { addressFreeFailures: 2, baseDelaySeconds: 30 } },
      },
    });
    try {
      const right = { authorization: basic('scraper', 'scrape-secret') };
      const wrong = { user: 'scraper', password: 'guess' };
      // A request without credentials (a client's first try) is not a failure.
      for (let i = 0; i < 3; i++) assert.equal((await call(`${h.url}/metrics`)).status, 401);
      assert.equal((await call(`${h.url}/metrics`, wrong)).status, 401);
      await scrape(h, right);
      // The right credentials cleared the count: two free failures again, the third blocks.
      for (let i = 0; i < 3; i++) assert.equal((await call(`${h.url}/metrics`, wrong)).status, 401);
      const blocked = await call(`${h.url}/metrics`, { headers: right });
      assert.equal(blocked.status, 429, blocked.text);
      assert.equal(blocked.headers.get('retry-after'), '30');
      assert.match(
        JSON.parse(blocked.text).message,
        /Too many failed logins to the metrics endpoint; try again in 30 seconds/,
      );
      clock.advance(29_000);
      assert.equal((await call(`${h.url}/metrics`, { headers: right })).status, 429);
      clock.advance(1_000);
      await scrape(h, right);
    } finally {
      await h.close();
    }
  });

  it('is not served with metrics.enabled false', async () => {
    const h = await startHarness({ config: { metrics: { enabled: false } } });
    try {
      assert.equal((await call(`${h.url}/metrics`)).status, 404);
    } finally {
      await h.close();
    }
  });
});

describe('/metrics: credential checks waiting for a KDF turn', () => {
  it('shows the checks waiting while a burst of new credentials takes turns, then 0', async () => {
    const h = await startHarness({
      config: { auth: { kdfConcurrency: 1 }, server: { trustedProxies: ['127.0.0.0/8'] } },
    });
    try {
      const users = ['kdf-a', 'kdf-b', 'kdf-c', 'kdf-d'];
      const passwords: string[] = [];
      for (const name of users) passwords.push(await h.addUser(name, ['0.0.0.0/0']));
      const waiting = () => scrape(h).then((page) => page.get('idm_compat_password_kdf_waiting'));
      assert.equal(await waiting(), 0);
      // From four addresses (one address's checks take turns at its throttle counter anyway).
      let done = false;
      const burst = Promise.all(
        users.map((user, i) =>
          call(`${h.url}${USERS}`, {
            user,
            password: passwords[i] ?? '',
            headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
          }),
        ),
      ).finally(() => {
        done = true;
      });
      // One turn at a time and four scrypt runs of tens of milliseconds each: scraped meanwhile,
      // the gauge shows the checks behind the running one.
      const seen: number[] = [];
      while (!done) seen.push((await waiting()) ?? Number.NaN);
      assert.deepEqual(
        (await burst).map((response) => response.status),
        [200, 200, 200, 200],
      );
      assert.ok(Math.max(...seen) >= 1, `the gauge read ${seen.join(', ')} during the burst`);
      assert.ok(seen.every((value) => value >= 0 && value <= 3));
      assert.equal(await waiting(), 0);
    } finally {
      await h.close();
    }
  });
});

describe('usage inventory', () => {
  let h: AuthHarness;
  let passwords: Record<'alpha' | 'beta', string>;
  before(async () => {
    // Flushed only at shutdown here, so what the store holds shows that nothing is written per request.
    h = await startHarness({ config: { usage: { flushIntervalSeconds: 300 } } });
    passwords = {
      alpha: await h.addUser('alpha', ['127.0.0.0/8']),
      beta: await h.addUser('beta', ['127.0.0.0/8']),
    };
  });
  after(() => h?.close());

  const as = (user: 'alpha' | 'beta', path: string, method = 'GET') =>
    call(`${h.url}${path}`, { user, password: passwords[user], method });

  async function usage(...args: string[]): Promise<Omit<UsageCount, 'firstSeen' | 'lastSeen'>[]> {
    const run = await cli(['usage', '--json', '--config', h.configFile, ...args]);
    assert.equal(run.code, 0, run.stderr);
    const rows = JSON.parse(run.stdout) as (UsageCount & { firstSeen: string; lastSeen: string })[];
    for (const row of rows) assert.ok(Date.parse(row.firstSeen) <= Date.parse(row.lastSeen));
    return rows.map(({ apiUser, operation, outcome, count }) => ({ apiUser, operation, outcome, count }));
  }

  it('counts a known mix from two API users exactly, written at shutdown and kept across a restart', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await as('alpha', USERS)).status, 200);
    assert.equal((await as('alpha', `${USERS}/nobody.here`)).status, 404);
    assert.equal((await as('beta', GROUPS)).status, 200);
    assert.equal((await as('beta', `${GROUPS}/lehrer`)).status, 200);
    assert.equal((await call(`${h.url}${GROUPS}`)).status, 401);
    // Operators' endpoints are not integrations' usage.
    assert.equal((await call(`${h.url}/healthz`)).status, 200);
    assert.equal((await call(`${h.url}/metrics`)).status, 200);
    assert.deepEqual(await usage(), [], 'nothing written while the proxy runs (flush interval 300 s)');

    await h.close();
    const expected = [
      { apiUser: 'beta', operation: 'group.get', outcome: '2xx', count: 1 },
      { apiUser: '', operation: 'group.list', outcome: '4xx', count: 1 },
      { apiUser: 'beta', operation: 'group.list', outcome: '2xx', count: 1 },
      { apiUser: 'alpha', operation: 'user.get', outcome: '4xx', count: 1 },
      { apiUser: 'alpha', operation: 'user.list', outcome: '2xx', count: 3 },
    ];
    assert.deepEqual(await usage(), expected);

    // A restart on the same store: the counts go on from there.
    h = await startHarness({ dir: h.dir, config: { usage: { flushIntervalSeconds: 300 } } });
    assert.equal((await as('alpha', USERS)).status, 200);
    await h.close();
    assert.deepEqual(await usage('--user', 'alpha', '--operation', 'user.list'), [
      { apiUser: 'alpha', operation: 'user.list', outcome: '2xx', count: 4 },
    ]);
    const unused = await cli(['usage', '--unused', '--json', '--config', h.configFile]);
    const ids = (JSON.parse(unused.stdout) as { operation: string }[]).map((u) => u.operation);
    assert.equal(ids.length, 41 - 4, 'every operation but the four called by an API user');
    assert.ok(ids.includes('user.create') && !ids.includes('user.list') && !ids.includes('group.get'));
    // Unused since when: the store's first counted call; a window reaching back before it is
    // shorter than asked (an inventory a day old calls the quarterly export unused).
    assert.match(
      unused.stderr,
      /^note: this store counts calls since \d{4}-\d\d-\d\dT[\d:.]+Z \(its first counted call\)\n$/,
    );
    const before = await cli(['usage', '--unused', '--since', '2020-01-01', '--config', h.configFile]);
    assert.equal(before.code, 0, before.stderr);
    assert.match(
      before.stderr,
      /\(its first counted call\), not since 2020-01-01T00:00:00\.000Z: the window is shorter than asked/,
    );
    assert.match(before.stdout, /^user\.create +POST /m);
    const future = await cli(['usage', '--json', '--since', '2999-01-01', '--config', h.configFile]);
    assert.deepEqual(JSON.parse(future.stdout), []);
    // A misspelt operation is no "nobody calls it"; a real one nobody called still answers so.
    const typo = await cli(['usage', '--operation', 'user.lsit', '--config', h.configFile]);
    assert.equal(typo.code, 2, typo.stdout);
    assert.match(
      typo.stderr,
      /no legacy operation is named "user\.lsit", and no calls were counted under it; closest: user\.list/,
    );
    const uncalled = await cli(['usage', '--operation', 'user.create', '--config', h.configFile]);
    assert.equal(uncalled.code, 0, uncalled.stderr);
    assert.match(uncalled.stdout, /No recorded usage/);
    // So is a misspelt API user (--unused listed every operation for it); a real one without
    // calls in the window, or one removed since its calls were counted, still answers.
    for (const args of [
      ['--user', 'alpah'],
      ['--unused', '--user', 'ALPHA'],
    ]) {
      const misspelt = await cli(['usage', ...args, '--config', h.configFile]);
      assert.equal(misspelt.code, 2, misspelt.stdout);
      assert.match(
        misspelt.stderr,
        /no API user is named "(alpah|ALPHA)", and no calls were counted under it; closest: alpha/,
      );
    }
    // The refused requests, shown under "(none)", are asked for by that name (or by "").
    for (const none of ['(none)', '']) {
      assert.deepEqual(await usage('--user', none), [
        { apiUser: '', operation: 'group.list', outcome: '4xx', count: 1 },
      ]);
      assert.deepEqual(await usage('--user', none, '--since', '2999-01-01'), []);
    }
    const quiet = await cli(['usage', '--user', 'alpha', '--since', '2999-01-01', '--config', h.configFile]);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.match(quiet.stdout, /No recorded usage/);
    const mixed = await cli(['usage', '--unused', '--operation', 'user.list', '--config', h.configFile]);
    assert.equal(mixed.code, 2);
    assert.match(mixed.stderr, /does not go with --operation/);
    for (const since of ['yesterday', '2026-02-30', '2026-13-01']) {
      const bad = await cli(['usage', '--since', since, '--config', h.configFile]);
      assert.equal(bad.code, 2, since);
      assert.match(bad.stderr, /--since: not a date/);
    }
    // A span too long is a span, said so: it was "not a date … or a span".
    const long = await cli(['usage', '--since', '9999999d', '--config', h.configFile]);
    assert.equal(long.code, 2);
    assert.match(
      long.stderr,
      /--since: a span of at most 999999 days, hours or minutes \(30d, 12h, 90m\): 9999999d/,
    );
    // A date-time without its offset would be read in the machine's time zone while every time
    // printed is UTC: refused for usage and shadow report alike, not guessed.
    for (const command of [['usage'], ['shadow', 'report']]) {
      for (const since of ['2026-09-01T08:00', '2026-09-01 08:00:00']) {
        const local = await cli([...command, '--since', since, '--config', h.configFile]);
        assert.equal(local.code, 2, `${command.join(' ')} --since ${since}`);
        assert.match(local.stderr, /--since: give the date-time's offset, Z for UTC/);
      }
      const offset = await cli([
        ...command,
        '--json',
        '--since',
        '2026-09-01T08:00:00+02:00',
        '--config',
        h.configFile,
      ]);
      assert.equal(offset.code, 0, offset.stderr);
    }
    h = await startHarness({ dir: h.dir });
  });

  it('writes one batch per flush, not one store write per request', async () => {
    let writes = 0;
    const real = h.services.store;
    const store: Store = {
      ...real,
      kind: real.kind,
      usage: {
        add: async (rows) => {
          writes++;
          await real.usage.add(rows);
        },
        list: (filter) => real.usage.list(filter),
        recent: (since) => real.usage.recent(since),
        hourly: () => real.usage.hourly(),
        insertMany: (rows) => real.usage.insertMany(rows),
        insertHourlyMany: (rows) => real.usage.insertHourlyMany(rows),
      },
      ping: () => real.ping(),
      close: async () => undefined,
    };
    const services = await buildServices(h.config, { logger: silentLogger(), store });
    const { createApp } = await import('../src/app.js');
    const app = createApp(services);
    const auth = { authorization: basic('alpha', passwords.alpha) };
    const peer = {
      incoming: { socket: { remoteAddress: '127.0.0.1', remotePort: 1, remoteFamily: 'IPv4' } },
    };
    for (let i = 0; i < 25; i++) {
      const response = await app.request(`${GROUPS}/lehrer`, { headers: auth }, peer);
      assert.equal(response.status, 200);
    }
    // A request's completion (log line, observers) comes in the turn of the event loop after its
    // answer; without a socket in between, the last one is still to come here.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(writes, 0);
    await services.usage.flush();
    assert.equal(writes, 1, 'one batch for 25 requests');
    await services.close();
    assert.equal(writes, 1, 'nothing left to write at close');
  });

  it('says at shutdown which counts it could not write, instead of keeping them for a flush that never comes', async () => {
    // A store of its own on the same file, closed before the proxy shuts down: its last batch fails.
    const storeConfig = h.config.store;
    assert.equal(storeConfig.type, 'sqlite');
    const own = openSqliteStore(storeConfig.path);
    const logSink = new LogSink();
    const services = await buildServices(h.config, {
      logger: createLogger({ destination: logSink }),
      store: own,
    });
    const { createApp } = await import('../src/app.js');
    const app = createApp(services);
    const auth = { authorization: basic('beta', passwords.beta) };
    const peer = {
      incoming: { socket: { remoteAddress: '127.0.0.1', remotePort: 1, remoteFamily: 'IPv4' } },
    };
    for (let i = 0; i < 3; i++)
      assert.equal((await app.request(`${GROUPS}/lehrer`, { headers: auth }, peer)).status, 200);
    await new Promise((resolve) => setImmediate(resolve));
    await own.close();
    await services.close();
    const lines = logSink.lines();
    const lost = lines.filter(
      (line) => line.msg === 'usage inventory not written at shutdown; these counts are lost',
    );
    assert.equal(lost.length, 1, logSink.text);
    assert.equal(lost[0]?.level, 50, 'an error');
    assert.deepEqual(
      ((lost[0]?.lost ?? []) as Record<string, unknown>[]).map(({ apiUser, operation, outcome, count }) => [
        apiUser,
        operation,
        outcome,
        count,
      ]),
      [['beta', 'group.get', '2xx', 3]],
    );
    for (const row of (lost[0]?.lost ?? []) as Record<string, unknown>[]) {
      for (const time of [row.firstSeen, row.lastSeen])
        assert.match(
          String(time),
          /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
          'times in ISO, as printed elsewhere',
        );
    }
    assert.ok(!lines.some((line) => String(line.msg).includes('kept in memory for the next flush')));
  });

  it('answers whatever its completion does: an observer that throws is logged, the answer stands', async () => {
    // The observer contract says "must not throw"; one that does anyway (a fault no real part
    // causes on demand) shows that the log line and the observers come after the answer is out.
    const real = h.services.store;
    const store: Store = { ...real, kind: real.kind, ping: () => real.ping(), close: async () => undefined };
    const logSink = new LogSink();
    const services = await buildServices(h.config, {
      logger: createLogger({ destination: logSink }),
      store,
      observer: {
        request() {
          throw new Error('the observer broke');
        },
      },
    });
    const { createApp } = await import('../src/app.js');
    const server = serve({ fetch: createApp(services).fetch, hostname: '127.0.0.1', port: 0 });
    try {
      await once(server, 'listening');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const answer = await call(`${url}${GROUPS}/lehrer`, { user: 'alpha', password: passwords.alpha });
      assert.equal(answer.status, 200);
      assert.equal((answer.body as { account?: string }).account, 'lehrer');
      const failed = logSink.lines().filter((line) => line.msg === 'request completion failed');
      assert.equal(failed.length, 1);
      assert.match(String((failed[0]?.err as { message?: string })?.message), /the observer broke/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await services.close();
    }
  });
});

describe('deprecation headers', () => {
  let h: AuthHarness;
  let password: string;
  before(async () => {
    h = await startHarness({
      config: {
        deprecation: {
          operations: {
            'user.list': {
              deprecation: '2026-01-01',
              sunset: '2026-12-31T12:00:00+02:00',
              link: 'https://docs.example/migrate-users',
            },
            'role.list': { deprecation: '2026-01-01', link: 'https://docs.example/a>b c/ä?q="x"' },
            '*': { deprecation: '2025-06-01T00:00:00Z' },
          },
        },
      },
    });
    password = await h.addUser('alpha', ['127.0.0.0/8']);
  });
  after(() => h?.close());

  it('sets Deprecation, Sunset and Link exactly as configured; an exact id wins over *', async () => {
    const list = await call(`${h.url}${USERS}`, { user: 'alpha', password });
    assert.equal(list.status, 200);
    assert.equal(list.headers.get('deprecation'), `@${Date.parse('2026-01-01T00:00:00Z') / 1000}`);
    assert.equal(list.headers.get('sunset'), 'Thu, 31 Dec 2026 10:00:00 GMT');
    assert.equal(
      list.headers.get('link'),
      '<https://docs.example/migrate-users>; rel="deprecation", <https://docs.example/migrate-users>; rel="sunset"',
    );
    const groups = await call(`${h.url}${GROUPS}`, { user: 'alpha', password });
    assert.equal(groups.headers.get('deprecation'), `@${Date.parse('2025-06-01T00:00:00Z') / 1000}`);
    assert.equal(groups.headers.get('sunset'), null);
    assert.equal(groups.headers.get('link'), null);
    const health = await call(`${h.url}/healthz`);
    assert.equal(health.headers.get('deprecation'), null, 'only legacy operations are deprecated');
  });

  it('writes the link as a URI reference: percent-encoded, so a > or a space cannot end it', async () => {
    // It went out as written: `<https://docs.example/a>b c/ä…>` ended at the `>`, and raw UTF-8
    // went into the header.
    const roles = await call(`${h.url}/iserv/api/Service/Core/Entity/Role`, { user: 'alpha', password });
    assert.equal(roles.status, 200);
    assert.equal(
      roles.headers.get('link'),
      '<https://docs.example/a%3Eb%20c/%C3%A4?q=%22x%22>; rel="deprecation"',
    );
  });

  it('refuses a link with a control character (a line break would be dropped unseen)', () => {
    const raw = {
      sandbox: { enabled: true },
      deprecation: {
        operations: {
          'group.get': { deprecation: '2026-06-01', link: 'https://x.example/\r\nX-Evil: y' },
          'role.get': { deprecation: '2026-06-01', link: 'https://x.example/%zz/page' },
        },
      },
    };
    assert.throws(
      () => parseConfig(raw, { label: 'c.json', env: {}, baseDir: '.' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((p) => p.path === 'deprecation.operations.group.get.link') &&
        error.problems.some(
          (p) =>
            p.path === 'deprecation.operations.role.get.link' &&
            /% only as the start of an escape/.test(p.message),
        ),
    );
  });

  it('refuses a sunset before the deprecation, naming the JSON path', () => {
    const raw = {
      sandbox: { enabled: true },
      deprecation: { operations: { 'group.get': { deprecation: '2026-06-01', sunset: '2026-05-31' } } },
    };
    assert.throws(
      () => parseConfig(raw, { label: 'c.json', env: {}, baseDir: '.' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some(
          (p) =>
            p.path === 'deprecation.operations.group.get.sunset' &&
            /must not be before deprecation/.test(p.message),
        ),
    );
  });

  it('refuses an operation id that names no operation at start-up', async () => {
    await assert.rejects(
      startHarness({
        config: { deprecation: { operations: { 'user.lst': { deprecation: '2026-01-01' } } } },
      }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((p) => p.path === 'deprecation.operations.user.lst'),
    );
  });
});

describe('start-up refuses a mapping profile that lacks a served operation', () => {
  it('names the operation, its method and path', async () => {
    const dir = tempDir('profile');
    const copy = path.join(dir, 'iserv-idm-v1');
    cpSync(path.resolve('mappings/iserv-idm-v1'), copy, { recursive: true });
    const file = path.join(copy, 'operations', 'group.json');
    const table = JSON.parse(readFileSync(file, 'utf8'));
    delete table.operations['group.link.users.remove'];
    writeFileSync(file, JSON.stringify(table));
    await assert.rejects(
      startHarness({ config: { mappings: { dir, profile: 'iserv-idm-v1' } } }),
      (error: unknown) =>
        error instanceof MappingError &&
        error.problems.length === 1 &&
        error.problems[0]?.path === '$.operations["group.link.users.remove"]' &&
        /DELETE \/Core\/Entity\/Group\/\{id\}\/link\/users/.test(error.problems[0]?.message ?? ''),
    );
  });
});

describe('successor routes of the metrics', () => {
  it('keep words and .well-known, and replace IDs with {id}', () => {
    assert.equal(
      successorRoute('/iserv/auth/.well-known/openid-configuration'),
      '/iserv/auth/.well-known/openid-configuration',
    );
    assert.equal(
      successorRoute(
        '/iserv/idm/api/v1/users/0b6f5c1e-8a4e-4c3b-9a57-3f1d2e4c5b6a/groups/Tf2SqStTdCxSvcojmbemmL',
      ),
      '/iserv/idm/api/v1/users/{id}/groups/{id}',
    );
    assert.equal(successorRoute('/iserv/idm/api/v1/users/.hidden1'), '/iserv/idm/api/v1/users/{id}');
  });
});
