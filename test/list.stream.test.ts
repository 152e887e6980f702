// Large lists are answered while the successor's pages arrive: the same bytes as the whole list,
// a failure on the first two pages answered like any other, a later one cutting the answer off
// (never a short list that looks whole), a list of one page answered whole, and the collection
// read never more than pageConcurrency pages ahead of what has been answered, nor read on once
// the caller hung up.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import path from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { GROUP_EXTENDED_FIELDS, GROUP_LIST_FIELDS } from '../src/legacy/group/schema.js';
import { USER_EXTENDED_FIELDS, USER_LIST_FIELDS } from '../src/legacy/user/schema.js';
import { silentLogger } from '../src/lib/logger.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/index.js';
import { createSuccessorClient, type SuccessorClient } from '../src/successor/client.js';
import { mapPages, streamAllPages } from '../src/successor/collections.js';
import { releaseBody } from '../src/successor/http.js';
import { basic, startHarness } from './auth-helpers.js';
import { sandbox } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

const USERS = Array.from({ length: 250 }, (_, i) => ({
  user: `stream.user${String(i).padStart(3, '0')}`,
  firstname: 'Stream',
  lastname: `User ${i}`,
  groups: ['schueler'],
  roles: ['ROLE_STUDENT'],
}));

/** The log lines of one request. */
function linesOf(proxy: UserProxy, requestId: string): Record<string, unknown>[] {
  return proxy.logSink.lines().filter((line) => line.reqId === requestId);
}

/** Waits for the completion line of a request (a streamed answer's comes once the stream is over). */
async function completed(proxy: UserProxy, requestId: string): Promise<void> {
  const done = () => linesOf(proxy, requestId).some((line) => line.msg === 'request completed');
  for (let i = 0; i < 100 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(done(), `${requestId} completed`);
}

/**
 * What reaches the console (stdout, stderr) beside the log, from now until `restore()`: the Node
 * adapter prints a failed answer stream with console.error, and a client's hang-up with console.info.
 */
function consoleOutput(): { output(): string[]; restore(): void } {
  const output: string[] = [];
  const methods = ['error', 'warn', 'info', 'log', 'debug'] as const;
  const originals = methods.map((name) => [name, console[name]] as const);
  for (const name of methods)
    console[name] = (...args: unknown[]) => {
      output.push(`console.${name}: ${args.map((arg) => inspect(arg)).join(' ')}`);
    };
  return {
    output: () => [...output],
    restore() {
      for (const [name, original] of originals) console[name] = original;
    },
  };
}

describe('streamed legacy lists', () => {
  let proxy: UserProxy;

  before(async () => {
    // 250 more users than the seed: three successor pages of 100.
    proxy = await startUserProxy({ sandbox: { fixture: { users: USERS } } });
  });
  after(async () => {
    await proxy?.close();
  });

  it('answers a list of several pages in chunks, byte for byte the whole list', async () => {
    const fields = [...USER_LIST_FIELDS, ...USER_EXTENDED_FIELDS];
    const whole = await proxy.mappings.current().run('user.list', { fields });
    assert.equal(whole.type, 'collection');
    proxy.resetCounts();
    const answer = await proxy.call('GET', '/Entity/User?extended=1');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('content-type'), 'application/json');
    assert.equal(answer.headers.get('transfer-encoding'), 'chunked');
    assert.equal(answer.text, JSON.stringify(whole.type === 'collection' ? whole.value : undefined));
    assert.deepEqual(proxy.apiCalls(), { 'GET /users': 3 });
  });

  it("counts every page read in the request's log line", async () => {
    const response = await fetch(`${proxy.core}/Entity/User`, {
      headers: { authorization: proxy.authorization, 'x-request-id': 'pages-counted-1' },
    });
    assert.equal(response.status, 200);
    await response.arrayBuffer();
    const [line] = proxy.logSink
      .lines()
      .filter((l) => l.reqId === 'pages-counted-1' && l.msg === 'request completed');
    assert.equal(line?.successorCalls, 3, JSON.stringify(line));
    assert.equal(typeof line?.successorMs, 'number');
  });

  it('logs a list whose caller hung up while the first page was read', async () => {
    proxy.sandbox.faults.set({ latencyMs: 400 });
    try {
      const controller = new AbortController();
      const request = fetch(`${proxy.core}/Entity/User`, {
        headers: { authorization: proxy.authorization, 'x-request-id': 'hung-up-1' },
        signal: controller.signal,
      }).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 150));
      controller.abort();
      await request;
      const logged = () =>
        proxy.logSink.lines().filter((l) => l.reqId === 'hung-up-1' && l.msg === 'request completed');
      for (let i = 0; i < 100 && logged().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(logged().length, 1);
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('answers HEAD on a list without a body, and logs it', async () => {
    const response = await fetch(`${proxy.core}/Entity/User`, {
      method: 'HEAD',
      headers: { authorization: proxy.authorization, 'x-request-id': 'head-list-1' },
    });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '');
    const lines = proxy.logSink
      .lines()
      .filter((l) => l.reqId === 'head-list-1' && l.msg === 'request completed');
    assert.equal(lines.length, 1);
  });

  it('answers a failure of the first page as an error, like any other', async () => {
    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', times: 1, status: 500 }] });
    try {
      const answer = await proxy.call<{ message: string }>('GET', '/Entity/User');
      assert.equal(answer.status, 502, answer.text);
      assert.match(answer.body.message, /successor/i);
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('answers a failure of the second page as an error too: the answer has not begun', async () => {
    // Pages 2 and 3 both fail, whichever of the two reaches the sandbox first.
    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', skip: 1, times: 2, status: 500 }] });
    try {
      const answer = await proxy.call<{ message: string }>('GET', '/Entity/User');
      assert.equal(answer.status, 502, answer.text);
      assert.match(answer.body.message, /successor/i);
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('answers a list of one page whole, with its length, not in chunks', async () => {
    const fields = [...GROUP_LIST_FIELDS, ...GROUP_EXTENDED_FIELDS];
    const whole = await proxy.mappings.current().run('group.list', { fields });
    assert.equal(whole.type, 'collection');
    proxy.resetCounts();
    const answer = await proxy.call('GET', '/Entity/Group?extended=1');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('content-type'), 'application/json');
    assert.equal(answer.headers.get('transfer-encoding'), null);
    assert.equal(answer.headers.get('content-length'), String(Buffer.byteLength(answer.text)));
    assert.equal(answer.text, JSON.stringify(whole.type === 'collection' ? whole.value : undefined));
    assert.deepEqual(proxy.apiCalls(), { 'GET /groups': 1 });
  });
});

describe('a list whose successor pages are larger than successor.maxResponseBytes', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy({
      sandbox: { fixture: { users: USERS } },
      // One page of all 274 users: some 80 KB.
      successor: { maxResponseBytes: 64 * 1024, pageSize: 500 },
    });
  });
  after(async () => {
    await proxy?.close();
  });

  it('answers 502 (not read whole, not a 500) and the log names the setting', async () => {
    const answer = await proxy.call<{ code: number; message: string }>(
      'GET',
      '/Entity/User?extended=1',
      undefined,
      {
        'x-request-id': 'page-too-large',
      },
    );
    assert.equal(answer.status, 502, answer.text);
    assert.match(
      answer.body.message,
      /^The successor gave an answer the proxy cannot use; request id page-too-large/,
    );
    const failed = linesOf(proxy, 'page-too-large').find((line) => line.msg === 'request failed');
    assert.match(String(failed?.successor), /larger than 65536 bytes \(successor\.maxResponseBytes\)/);
  });
});

describe('a streamed list whose caller hangs up after the first chunk', () => {
  let proxy: UserProxy;

  before(async () => {
    // Pages of 5: some 53 successor pages, slow enough (latency below) to hang up among them; a
    // pause of up to half a second before the hang-up reaches the proxy still leaves it under half.
    proxy = await startUserProxy({ sandbox: { fixture: { users: USERS } }, successor: { pageSize: 5 } });
  });
  after(async () => {
    await proxy?.close();
  });

  it('cuts the answer off when a later page fails, and logs why once, through the log only', async () => {
    // The eleventh page fails, long after the answer began (after the second page).
    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', skip: 10, times: 1, status: 500 }] });
    const printed = consoleOutput();
    try {
      const response = await fetch(`${proxy.core}/Entity/User`, {
        headers: { authorization: proxy.authorization, 'x-request-id': 'later-page-failed' },
      });
      assert.equal(response.status, 200, 'the first pages were fine, so the answer had begun');
      await assert.rejects(response.text(), 'the body ends without its last chunk');
      await completed(proxy, 'later-page-failed');
      const logged = linesOf(proxy, 'later-page-failed').filter((line) => line.msg !== 'request completed');
      assert.deepEqual(
        logged.map((line) => [line.level, line.msg]),
        [[50, 'list answer cut off: a later page failed']],
      );
      assert.match(String((logged[0]?.err as { message?: unknown } | undefined)?.message), /500/);
      // The completion line and the metrics say the 200 was cut off: it was an info line of a 200.
      const done = linesOf(proxy, 'later-page-failed').find((line) => line.msg === 'request completed');
      assert.deepEqual([done?.level, done?.status, done?.answerCutOff], [50, 200, 'failed']);
      assert.match(
        await proxy.services.metrics.registry.metrics(),
        /^idm_compat_answers_cut_off_total\{operation="user\.list",reason="failed"\} 1$/m,
      );
      assert.deepEqual(printed.output(), [], 'nothing beside the log');
    } finally {
      printed.restore();
      proxy.sandbox.faults.reset();
    }
  });

  it('takes a client that reads the first bytes and goes away as no error, and reads no page after it', async () => {
    // At least this many pages: the fixture's users alone, without the seed's.
    const pages = Math.ceil(USERS.length / 5);
    proxy.sandbox.faults.set({ latencyMs: 150 });
    const printed = consoleOutput();
    try {
      proxy.resetCounts();
      // What `curl … | head -c 100` does: the first bytes of the body, then the connection is closed.
      const { hostname, port } = new URL(proxy.url);
      const socket = connect(Number(port), hostname);
      socket.write(
        `GET /iserv/api/Service/Core/Entity/User HTTP/1.1\r\nHost: ${hostname}:${port}\r\n` +
          `Authorization: ${proxy.authorization}\r\nX-Request-Id: client-went-away\r\n\r\n`,
      );
      let received = '';
      await new Promise<void>((resolve, reject) => {
        socket.on('error', reject);
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString('latin1');
          const body = received.indexOf('\r\n\r\n');
          if (body >= 0 && received.length - body > 100) {
            socket.destroy();
            resolve();
          }
        });
      });
      assert.match(received, /^HTTP\/1\.1 200 /);
      await completed(proxy, 'client-went-away');
      // Pages already asked for may still arrive; after them, no more are read.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const read = proxy.apiCallCount();
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.equal(proxy.apiCallCount(), read, 'no page read after the hang-up settled');
      assert.ok(read < pages / 2, `${read} of ${pages} pages read`);
      const logged = linesOf(proxy, 'client-went-away').filter((line) => line.msg !== 'request completed');
      assert.deepEqual(
        logged.map((line) => [line.level, line.msg]),
        [[30, 'list answer not finished: the client went away; no further pages are read']],
      );
      assert.deepEqual(printed.output(), [], 'nothing beside the log');
    } finally {
      printed.restore();
      proxy.sandbox.faults.reset();
    }
  });

  it('stops reading pages, and logs the request once', async () => {
    // At least this many pages: the fixture's users alone, without the seed's.
    const pages = Math.ceil(USERS.length / 5);
    proxy.sandbox.faults.set({ latencyMs: 150 });
    try {
      proxy.resetCounts();
      const controller = new AbortController();
      const response = await fetch(`${proxy.core}/Entity/User`, {
        headers: { authorization: proxy.authorization, 'x-request-id': 'hang-up-mid-stream' },
        signal: controller.signal,
      });
      assert.equal(response.status, 200);
      const reader = response.body?.getReader();
      await reader?.read();
      controller.abort();
      await reader?.cancel().catch(() => undefined);
      const logged = () =>
        proxy.logSink
          .lines()
          .filter((l) => l.reqId === 'hang-up-mid-stream' && l.msg === 'request completed');
      for (let i = 0; i < 100 && logged().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(logged().length, 1, 'one completion line');
      // Pages already asked for may still arrive; after them, no more are read.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const read = proxy.apiCallCount();
      await new Promise((resolve) => setTimeout(resolve, 600));
      assert.equal(proxy.apiCallCount(), read, 'no page read after the hang-up settled');
      assert.ok(read < pages / 2, `${read} of ${pages} pages read`);
    } finally {
      proxy.sandbox.faults.reset();
    }
  });
});

describe('a streamed list the shutdown cuts off', () => {
  it('says so at warn level, not that the client went away', async () => {
    // The proxy cut the connection at server.shutdownTimeoutMs, and the line at info level said
    // "the client went away".
    const idm = await startSandbox({ port: 0, fixture: { users: USERS } });
    const h = await startHarness({
      sandbox: idm,
      config: { server: { shutdownTimeoutMs: 300 }, successor: { pageSize: 5, pageConcurrency: 1 } },
    });
    let closed = false;
    try {
      const password = await h.addUser('lister', ['127.0.0.0/8']);
      idm.faults.set({ latencyMs: 150 });
      const response = await fetch(`${h.url}/iserv/api/Service/Core/Entity/User`, {
        headers: { authorization: basic('lister', password), 'x-request-id': 'cut-by-shutdown' },
      });
      assert.equal(response.status, 200);
      const body = response.text().then(
        () => 'whole',
        () => 'cut off',
      );
      await h.close();
      closed = true;
      assert.equal(await body, 'cut off', 'the list ends without its last chunk');
      const lines = h.logSink.lines().filter((line) => line.reqId === 'cut-by-shutdown');
      assert.deepEqual(
        lines.filter((line) => line.msg !== 'request completed').map((line) => [line.level, line.msg]),
        [
          [
            40,
            'list answer cut off by the shutdown: server.shutdownTimeoutMs passed before its last page; the client got an incomplete list',
          ],
        ],
      );
      const done = lines.find((line) => line.msg === 'request completed');
      assert.deepEqual([done?.level, done?.answerCutOff], [40, 'shutdown']);
    } finally {
      if (!closed) await h.close();
      await idm.close();
    }
  });
});

describe('a recorded streamed list whose caller hangs up', () => {
  let proxy: UserProxy;
  let file: string;

  before(async () => {
    file = path.join(tempDir('rec'), 'traffic.ndjson');
    proxy = await startUserProxy({
      sandbox: { fixture: { users: USERS } },
      successor: { pageSize: 20 },
      config: { migration: { recording: { path: file } } },
    });
  });
  after(async () => {
    await proxy?.close();
  });

  it('records the whole list, never a short one that looks whole', async () => {
    const whole = await proxy.mappings.current().run('user.list', { fields: USER_LIST_FIELDS });
    assert.equal(whole.type, 'collection');
    proxy.sandbox.faults.set({ latencyMs: 150 });
    try {
      const controller = new AbortController();
      const response = await fetch(`${proxy.core}/Entity/User`, {
        headers: { authorization: proxy.authorization, 'x-request-id': 'recorded-hang-up' },
        signal: controller.signal,
      });
      const reader = response.body?.getReader();
      await reader?.read();
      controller.abort();
      await reader?.cancel().catch(() => undefined);
      const recording = proxy.services.migration.recording;
      assert.ok(recording);
      let line: { responseBody?: unknown } | undefined;
      for (let i = 0; i < 100 && !line; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        await recording.flush();
        line = (existsSync(file) ? readFileSync(file, 'utf8') : '')
          .split('\n')
          .filter((text) => text.includes('recorded-hang-up'))
          .map((text) => JSON.parse(text) as { responseBody?: unknown })[0];
      }
      assert.ok(line, 'the request was recorded');
      assert.equal(
        (line.responseBody as unknown[]).length,
        whole.type === 'collection' ? whole.value.length : -1,
      );
    } finally {
      proxy.sandbox.faults.reset();
    }
  });

  it('records no list cut off by a later page, and prints nothing beside the log', async () => {
    // Some 13 pages of 20: the tenth fails, long after the answer began.
    proxy.sandbox.faults.set({ rules: [{ match: 'GET /users', skip: 9, times: 1, status: 500 }] });
    const printed = consoleOutput();
    try {
      const response = await fetch(`${proxy.core}/Entity/User`, {
        headers: { authorization: proxy.authorization, 'x-request-id': 'recorded-cut-off' },
      });
      assert.equal(response.status, 200);
      await assert.rejects(response.text(), 'the body ends without its last chunk');
      await completed(proxy, 'recorded-cut-off');
      const notRecorded = () =>
        linesOf(proxy, 'recorded-cut-off').filter((line) => line.msg === 'request not recorded');
      for (let i = 0; i < 100 && notRecorded().length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(
        linesOf(proxy, 'recorded-cut-off')
          .filter((line) => line.msg !== 'request completed')
          .map((line) => [line.level, line.msg]),
        [
          [50, 'list answer cut off: a later page failed'],
          [40, 'request not recorded'],
        ],
      );
      await proxy.services.migration.recording?.flush();
      assert.ok(!(existsSync(file) ? readFileSync(file, 'utf8') : '').includes('recorded-cut-off'));
      assert.deepEqual(printed.output(), [], 'nothing beside the log');
    } finally {
      printed.restore();
      proxy.sandbox.faults.reset();
    }
  });
});

describe('a streamed empty list', () => {
  let empty: UserProxy;

  before(async () => {
    empty = await startUserProxy({ sandbox: { seed: false } });
  });
  after(async () => {
    await empty?.close();
  });

  it('is []', async () => {
    const answer = await empty.call('GET', '/Entity/User');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.text, '[]');
  });
});

describe('streamCollection', () => {
  let sb: RunningSandbox;

  before(async () => {
    sb = await sandbox({
      seed: false,
      fixture: {
        users: Array.from({ length: 95 }, (_, i) => ({
          user: `pupil.${String(i).padStart(3, '0')}`,
          firstname: 'Pupil',
          lastname: `Number ${i}`,
        })),
      },
    });
  });
  after(async () => {
    await sb?.close();
  });

  /** A client on the sandbox reading pages of 10, `pageConcurrency` at a time (plain arrays with `accept: application/json`). */
  const pagedClient = (pageConcurrency: number, accept?: string) =>
    createSuccessorClient({
      baseUrl: sb.apiBaseUrl,
      auth: { type: 'apiKey', key: sb.apiKey },
      pageSize: 10,
      pageConcurrency,
      ...(accept === undefined ? {} : { accept }),
    });

  it('reads at most pageConcurrency pages ahead of the consumer, in order', async () => {
    const client = pagedClient(2);
    try {
      sb.counters.reset();
      const pages = client.streamCollection('/users');
      const users: Record<string, unknown>[] = [];
      const first = await pages.next();
      if (!first.done) users.push(...first.value);
      assert.equal(sb.counters.get('GET /users'), 1, 'nothing is read ahead of the first page');
      const second = await pages.next();
      if (!second.done) users.push(...second.value);
      const read = sb.counters.get('GET /users');
      assert.ok(read >= 2 && read <= 3, `pages 2 and 3 at most, not all 10 (${read} read)`);
      for await (const page of pages) users.push(...page);
      assert.equal(sb.counters.get('GET /users'), 10);
      assert.deepEqual(
        users.map((user) => user.user),
        Array.from({ length: 95 }, (_, i) => `pupil.${String(i).padStart(3, '0')}`),
        'every user once, in order',
      );
    } finally {
      await client.close();
    }
  });

  /**
   * A successor on loopback that pages its 95 users by `next` links only, without a total (the
   * sandbox always sends one), 10 a page.
   */
  async function nextLinksOnly(): Promise<{ url: string; close(): Promise<void> }> {
    const server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      const page = Number(url.searchParams.get('page') ?? '1');
      const members = Array.from({ length: Math.min(10, 95 - (page - 1) * 10) }, (_, i) => ({
        '@id': `/api/users/${(page - 1) * 10 + i}`,
        user: `pupil.${(page - 1) * 10 + i}`,
      }));
      const view = page < 10 ? { 'hydra:next': `/api/users?itemsPerPage=10&page=${page + 1}` } : {};
      response.writeHead(200, { 'content-type': 'application/ld+json' });
      response.end(JSON.stringify({ 'hydra:member': members, 'hydra:view': view }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
  }

  const readers: { name: string; client(): Promise<{ client: SuccessorClient; close(): Promise<void> }> }[] =
    [
      { name: 'counted pages', client: async () => ({ client: pagedClient(1), close: async () => {} }) },
      {
        name: 'plain arrays',
        client: async () => ({ client: pagedClient(1, 'application/json'), close: async () => {} }),
      },
      {
        name: 'next links',
        client: async () => {
          const server = await nextLinksOnly();
          const client = createSuccessorClient({
            baseUrl: server.url,
            auth: { type: 'apiKey', key: 'any' },
            pageSize: 10,
          });
          return { client, close: server.close };
        },
      },
    ];
  for (const reader of readers) {
    it(`holds none of the pages it has passed on while it waits for the next (${reader.name})`, async () => {
      // A page held by the reader while the next one is awaited lives through the young-generation
      // collections of that wait and is promoted; a long list then fills the old generation.
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      const { client, close } = await reader.client();
      try {
        const pages = client.streamCollection('/users');
        // Taken in a function of its own, so that no page stays among this test's own variables.
        const watch = async () => {
          const watched: WeakRef<object>[] = [];
          for (let n = 0; n < 3; n++) {
            const page = await pages.next();
            assert.ok(!page.done && page.value[0]);
            watched.push(new WeakRef(page.value), new WeakRef(page.value[0]));
          }
          return watched;
        };
        const watched = await watch();
        // The reader waits for page 4 meanwhile, as it does while a page is written out.
        const fourth = pages.next();
        // A WeakRef keeps its target until the job that made it has ended.
        await new Promise((resolve) => setImmediate(resolve));
        gc();
        assert.deepEqual(
          watched.map((ref) => ref.deref() === undefined),
          watched.map(() => true),
          'pages 1 to 3 (each page and its first user) are let go',
        );
        assert.equal((await fourth).done, false);
        await pages.return();
      } finally {
        await client.close();
        await close();
      }
    });
  }

  it('mapPages closes its pages on return, on throw and on a failure, and a next under way then ends done', async () => {
    let closed = 0;
    async function* source() {
      try {
        yield 1;
        yield 2;
        yield 3;
      } finally {
        closed++;
      }
    }
    // A caller that hangs up while a page is rendered: the reader is closed (it stops the pages it
    // reads ahead), and the page under way is not handed out after the close.
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const mapped = mapPages(source(), async (n) => {
      if (n === 2) await gate;
      return n * 10;
    });
    assert.deepEqual(await mapped.next(), { done: false, value: 10 });
    const underWay = mapped.next();
    const closing = mapped.return();
    release();
    await closing;
    assert.deepEqual(await underWay, { done: true, value: undefined });
    assert.equal(closed, 1, 'closed on return');
    assert.deepEqual(await mapped.next(), { done: true, value: undefined });

    const failing = mapPages(source(), (n) => {
      if (n === 2) throw new Error('render failed');
      return n;
    });
    assert.deepEqual(await failing.next(), { done: false, value: 1 });
    await assert.rejects(failing.next(), /render failed/);
    assert.equal(closed, 2, 'closed on a failure of map');
    assert.deepEqual(await failing.next(), { done: true, value: undefined });

    // A page read that the close stops (an aborted fetch) ends the next under way done, not failed.
    let returned = 0;
    let abort: (error: Error) => void = () => {};
    const fetching: AsyncIterator<number, void> = {
      next: () =>
        new Promise((_, reject) => {
          abort = reject;
        }),
      return: async () => {
        returned++;
        abort(new Error('This operation was aborted'));
        return { done: true, value: undefined };
      },
    };
    const stopped = mapPages(fetching, (n) => n);
    const pending = stopped.next();
    await stopped.return();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.equal(returned, 1);

    // A failure of the pages themselves closes them too; `throw` closes them and throws.
    let sourceClosed = 0;
    const broken: AsyncIterator<number, void> = {
      next: async () => {
        throw new Error('page 2: 503');
      },
      return: async () => {
        sourceClosed++;
        return { done: true, value: undefined };
      },
    };
    const reading = mapPages(broken, (n) => n);
    await assert.rejects(reading.next(), /page 2: 503/);
    assert.equal(sourceClosed, 1, 'closed on a failure of the pages');
    assert.deepEqual(await reading.next(), { done: true, value: undefined });
    const thrown = mapPages(source(), (n) => n);
    assert.deepEqual(await thrown.next(), { done: false, value: 1 });
    await assert.rejects(thrown.throw(new Error('caller gone')), /caller gone/);
    assert.equal(closed, 3, 'closed on throw');
    assert.deepEqual(await thrown.next(), { done: true, value: undefined });
  });

  it("releaseBody hands over a socket read's buffer, never a small buffer of Buffer's shared pool", () => {
    // A full socket read is 64 KiB; a short one as long as what was read; on Node 24 the pool is
    // 64 KiB too, on Node 20 and 22 8 KiB.
    for (const size of [64 * 1024, Buffer.poolSize, 3000]) {
      const socketRead = Buffer.alloc(size, 0x61);
      const chunk = socketRead.subarray(200, size - 200);
      const pooled = Buffer.from('a small pooled chunk');
      const neighbour = Buffer.from('its neighbour in the pool');
      assert.equal(pooled.buffer, neighbour.buffer, 'both from the shared pool');
      releaseBody([chunk, pooled]);
      assert.equal(socketRead.buffer.byteLength, 0, `the socket read of ${size} bytes is handed over`);
      assert.equal(chunk.length, 0);
      assert.equal(pooled.toString(), 'a small pooled chunk');
      assert.equal(neighbour.toString(), 'its neighbour in the pool');
    }
    // A read as long as the pool that only a small chunk views cannot be told from the pool: left alone.
    const poolSized = Buffer.alloc(Buffer.poolSize, 0x61);
    releaseBody([poolSized.subarray(0, 100)]);
    assert.equal(poolSized.buffer.byteLength, Buffer.poolSize);
  });

  it('reads every page of a successor that answers in chunks (several chunks to one socket read)', async () => {
    const total = 250;
    const server = createServer((request, response) => {
      const page = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('page') ?? '1');
      const members = Array.from(
        { length: Math.max(0, Math.min(100, total - (page - 1) * 100)) },
        (_, i) => ({
          hexUuid: `00000000-0000-4000-8000-${String((page - 1) * 100 + i).padStart(12, '0')}`,
          user: `pupil.${(page - 1) * 100 + i}`,
          firstname: 'Some'.repeat(20),
        }),
      );
      const text = JSON.stringify({ 'hydra:member': members, 'hydra:totalItems': total });
      response.writeHead(200, { 'content-type': 'application/ld+json' });
      // Corked, the chunks of the chunked encoding leave in one write and arrive in one socket read.
      response.cork();
      for (let at = 0; at < text.length; at += 500) response.write(text.slice(at, at + 500));
      response.uncork();
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = createSuccessorClient({
      baseUrl: `http://127.0.0.1:${port}/api`,
      auth: { type: 'apiKey', key: 'not-checked' },
      pageSize: 100,
    });
    try {
      const users: unknown[] = [];
      for await (const page of client.streamCollection('/users')) users.push(...page);
      assert.equal(users.length, total);
    } finally {
      await client.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('releaseBody hands over a socket read that several chunks view once, and no pool, not even an old one', () => {
    // A chunked answer: its chunks are views of one socket read.
    const socketRead = Buffer.alloc(40_000, 0x61);
    const chunks = [socketRead.subarray(10, 20_000), socketRead.subarray(20_010, 39_990)];
    releaseBody(chunks);
    assert.equal(socketRead.buffer.byteLength, 0);
    assert.deepEqual(
      chunks.map((chunk) => chunk.length),
      [0, 0],
    );
    // A small chunk cut from a pool that is no longer the one in use.
    const old = Buffer.from('cut from an old pool');
    const neighbour = Buffer.from('its neighbour');
    for (let i = 0; Buffer.allocUnsafe(1).buffer === old.buffer; i++) assert.ok(i < 1_000_000);
    releaseBody([old]);
    assert.equal(old.toString(), 'cut from an old pool');
    assert.equal(neighbour.toString(), 'its neighbour');
  });

  it('hands the bytes of every page back once the page is parsed', async () => {
    // The bodies as the transport gets them: arrayBuffer() hands over these very bytes, and the
    // transport's Buffer is a view of them (no copy), so a handed-back page shows here as empty.
    const bodies: { size: number; bytes: ArrayBuffer }[] = [];
    const client = createSuccessorClient({
      baseUrl: sb.apiBaseUrl,
      auth: { type: 'apiKey', key: sb.apiKey },
      pageSize: 50,
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        const bytes = await response.arrayBuffer();
        bodies.push({ size: bytes.byteLength, bytes });
        const kept = new Response(null, { status: response.status, headers: response.headers });
        Object.defineProperty(kept, 'arrayBuffer', { value: () => Promise.resolve(bytes) });
        return kept;
      },
    });
    try {
      let users = 0;
      for await (const page of client.streamCollection('/users')) users += page.length;
      assert.equal(users, 95);
      assert.equal(bodies.length, 2);
      for (const { size, bytes } of bodies) {
        assert.ok(size > 0);
        assert.equal(bytes.byteLength, 0, `a page of ${size} bytes is handed back`);
      }
    } finally {
      await client.close();
    }
  });

  it("reads no page ahead with the proxy's successor.pageConcurrency at 1", async () => {
    const proxy = await startUserProxy({ successor: { pageSize: 10, pageConcurrency: 1 } });
    try {
      proxy.resetCounts();
      const pages = proxy.successor.streamCollection('/users');
      await pages.next();
      await pages.next();
      assert.equal(proxy.sandbox.counters.get('GET /users'), 2, 'the first two pages, none ahead');
      await pages.next();
      assert.equal(proxy.sandbox.counters.get('GET /users'), 3);
      await pages.return();
    } finally {
      await proxy.close();
    }
  });
});

describe('a list from which items are deleted while its pages are read', () => {
  // Offset paging: deleting items from a page already read shifts the first items of the next
  // page back onto it, and neither read held them. Users who still existed were left out of a
  // 200 list without a word.
  let sb: RunningSandbox;
  const names = Array.from({ length: 95 }, (_, i) => `pupil.${String(i).padStart(3, '0')}`);
  beforeEach(async () => {
    sb = await sandbox({
      seed: false,
      fixture: { users: names.map((user) => ({ user, firstname: 'Pupil', lastname: user })) },
    });
  });
  afterEach(async () => {
    await sb?.close();
  });
  const purge = (...accounts: string[]) => {
    for (const account of accounts) {
      const id = [...sb.data.users.values()].find((user) => user.user === account)?.id;
      assert.ok(id && sb.data.purge('users', id), account);
    }
  };
  /** Reads page one (pages of 10, one at a time), runs `meanwhile`, then reads the rest. */
  const readWith = async (meanwhile: () => void): Promise<string[]> => {
    const client = createSuccessorClient({
      baseUrl: sb.apiBaseUrl,
      auth: { type: 'apiKey', key: sb.apiKey },
      pageSize: 10,
      pageConcurrency: 1,
    });
    try {
      const pages = client.streamCollection('/users');
      const read: string[] = [];
      const first = await pages.next();
      if (!first.done) read.push(...first.value.map((user) => String(user.user)));
      meanwhile();
      for await (const page of pages) read.push(...page.map((user) => String(user.user)));
      return read;
    } finally {
      await client.close();
    }
  };

  it('reads the page before again and answers every item that is still there, once, in order', async () => {
    // Page one held pupil.003 and .004 when it was read; pupil.010 and .011 then moved onto it.
    assert.deepEqual(await readWith(() => purge('pupil.003', 'pupil.004')), names);
    // Deleted from a page not yet read: nothing shifted past a page read, nothing lost.
    assert.deepEqual(
      await readWith(() => purge('pupil.050')),
      names.filter((name) => !['pupil.003', 'pupil.004', 'pupil.050'].includes(name)),
    );
  });

  it('answers every live item when more than a page was deleted around the page read (the page read again still holds one of its own)', async () => {
    // pupil.001–.012 go after page one (.000–.009) was read: .010–.012 are never seen, and
    // page one read again (.000, .013–.021) still holds .000, so nothing live moved out of reach.
    const read = await readWith(() => purge(...names.slice(1, 13)));
    assert.deepEqual(
      read,
      names.filter((name) => !['pupil.010', 'pupil.011', 'pupil.012'].includes(name)),
    );
  });
});

describe('a collection that changes while its pages are read (a pager of a few lines)', () => {
  // Items `u000`…; `changes[n]` runs before the n-th page read. Pages of 10 by number, with the
  // total as it is at each read and a `next` link while items follow.
  const read = async (
    count: number,
    changes: Record<number, (items: string[]) => void>,
    options: { concurrency?: number; firstTotal?: number } = {},
  ) => {
    const items = Array.from({ length: count }, (_, i) => `u${String(i).padStart(3, '0')}`);
    let reads = 0;
    const fetchPage = async (url: URL) => {
      reads += 1;
      changes[reads]?.(items);
      const page = Number(url.searchParams.get('page') ?? '1');
      const members = items
        .slice((page - 1) * 10, page * 10)
        .map((id) => ({ '@id': `/api/users/${id}`, id }));
      const body = {
        'hydra:member': members,
        'hydra:totalItems':
          reads === 1 && options.firstTotal !== undefined ? options.firstTotal : items.length,
        ...(page * 10 < items.length
          ? { 'hydra:view': { 'hydra:next': `/api/users?page=${page + 1}` } }
          : {}),
      };
      return () => structuredClone(body);
    };
    const answered: string[] = [];
    const settings = {
      apiBase: { origin: 'http://idm.test', basePath: '/api' },
      concurrency: options.concurrency ?? 1,
      maxPages: 100,
      pageParam: 'page',
      logger: silentLogger(),
    };
    for await (const page of streamAllPages(new URL('http://idm.test/api/users?page=1'), fetchPage, settings))
      answered.push(...page.map((item) => String(item.id)));
    return { answered, items };
  };
  const once = (values: string[]) => new Set(values).size === values.length;

  it('answers the items a deletion shifted back onto a page read, once, in order (page after page, or four at once)', async () => {
    for (const concurrency of [1, 4]) {
      const { answered, items } = await read(40, { 2: (list) => list.splice(3, 2) }, { concurrency });
      // The two deleted were on page one when it was read; the rest are all there.
      assert.deepEqual(
        answered.filter((id) => items.includes(id)),
        items,
        `concurrency ${concurrency}`,
      );
      assert.ok(once(answered));
    }
  });

  it('takes deletions behind the read position, more than a page of them too, for what they are: nothing lost', async () => {
    // A whole class deleted at the end of the year while a sync lists the users: a 502 before.
    const { answered, items } = await read(40, { 3: (list) => list.splice(28, 12) });
    assert.deepEqual(answered, items);
  });

  it('follows the next links of a total counted too low, also when the collection shrank meanwhile', async () => {
    // Counted 25; 15 added before page two; 5 deleted at the end before page three: the re-read
    // skipped the next links, and five live items were missing from a 200.
    const { answered, items } = await read(
      25,
      {
        2: (list) => list.push(...Array.from({ length: 15 }, (_, i) => `v${String(i).padStart(3, '0')}`)),
        3: (list) => list.splice(35, 5),
      },
      { firstTotal: 25 },
    );
    assert.deepEqual(answered, items);
  });

  it('answers no item twice when an insert before the page read again pushes one onto it', async () => {
    const { answered } = await read(40, {
      3: (list) => list.splice(37, 3),
      4: (list) => list.unshift('new'),
    });
    assert.ok(once(answered), answered.join(','));
  });

  it('takes the page read again whole when exactly a page was deleted before it: it moved in whole', async () => {
    const original = Array.from({ length: 40 }, (_, i) => `u${String(i).padStart(3, '0')}`);
    const { answered } = await read(40, { 2: (list) => list.splice(0, 10) });
    assert.deepEqual(answered, original, 'page one as read, then everything after it');
  });

  it('fails (bad_response) when more than a page was deleted before the read position: what moved further back is out of reach', async () => {
    await assert.rejects(
      read(40, { 2: (list) => list.splice(0, 12) }),
      (error: Error & { code?: string }) =>
        error.code === 'bad_response' &&
        /holds none of the items it held when it was read/.test(error.message),
    );
  });
});
