// A flood of requests without credentials over real HTTP: the completion lines of 401/404/405/429
// answers are bounded per second by logging.unauthenticatedPerSecond, and each second that left
// lines out ends with one line counting them; other answers are always logged.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startUserProxy, type UserProxy } from './user-helpers.js';

const FLOOD = 400;
const LIMIT = 5;

/** One request of a flood, and the status every one of them must get. */
interface FloodRequest {
  method: string;
  url: (proxy: UserProxy) => string;
  status: number;
  headers?: Record<string, string>;
}

/** Without credentials on the legacy surface. */
const UNAUTHENTICATED: FloodRequest = {
  method: 'GET',
  url: (proxy) => `${proxy.core}/Entity/User`,
  status: 401,
};
/** Throttled logins: the API user `tester` with a wrong password, refused 429 once its pair counter blocks. */
const THROTTLED: FloodRequest = {
  method: 'GET',
  url: (proxy) => `${proxy.core}/Entity/User`,
  status: 429,
  headers: { authorization: `Basic ${Buffer.from('tester:not-the-password').toString('base64')}` },
};
/** A wrong method on a path of the proxy's own, which needs no credentials (it used to be a 404). */
const WRONG_METHOD: FloodRequest = { method: 'POST', url: (proxy) => `${proxy.url}/healthz`, status: 405 };

/** Sends `count` requests, `concurrency` at a time; every one must get `request.status`. */
async function flood(
  proxy: UserProxy,
  count: number,
  concurrency = 40,
  request: FloodRequest = UNAUTHENTICATED,
): Promise<void> {
  let sent = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < count) {
        sent++;
        const response = await fetch(request.url(proxy), {
          method: request.method,
          ...(request.headers ? { headers: request.headers } : {}),
        });
        await response.arrayBuffer();
        assert.equal(response.status, request.status);
      }
    }),
  );
}

/** Waits until `done()` holds (the summary line comes at the end of its second). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 50));
}

function completions(proxy: UserProxy, status: number) {
  return proxy.logSink.lines().filter((line) => line.msg === 'request completed' && line.status === status);
}

/** The lines the summaries say were left out, in all or (`status`) of answers with that status. */
function suppressed(proxy: UserProxy, status?: number): number {
  return proxy.logSink
    .lines()
    .filter((line) => typeof line.msg === 'string' && /^suppressed \d+ request lines$/.test(line.msg))
    .reduce(
      (sum, line) =>
        sum +
        Number(
          status === undefined ? line.suppressed : ((line.byStatus as Record<string, number>)[status] ?? 0),
        ),
      0,
    );
}

describe('log flood', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy({ config: { logging: { unauthenticatedPerSecond: LIMIT } } });
  });
  after(async () => {
    await proxy.close();
  });

  it(`${FLOOD} requests without credentials: at most ${LIMIT} lines a second, the rest counted`, async () => {
    const started = Date.now();
    await flood(proxy, FLOOD);
    const seconds = Math.floor(Date.now() / 1000) - Math.floor(started / 1000) + 1;
    await until(() => completions(proxy, 401).length + suppressed(proxy) >= FLOOD);
    const written = completions(proxy, 401).length;
    assert.ok(written <= LIMIT * seconds, `${written} lines in ${seconds} second(s)`);
    assert.equal(written + suppressed(proxy), FLOOD, 'every request is a line or counted in a summary');
    const summaries = proxy.logSink.lines().filter((line) => line.suppressed !== undefined);
    assert.ok(summaries.length >= 1 && summaries.length <= seconds);
    for (const line of summaries) {
      assert.equal(line.level, 40);
      assert.deepEqual(line.byStatus, { 401: line.suppressed });
    }
  });

  it(`${FLOOD} requests with a wrong method on /healthz (405): limited like the 404s they used to be`, async () => {
    const before = suppressed(proxy);
    const started = Date.now();
    await flood(proxy, FLOOD, 40, WRONG_METHOD);
    const seconds = Math.floor(Date.now() / 1000) - Math.floor(started / 1000) + 1;
    await until(() => completions(proxy, 405).length + suppressed(proxy) - before >= FLOOD);
    const written = completions(proxy, 405).length;
    assert.ok(written <= LIMIT * seconds, `${written} lines in ${seconds} second(s)`);
    assert.equal(
      written + suppressed(proxy) - before,
      FLOOD,
      'every request is a line or counted in a summary',
    );
    const summaries = proxy.logSink.lines().filter((line) => (line.byStatus as { 405?: number })?.[405]);
    assert.ok(summaries.length >= 1 && summaries.length <= seconds);
  });

  it('an answered request is logged during a flood', async () => {
    const [answer] = await Promise.all([proxy.call('GET', '/Entity/User/lena.mueller'), flood(proxy, 100)]);
    assert.equal(answer.status, 200);
    const id = answer.headers.get('x-request-id');
    assert.ok(completions(proxy, 200).some((line) => line.reqId === id));
  });
});

describe('log flood of throttled logins', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy({
      config: {
        logging: { unauthenticatedPerSecond: LIMIT },
        auth: { throttle: { baseDelaySeconds: 600 } },
      },
    });
  });
  after(async () => {
    await proxy.close();
  });

  it(`${FLOOD} throttled logins (429): their refusal lines are limited with their completion lines`, async () => {
    // Past the pair's free failures (5 wrong passwords, each a 401), every attempt is a 429.
    for (let i = 0; i < 6; i++) {
      const response = await fetch(THROTTLED.url(proxy), { headers: THROTTLED.headers ?? {} });
      await response.arrayBuffer();
    }
    // The 401s above may be summed up in a summary that comes during the flood: 429s only.
    const started = Date.now();
    await flood(proxy, FLOOD, 40, THROTTLED);
    const seconds = Math.floor(Date.now() / 1000) - Math.floor(started / 1000) + 1;
    await until(() => completions(proxy, 429).length + suppressed(proxy, 429) >= FLOOD);
    const written = completions(proxy, 429);
    assert.ok(written.length <= LIMIT * seconds, `${written.length} lines in ${seconds} second(s)`);
    assert.equal(written.length + suppressed(proxy, 429), FLOOD);
    // A request writes its refusal line exactly when its completion line is written.
    const refusals = proxy.logSink
      .lines()
      .filter((line) => line.msg === 'API-user authentication refused' && line.reason === 'throttled');
    assert.equal(refusals.length, written.length, 'as many refusal lines as completion lines');
    assert.deepEqual(new Set(refusals.map((line) => line.reqId)), new Set(written.map((line) => line.reqId)));
  });
});

describe('log flood without a limit', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy({ config: { logging: { unauthenticatedPerSecond: 0 } } });
  });
  after(async () => {
    await proxy.close();
  });

  it('writes every line', async () => {
    await flood(proxy, 200);
    assert.equal(completions(proxy, 401).length, 200);
    assert.equal(suppressed(proxy), 0);
  });
});
