// Successor-client behaviour the sandbox cannot be made to show (foreign-origin links, servers
// that ignore `page`, broken bodies, dropped connections), against small loopback servers.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createLogger } from '../src/lib/logger.js';
import { type CallStats, combineObservers, type SuccessorCallEvent } from '../src/observe/observer.js';
import {
  countingCalls,
  createSuccessorClient,
  type SuccessorClientOptions,
} from '../src/successor/client.js';
import { mayHaveBeenApplied, UpstreamError } from '../src/successor/errors.js';
import { LogSink } from './log-sink.js';
import {
  fakeItems,
  type LoopbackServer,
  sendJson,
  startFullListener,
  startLoopback,
} from './successor-helpers.js';

const API = '/iserv/idm/api/v1';
const servers: LoopbackServer[] = [];
after(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

async function loopback(handler: Parameters<typeof startLoopback>[0]): Promise<LoopbackServer> {
  const server = await startLoopback(handler);
  servers.push(server);
  return server;
}

function clientFor(server: LoopbackServer, extra: Partial<SuccessorClientOptions> = {}) {
  return createSuccessorClient({
    baseUrl: `${server.url}${API}`,
    auth: { type: 'apiKey', key: 'loopback-key' },
    retries: { max: 2, baseDelayMs: 1 },
    ...extra,
  });
}

function isUpstream(code: UpstreamError['code']) {
  return (error: unknown) => {
    assert.ok(error instanceof UpstreamError, `expected an UpstreamError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

describe('collections against loopback servers', () => {
  test('a next link to a foreign origin is refused and nothing is fetched there', async () => {
    const foreign = await loopback((_req, res) => sendJson(res, 200, { 'hydra:member': fakeItems(1, 999) }));
    const server = await loopback((_req, res) =>
      sendJson(
        res,
        200,
        {
          'hydra:member': fakeItems(2),
          'hydra:view': { 'hydra:next': `${foreign.url}${API}/users?page=2` },
        },
        'application/ld+json',
      ),
    );
    const client = clientFor(server);
    await assert.rejects(client.readCollection('/users'), (error: unknown) => {
      isUpstream('bad_response')(error);
      assert.match((error as Error).message, /another origin/);
      return true;
    });
    assert.equal(foreign.requests.length, 0);
    assert.equal(server.requests.length, 1);
    await client.close();
  });

  test('a next link to another path on the same origin is refused: no credentials outside the API, no other collection', async () => {
    for (const next of [
      '/iserv/admin/api/dump?page=2',
      `${API}/groups?page=2`,
      `${API}/users/1/members?page=2`,
    ]) {
      const server = await loopback((req, res) =>
        req.url.pathname === `${API}/users`
          ? sendJson(res, 200, { 'hydra:member': fakeItems(10), 'hydra:view': { 'hydra:next': next } })
          : sendJson(res, 200, { 'hydra:member': [{ '@id': `${API}/groups/1`, group: 'g' }] }),
      );
      const client = clientFor(server, { pageSize: 10 });
      await assert.rejects(client.readCollection('/users'), (error: unknown) => {
        isUpstream('bad_response')(error);
        assert.match((error as Error).message, /links its next page to another path/);
        return true;
      });
      assert.deepEqual(
        server.requests.map((request) => request.url.pathname),
        [`${API}/users`],
        `${next}: nothing fetched there (with the API key)`,
      );
      await client.close();
    }
  });

  test('same-origin next links (relative IRIs, no total) are followed in order', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      const body: Record<string, unknown> = { member: fakeItems(10, (page - 1) * 10) };
      if (page < 3) body.view = { next: `${API}/users?itemsPerPage=10&page=${page + 1}` };
      sendJson(res, 200, body, 'application/ld+json');
    });
    const client = clientFor(server, { pageSize: 10 });
    const items = await client.readCollection('/users');
    assert.equal(items.length, 30);
    assert.equal(new Set(items.map((item) => item['@id'])).size, 30);
    assert.deepEqual(
      server.requests.map((r) => r.url.searchParams.get('page')),
      [null, '2', '3'],
    );
    await client.close();
  });

  test('a next link back to a page already read is a loop however it is spelled: parameters in another order, some left out, a page number with a leading zero', async () => {
    for (const back of [
      `${API}/users?page=1&itemsPerPage=10`,
      `${API}/users?page=1`,
      `${API}/users?itemsPerPage=10&page=01`,
      `${API}/users?itemsPerPage=10&page=1&extra=x`,
    ]) {
      const server = await loopback((req, res) => {
        const page = Number(req.url.searchParams.get('page') ?? '1');
        const view = { next: page === 1 ? `${API}/users?itemsPerPage=10&page=2` : back };
        sendJson(res, 200, { member: fakeItems(10, (page - 1) * 10), view }, 'application/ld+json');
      });
      const client = clientFor(server, { pageSize: 10 });
      // Streamed as the legacy lists are, which drop repeats only of the page before: the loop
      // would otherwise hand page 1's users out twice.
      const read = async () => {
        const items: unknown[] = [];
        for await (const page of client.streamCollection('/users')) items.push(...page);
        return items;
      };
      await assert.rejects(read(), (error: unknown) => {
        isUpstream('bad_response')(error);
        assert.match((error as Error).message, /links back to a page already read/, back);
        return true;
      });
      assert.equal(server.requests.length, 2, `${back}: the link back is not fetched`);
      await client.close();
    }
  });

  test('a next link that leaves out or changes a parameter of the first page is refused, never followed: another query (a filter dropped) or the first page again', async () => {
    for (const link of [
      `${API}/users?itemsPerPage=10`,
      `${API}/users?itemsPerPage=10&deleted=true&page=2`,
      `${API}/users?deleted=false&deleted=true&itemsPerPage=10&page=2`,
    ]) {
      const server = await loopback((req, res) => {
        const page = Number(req.url.searchParams.get('page') ?? '1');
        const view = { next: page === 1 ? `${API}/users?deleted=false&itemsPerPage=10&page=2` : link };
        sendJson(res, 200, { member: fakeItems(10, (page - 1) * 10), view }, 'application/ld+json');
      });
      const client = clientFor(server, { pageSize: 10 });
      await assert.rejects(
        client.readCollection('/users', { query: { deleted: 'false' } }),
        (error: unknown) => {
          isUpstream('bad_response')(error);
          assert.match(
            (error as Error).message,
            /links its next page to another query \(without the first page's deleted=false\)/,
            link,
          );
          return true;
        },
      );
      assert.equal(server.requests.length, 2, `${link}: not fetched`);
      await client.close();
    }
  });

  test('a server that counts pages from 0 and announces its total: the second page is the one its first page links, none is skipped', async () => {
    const all = fakeItems(25);
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '0');
      const body: Record<string, unknown> = {
        'hydra:member': all.slice(page * 10, page * 10 + 10),
        'hydra:totalItems': 25,
      };
      if (page < 2) body['hydra:view'] = { 'hydra:next': `${API}/users?itemsPerPage=10&page=${page + 1}` };
      sendJson(res, 200, body, 'application/ld+json');
    });
    const client = clientFor(server, { pageSize: 10 });
    const items = await client.readCollection('/users');
    assert.deepEqual(
      items.map((item) => item['@id']),
      all.map((item) => item['@id']),
    );
    assert.deepEqual(server.requests.map((request) => request.url.searchParams.get('page')).sort(), [
      '1',
      '2',
      null,
    ]);
    await client.close();
  });

  test("next links are followed whatever the first page's number, and by their parameters where the number stays (a cursor)", async () => {
    const cases: [string, (page: number) => string][] = [
      // A cursor, no page number.
      ['cursor', (after) => `${API}/users?after=${after}&itemsPerPage=10`],
      // A cursor beside a page number that never changes.
      ['constant page', (after) => `${API}/users?page=1&after=${after}&itemsPerPage=10`],
      // Pages counted from 0: the first page (read without a number) is page 0, its next page 1.
      ['zero-based', (after) => `${API}/users?itemsPerPage=10&page=${after / 10}`],
    ];
    for (const [name, link] of cases) {
      const server = await loopback((req, res) => {
        const after =
          name === 'zero-based'
            ? Number(req.url.searchParams.get('page') ?? '0') * 10
            : Number(req.url.searchParams.get('after') ?? '0');
        const body: Record<string, unknown> = { member: fakeItems(10, after) };
        if (after < 20) body.view = { next: link(after + 10) };
        sendJson(res, 200, body, 'application/ld+json');
      });
      const client = clientFor(server, { pageSize: 10 });
      assert.equal((await client.readCollection('/users')).length, 30, name);
      assert.equal(server.requests.length, 3, name);
      await client.close();
    }
  });

  for (const prefix of ['hydra:', ''] as const) {
    test(`Hydra ${prefix === '' ? 'without' : 'with'} the prefix and no totalItems: 95 items by next links, one page after the other`, async () => {
      const all = fakeItems(95);
      let inFlight = 0;
      let maxInFlight = 0;
      const server = await loopback(async (req, res) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 10));
        inFlight--;
        const size = Number(req.url.searchParams.get('itemsPerPage'));
        const page = Number(req.url.searchParams.get('page') ?? '1');
        const body: Record<string, unknown> = {
          '@type': `${prefix}Collection`,
          [`${prefix}member`]: all.slice((page - 1) * size, page * size),
        };
        const view: Record<string, unknown> = { '@id': `${API}/users?itemsPerPage=${size}&page=${page}` };
        if (page * size < all.length)
          view[`${prefix}next`] = `${API}/users?itemsPerPage=${size}&page=${page + 1}`;
        body[`${prefix}view`] = view;
        sendJson(res, 200, body, 'application/ld+json');
      });
      const client = clientFor(server, { pageSize: 30, pageConcurrency: 4 });
      const items = await client.readCollection('/users');
      assert.deepEqual(
        items.map((item) => item['@id']),
        all.map((item) => item['@id']),
        'all 95, in order, none twice',
      );
      assert.deepEqual(
        server.requests.map((r) => `${r.url.pathname}${r.url.search}`),
        [
          `${API}/users?itemsPerPage=30`,
          `${API}/users?itemsPerPage=30&page=2`,
          `${API}/users?itemsPerPage=30&page=3`,
          `${API}/users?itemsPerPage=30&page=4`,
        ],
      );
      assert.equal(maxInFlight, 1, 'without a total the pages are read one after the other');
      await client.close();
    });
  }

  // JSON-LD: `hydra:member` and `member` are one term; a server may mix them (API Platform 4.0 left
  // the prefix on some keys with `hydra_prefix: false` until a later fix). A key in the other spelling must not end the list early.
  for (const keys of [
    { member: 'member', view: 'hydra:view', next: 'hydra:next', total: undefined },
    { member: 'hydra:member', view: 'view', next: 'next', total: undefined },
    { member: 'member', view: 'view', next: 'hydra:next', total: undefined },
    { member: 'member', view: 'view', next: 'next', total: 'hydra:totalItems' },
    { member: 'hydra:member', view: 'hydra:view', next: 'hydra:next', total: 'totalItems' },
  ]) {
    test(`Hydra keys in both spellings (${Object.values(keys).filter(Boolean).join(', ')}): every item`, async () => {
      const all = fakeItems(25);
      const server = await loopback((req, res) => {
        const page = Number(req.url.searchParams.get('page') ?? '1');
        const body: Record<string, unknown> = { [keys.member]: all.slice((page - 1) * 10, page * 10) };
        if (keys.total !== undefined) body[keys.total] = all.length;
        if (page < 3) body[keys.view] = { [keys.next]: `${API}/users?itemsPerPage=10&page=${page + 1}` };
        sendJson(res, 200, body, 'application/ld+json');
      });
      const client = clientFor(server, { pageSize: 10 });
      const items = await client.readCollection('/users');
      assert.deepEqual(
        items.map((item) => item['@id']),
        all.map((item) => item['@id']),
      );
      assert.equal(server.requests.length, 3);
      await client.close();
    });
  }

  test('a next link back to a page already read stops with bad_response', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, {
        'hydra:member': fakeItems(5, page * 5),
        'hydra:view': { 'hydra:next': `${API}/users?itemsPerPage=5&page=${page === 1 ? 2 : 1}` },
      });
    });
    const client = clientFor(server, { pageSize: 5 });
    await assert.rejects(
      client.readCollection('/users', { query: { itemsPerPage: '5', page: '1' } }),
      isUpstream('bad_response'),
    );
    assert.equal(server.requests.length, 2);
    await client.close();
  });

  test('a plain-array server that ignores page fails with bad_response instead of looping', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, fakeItems(10)));
    const client = clientFor(server, { pageSize: 10 });
    await assert.rejects(client.readCollection('/users'), (error: unknown) => {
      isUpstream('bad_response')(error);
      assert.match((error as Error).message, /ignore the page parameter/);
      return true;
    });
    assert.equal(server.requests.length, 2);
    await client.close();
  });

  test('a plain-array server that does not paginate at all: every item when it answers more than asked', async () => {
    // The whole collection on every page, whatever page and itemsPerPage say: more than asked on
    // page 1, and the same again on page 2, is a server that does not paginate.
    const server = await loopback((_req, res) => sendJson(res, 200, fakeItems(150)));
    const client = clientFor(server, { pageSize: 100, accept: 'application/json' });
    const items = await client.readCollection('/users');
    assert.equal(items.length, 150);
    assert.equal(new Set(items.map((item) => item['@id'])).size, 150, 'no item twice');
    assert.equal(server.requests.length, 2);
    await client.close();
    // Fewer than asked, and the same again: it may as well cap its pages and ignore the page
    // number (a wrong paging.page), with more to come; a 502 saying both, not a list cut short.
    const small = await loopback((_req, res) => sendJson(res, 200, fakeItems(30)));
    const smallClient = clientFor(small, { pageSize: 100, accept: 'application/json' });
    await assert.rejects(smallClient.readCollection('/users'), (error: unknown) => {
      assert.ok(error instanceof UpstreamError && error.code === 'bad_response', String(error));
      assert.match(error.message, /paging\.page.*or does not paginate/);
      return true;
    });
    await smallClient.close();
  });

  test('a plain-array server that ignores itemsPerPage but pages: every page of its own size', async () => {
    const all = fakeItems(250);
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, all.slice((page - 1) * 120, page * 120));
    });
    const client = clientFor(server, { pageSize: 100, accept: 'application/json' });
    const items = await client.readCollection('/users');
    assert.deepEqual(
      items.map((item) => item['@id']),
      all.map((item) => item['@id']),
    );
    await client.close();
  });

  test('a Hydra server that announces a total but ignores page fails with bad_response', async () => {
    const server = await loopback((_req, res) =>
      sendJson(res, 200, { 'hydra:member': fakeItems(10), 'hydra:totalItems': 35 }),
    );
    const client = clientFor(server, { pageSize: 10 });
    await assert.rejects(client.readCollection('/users'), isUpstream('bad_response'));
    assert.ok(server.requests.length <= 4);
    await client.close();
  });

  test('an empty counted page with items after it fails with bad_response; empty last pages are items deleted meanwhile', async () => {
    // Page 2 of 5 empty, pages 3-5 full: the list came back 10 items short, without a word.
    const skipping = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, {
        'hydra:member': page === 2 ? [] : fakeItems(10, (page - 1) * 10),
        'hydra:totalItems': 50,
      });
    });
    const client = clientFor(skipping, { pageSize: 10 });
    await assert.rejects(
      client.readCollection('/users'),
      (error: unknown) =>
        isUpstream('bad_response')(error) &&
        /page=2 is empty, but page 3 after it is not \(of 50 items announced\)/.test(
          (error as Error).message,
        ),
    );
    await client.close();
    // Pages 4 and 5 empty: the last items went while the list was read; 30 items, no failure.
    const shrinking = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, {
        'hydra:member': page >= 4 ? [] : fakeItems(10, (page - 1) * 10),
        'hydra:totalItems': 50,
      });
    });
    const after = clientFor(shrinking, { pageSize: 10 });
    assert.equal((await after.readCollection('/users')).length, 30);
    await after.close();
  });

  test('a totalItems that overstates by more than a page: the items there are, every announced page read, and a warning', async () => {
    const all = fakeItems(24);
    /** The 24 items 10 a page, each page announcing `totalOf(page)`; the warnings of reads of `paths` through it. */
    const read = async (totalOf: (page: number) => number, paths = ['/users']) => {
      const server = await loopback((req, res) => {
        const page = Number(req.url.searchParams.get('page') ?? '1');
        const member = all.slice((page - 1) * 10, page * 10);
        sendJson(res, 200, { 'hydra:member': member, 'hydra:totalItems': totalOf(page) });
      });
      const sink = new LogSink();
      const client = clientFor(server, {
        pageSize: 10,
        logger: createLogger({ level: 'info', destination: sink }),
      });
      for (const path of paths) assert.equal((await client.readCollection(path)).length, 24);
      await client.close();
      return { requests: server.requests.length, warnings: sink.lines().filter((line) => line.level === 40) };
    };
    // Read twice: told once per collection route, not on every read, nor once per entity's collection.
    const stale = await read(() => 100, ['/users', '/users']);
    assert.equal(stale.requests, 20, 'every announced page, each time');
    const perEntity = await read(
      () => 100,
      [
        '/users/3f2a9c1e-0b7d-4e55-9a61-2c8d4f7b1e90/groups',
        '/users/7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f/groups',
      ],
    );
    assert.equal(perEntity.warnings.length, 1, JSON.stringify(perEntity.warnings));
    assert.equal(stale.warnings.length, 1, JSON.stringify(stale.warnings));
    assert.match(
      String(stale.warnings[0]?.msg),
      /^collection shorter than the 100 items its pages announce: 24 items on 10 pages read/,
    );
    // Deleted while read: the later pages' totals say so, and that is no stale count.
    assert.deepEqual((await read((page) => (page === 1 ? 100 : 24))).warnings, []);
    // A last page emptied by deletions while the list was read (less than a page short): no warning.
    assert.deepEqual((await read(() => 31)).warnings, []);
  });

  test('a totalItems counted before items were added: the next links of the full last counted page are followed', async () => {
    const all = fakeItems(35);
    for (const stale of [20, 10]) {
      const server = await loopback((req, res) => {
        const page = Number(req.url.searchParams.get('page') ?? '1');
        sendJson(res, 200, {
          'hydra:member': all.slice((page - 1) * 10, page * 10),
          'hydra:totalItems': stale,
          'hydra:view':
            page * 10 < all.length ? { 'hydra:next': `${API}/users?itemsPerPage=10&page=${page + 1}` } : {},
        });
      });
      const client = clientFor(server, { pageSize: 10 });
      const items = await client.readCollection('/users');
      assert.deepEqual(
        items.map((item) => item['@id']),
        all.map((item) => item['@id']),
        `totalItems ${stale}: every item, in order`,
      );
      assert.equal(server.requests.length, 4);
      await client.close();
    }
  });

  test('a stale totalItems whose next links never end stops at maxPages with bad_response', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, {
        'hydra:member': fakeItems(2, page * 2),
        'hydra:totalItems': 4,
        'hydra:view': { 'hydra:next': `${API}/users?itemsPerPage=2&page=${page + 1}` },
      });
    });
    const client = clientFor(server, { pageSize: 2, maxPages: 5 });
    await assert.rejects(client.readCollection('/users'), isUpstream('bad_response'));
    assert.equal(server.requests.length, 5);
    await client.close();
  });

  test('more pages than maxPages fail with bad_response', async () => {
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      sendJson(res, 200, fakeItems(2, page * 2));
    });
    const client = clientFor(server, { pageSize: 2, maxPages: 5 });
    await assert.rejects(client.readCollection('/users'), isUpstream('bad_response'));
    assert.equal(server.requests.length, 5);
    await client.close();
  });

  test('remaining pages are fetched concurrently, never more than pageConcurrency at once', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const server = await loopback(async (req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 30));
      inFlight--;
      const page = Number(req.url.searchParams.get('page') ?? '1');
      const count = page < 10 ? 10 : 5;
      sendJson(res, 200, { 'hydra:member': fakeItems(count, (page - 1) * 10), 'hydra:totalItems': 95 });
    });
    const client = clientFor(server, { pageSize: 10, pageConcurrency: 3 });
    const items = await client.readCollection('/users');
    assert.equal(items.length, 95);
    assert.equal(server.requests.length, 10);
    assert.equal(maxInFlight, 3);
    await client.close();
  });

  // Six pages of ten (items 0-59); inserts while the collection is read shift page 3 back by two
  // items (18-27: it repeats 18 and 19 of page 2) and page 6 by twenty-one (29-38: it repeats
  // 30-38 of page 4, two pages back).
  function shiftingServer() {
    return loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      const start = (page - 1) * 10 - (page === 3 ? 2 : 0) - (page === 6 ? 21 : 0);
      sendJson(res, 200, { 'hydra:member': fakeItems(10, start), 'hydra:totalItems': 60 });
    });
  }

  test('a streamed read ended early aborts the pages still running', async () => {
    let closedUnanswered = 0;
    let heldBack = 0;
    const server = await loopback((req, res) => {
      const page = Number(req.url.searchParams.get('page') ?? '1');
      const body = { 'hydra:member': fakeItems(10, (page - 1) * 10), 'hydra:totalItems': 60 };
      if (page <= 2) return sendJson(res, 200, body, 'application/ld+json');
      // Pages 3 and later are never answered: only the client's abort ends them.
      heldBack++;
      res.on('close', () => closedUnanswered++);
    });
    const client = clientFor(server, { pageSize: 10, pageConcurrency: 3 });
    let taken = 0;
    for await (const page of client.streamCollection('/users')) {
      assert.equal(page.length, 10);
      // The second page asks for the next ones (3 and 4, three pages at a time); once the server
      // holds both, the caller stops.
      if (++taken === 2) {
        for (let i = 0; i < 100 && heldBack < 2; i++) await new Promise((r) => setTimeout(r, 20));
        break;
      }
    }
    assert.equal(heldBack, 2, 'pages 3 and 4 were asked for');
    for (let i = 0; i < 100 && closedUnanswered < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(closedUnanswered, 2, 'both were aborted when the caller stopped');
    await client.close();
  });

  test('a read of the whole collection drops every repeated item, however far back its first copy', async () => {
    const client = clientFor(await shiftingServer(), { pageSize: 10 });
    const ids = (await client.readCollection('/users')).map((item) => item['@id']);
    assert.equal(ids.length, new Set(ids).size, 'no item twice');
    assert.equal(ids.length, 60 - 2 - 9);
    await client.close();
  });

  test('a streamed read drops items repeated from the same or the previous page, and holds no more keys than that', async () => {
    const client = clientFor(await shiftingServer(), { pageSize: 10 });
    const pages: string[][] = [];
    for await (const page of client.streamCollection('/users'))
      pages.push(page.map((item) => String(item['@id'])));
    const [, , third, , , sixth] = pages;
    // Page 3 repeats two items of page 2: both dropped.
    assert.deepEqual(
      third,
      fakeItems(8, 20).map((item) => item['@id']),
    );
    // Page 6 repeats items of page 4, two pages back: beyond the window, so they pass (a shift
    // that large needs more than a page's worth of inserts while the pages are read).
    assert.deepEqual(
      sixth,
      fakeItems(10, 29).map((item) => item['@id']),
    );
    await client.close();
  });
});

describe('requests against loopback servers', () => {
  test('query arrays become repeated keys; a key ending in [] keeps its brackets', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, {}));
    const client = clientFor(server);
    await client.request({
      method: 'GET',
      path: `${API}/users`,
      query: { uuid: ['a', 'b'], 'id[]': ['c', 'd'], _attributes: 'user,groups.hexUuid', skip: undefined },
    });
    const url = server.requests[0]?.url;
    assert.ok(url);
    assert.equal(url.pathname, `${API}/users`);
    assert.deepEqual(url.searchParams.getAll('uuid'), ['a', 'b']);
    assert.deepEqual(url.searchParams.getAll('id[]'), ['c', 'd']);
    assert.equal(url.searchParams.get('_attributes'), 'user,groups.hexUuid');
    assert.equal(url.searchParams.has('skip'), false);
    assert.equal(server.requests[0]?.headers['x-iserv-authentication'], 'loopback-key');
    assert.equal(server.requests[0]?.headers.accept, 'application/ld+json, application/json');
    await client.close();
  });

  test('sends values that look like credentials as they are, and redacts them only on its debug line', async () => {
    // The redaction of the debug line was applied to the call itself: a flag named "Basic 2FA"
    // was looked up as "[redacted]", and a parameter named like a secret lost its value.
    const server = await loopback((_req, res) => sendJson(res, 200, {}));
    const sink = new LogSink();
    const client = clientFor(server, { logger: createLogger({ level: 'debug', destination: sink }) });
    const query = { name: 'Basic 2FA', user: 'ada;token=q', pageToken: 'abc' };
    await client.request({ method: 'GET', path: `${API}/users/Bearer%20eyJ0.e30.Sig-7`, query });
    const url = server.requests[0]?.url;
    assert.equal(url?.pathname, `${API}/users/Bearer%20eyJ0.e30.Sig-7`);
    assert.deepEqual(Object.fromEntries(url?.searchParams ?? []), query);
    const logged = sink.lines().find((line) => line.msg === 'successor call');
    const path = String((logged?.successor as { path?: unknown } | undefined)?.path);
    // "Basic 2FA" reads as a name (a word of letters and digits, short), so it stays there too.
    assert.equal(path, `${API}/users/[redacted]?name=Basic+2FA&user=[redacted]&pageToken=[redacted]`);
    await client.close();
  });

  test('a body that arrives in pieces, a character split between two of them and a byte order mark first, reads as one', async () => {
    const member = (n: number) => ({
      '@id': `${API}/users/${n}`,
      user: `jürgen.müller${n}`,
      note: '€'.repeat(20_000),
    });
    const bodies: Record<string, unknown> = {
      '1': member(1),
      '2': { 'hydra:member': [member(1)], 'hydra:totalItems': 2 },
      '3': { 'hydra:member': [member(2)], 'hydra:totalItems': 2 },
    };
    const server = await loopback(async (req, res) => {
      const key = req.url.pathname.endsWith('/users/1')
        ? '1'
        : req.url.searchParams.get('page') === '2'
          ? '3'
          : '2';
      const bytes = Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(JSON.stringify(bodies[key])),
      ]);
      res.writeHead(200, { 'content-type': 'application/ld+json', 'content-length': bytes.length });
      // Cut inside the two-byte "ü" and inside a three-byte "€"; separate writes, apart in time.
      let from = 0;
      for (const cut of [
        bytes.indexOf(Buffer.from('ü')) + 1,
        bytes.indexOf(Buffer.from('€')) + 2,
        bytes.length,
      ]) {
        res.write(bytes.subarray(from, cut));
        from = cut;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      res.end();
    });
    const client = clientFor(server, { pageSize: 1 });
    const response = await client.request({ method: 'GET', path: '/users/1' });
    assert.deepEqual(response.body, member(1));
    // The second page waits in pieces and is parsed when its turn comes.
    assert.deepEqual(await client.readCollection('/users'), [member(1), member(2)]);
    await client.close();
  });

  test('a body in one piece with a byte order mark first reads without it', async () => {
    const server = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"user":"jürgen"}')]));
    });
    const client = clientFor(server);
    assert.deepEqual((await client.request({ method: 'GET', path: '/users/1' })).body, { user: 'jürgen' });
    await client.close();
  });

  test("a path's own query is kept and the query added after it; a fragment is never sent", async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, {}));
    const client = clientFor(server);
    await client.request({ method: 'GET', path: `${API}/users?page=2#top`, query: { itemsPerPage: '5' } });
    await client.request({ method: 'GET', path: `${API}/groups#x`, query: { group: 'a b' } });
    assert.deepEqual(
      server.requests.map((request) => `${request.url?.pathname}${request.url?.search}`),
      [`${API}/users?page=2&itemsPerPage=5`, `${API}/groups?group=a+b`],
    );
    await client.close();
  });

  test('paths outside the API base and foreign absolute URLs are refused before sending', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, {}));
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/../../../etc' }), TypeError);
    await assert.rejects(
      client.request({ method: 'GET', path: 'http://203.0.113.9/iserv/idm/api/v1/users' }),
      isUpstream('bad_response'),
    );
    assert.equal(server.requests.length, 0);
    await client.close();
  });

  test('a path that looks like another host (//host/…) stays on the successor, also with the API at the root', async () => {
    const foreign = await loopback((_req, res) => sendJson(res, 200, { foreign: true }));
    const server = await loopback((_req, res) => sendJson(res, 200, { here: true }));
    const foreignHost = new URL(foreign.url).host;
    const client = createSuccessorClient({
      baseUrl: server.url,
      auth: { type: 'apiKey', key: 'loopback-key' },
    });
    const answer = await client.request({ method: 'GET', path: `//${foreignHost}/users` });
    assert.deepEqual(answer.body, { here: true });
    assert.equal(foreign.requests.length, 0, 'the API key went to another host');
    assert.equal(server.requests.length, 1);
    await client.close();
  });

  test('a 2xx that is not JSON, or a redirect, is bad_response', async () => {
    const server = await loopback((req, res) => {
      if (req.url.pathname.endsWith('/html')) {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>login</html>');
      } else if (req.url.pathname.endsWith('/broken')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"hydra:member": [');
      } else {
        res.writeHead(302, { location: 'https://elsewhere.example/' });
        res.end();
      }
    });
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/html' }), isUpstream('bad_response'));
    await assert.rejects(client.request({ method: 'GET', path: '/broken' }), isUpstream('bad_response'));
    await assert.rejects(client.request({ method: 'GET', path: '/moved' }), isUpstream('bad_response'));
    await client.close();
  });

  describe('answers larger than maxResponseBytes', () => {
    const CAP = 64 * 1024;
    const tooLarge = (error: unknown) => {
      isUpstream('bad_response')(error);
      assert.match((error as Error).message, /larger than 65536 bytes \(successor\.maxResponseBytes\)/);
      return true;
    };
    // What the server got written before the client gave up, and whether it had to stop.
    let written = 0;
    let cut = false;
    const server = async () =>
      loopback(async (req, res) => {
        written = 0;
        cut = false;
        res.on('close', () => {
          cut = !res.writableFinished;
        });
        if (req.url.pathname.endsWith('/announced')) {
          // Announces 1 MiB and sends it slowly: refused on the length, before the body.
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1024 * 1024 });
          res.write('[');
          return;
        }
        if (req.url.pathname.endsWith('/exact')) {
          const body = JSON.stringify('a'.repeat(CAP - 2));
          return sendJson(res, 200, JSON.parse(body));
        }
        // Chunked, without a length, and without an end: only counting the bytes stops it.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('["');
        const chunk = Buffer.alloc(16 * 1024, 'a');
        const closed = new Promise((resolve) => res.once('close', resolve));
        while (!res.destroyed && written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk))
            await Promise.race([new Promise((resolve) => res.once('drain', resolve)), closed]);
        }
        res.end('"]');
      });

    for (const transport of ['the pool', 'an injected fetch'] as const) {
      test(`through ${transport}: refused at the announced length (the pool: also at the cap while it arrives), a 502 naming the setting, never retried`, async () => {
        const loop = await server();
        const client = clientFor(loop, {
          maxResponseBytes: CAP,
          ...(transport === 'the pool' ? {} : { fetch }),
        });
        await assert.rejects(client.request({ method: 'GET', path: '/announced' }), tooLarge);
        await assert.rejects(client.request({ method: 'POST', path: '/announced', body: {} }), (error) => {
          tooLarge(error);
          assert.ok(
            mayHaveBeenApplied(error as UpstreamError),
            'a write answered past the cap: outcome unknown',
          );
          return true;
        });
        // An injected fetch reads a body without a length whole (its owner bounds it), then refuses it.
        if (transport === 'the pool') {
          await assert.rejects(client.request({ method: 'GET', path: '/streamed' }), tooLarge);
          for (let waited = 0; !cut && waited < 2_000; waited += 10)
            await new Promise((resolve) => setTimeout(resolve, 10));
          assert.ok(cut, 'the connection was closed on the server');
          assert.ok(written < 16 * 1024 * 1024, `the server wrote ${written} bytes before it was stopped`);
        }
        assert.equal(
          loop.requests.length,
          transport === 'the pool' ? 3 : 2,
          'a refused answer is not asked for again',
        );
        const exact = await client.request<string>({ method: 'GET', path: '/exact' });
        assert.equal(exact.body.length, CAP - 2, 'an answer of exactly maxResponseBytes is read');
        await client.close();
      });
    }

    test('a token answer past the cap: bad_response from the token endpoint', async () => {
      let base = '';
      const idp = await loopback((req, res) => {
        if (req.url.pathname === '/.well-known/openid-configuration')
          return sendJson(res, 200, { issuer: base, token_endpoint: `${base}/token` });
        if (req.url.pathname === '/token')
          return sendJson(res, 200, { access_token: 'x'.repeat(CAP), token_type: 'Bearer' });
        return sendJson(res, 200, {});
      });
      base = idp.url;
      const client = createSuccessorClient({
        baseUrl: `${idp.url}${API}`,
        auth: {
          type: 'oauth2',
          issuer: base,
          clientId: 'c',
          clientSecret: 's',
          scopes: { read: [], write: [] },
        },
        maxResponseBytes: CAP,
      });
      await assert.rejects(client.request({ method: 'GET', path: '/users' }), (error) => {
        tooLarge(error);
        assert.equal((error as UpstreamError).source, 'token');
        return true;
      });
      await client.close();
    });
  });

  test('dropped connections: GET is retried then unavailable, POST is sent once', async () => {
    const server = await loopback((_req, res) => {
      res.socket?.destroy();
    });
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/users' }), isUpstream('unavailable'));
    assert.equal(server.requests.length, 3);
    await assert.rejects(client.request({ method: 'POST', path: '/users', body: { user: 'x' } }), (error) => {
      isUpstream('unavailable')(error);
      // The server had the whole request before it dropped the connection: it may have done it.
      assert.equal(mayHaveBeenApplied(error as UpstreamError), true, 'a dropped write may have been applied');
      return true;
    });
    assert.equal(server.requests.length, 4);
    await client.close();
  });

  test('a refused connection sent nothing: a write that meets it was not applied', async () => {
    const server = await startLoopback((_req, res) => sendJson(res, 200, {}));
    await server.close();
    const client = clientFor(server, { retries: { max: 0 } });
    await assert.rejects(client.request({ method: 'DELETE', path: '/users/1' }), (error) => {
      isUpstream('unavailable')(error);
      assert.match((error as Error).message, /ECONNREFUSED/);
      assert.equal(mayHaveBeenApplied(error as UpstreamError), false);
      return true;
    });
    await client.close();
  });

  test('a connection dropped in the middle of a body: a GET is retried, then unavailable, never a short body', async () => {
    const server = await loopback(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
      res.write('{"user":"half');
      await new Promise((resolve) => setTimeout(resolve, 10));
      res.socket?.destroy();
    });
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'GET', path: '/users/1' }), (error) => {
      isUpstream('unavailable')(error);
      // Said as what it is: the successor was reached and answered; its address is not to blame.
      assert.match(
        (error as Error).message,
        /^the successor's answer to GET \/iserv\/idm\/api\/v1\/users\/1 \(200\) broke off or was malformed after its headers \(UND_ERR_SOCKET\)/,
      );
      assert.doesNotMatch((error as Error).message, /could not reach|check successor\.baseUrl/);
      return true;
    });
    assert.equal(server.requests.length, 3);
    await client.close();
    // Through an injected fetch (Node's own), the same words.
    const fetching = clientFor(server, { fetch: (input, init) => fetch(input, init), retries: { max: 0 } });
    await assert.rejects(fetching.request({ method: 'GET', path: '/users/1' }), (error) => {
      isUpstream('unavailable')(error);
      assert.match((error as Error).message, /\(200\) broke off or was malformed after its headers/);
      return true;
    });
    await fetching.close();
  });

  test('a server that stalls after the headers hits the total timeout', async () => {
    const server = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
    });
    const client = clientFor(server, { timeouts: { totalMs: 200 }, retries: { max: 0 } });
    await assert.rejects(client.request({ method: 'GET', path: '/users' }), isUpstream('timeout'));
    await client.close();
  });

  test('an informational 103 before the answer is passed over: the final status, headers and body count', async () => {
    const server = await loopback((_req, res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      sendJson(res, 200, { final: true });
    });
    const client = clientFor(server);
    const answer = await client.request({ method: 'GET', path: '/users' });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { final: true });
    assert.match(answer.headers.get('content-type') ?? '', /json/);
    await client.close();
  });

  test("a call queued behind another for the pool's one connection fails at once on the caller's abort, and is never sent", async () => {
    const server = await loopback((_req, res) => {
      setTimeout(() => sendJson(res, 200, {}), 1_500);
    });
    const client = clientFor(server, { pool: { connections: 1 } });
    const first = client.request({ method: 'GET', path: '/users/first' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    const started = performance.now();
    await assert.rejects(
      client.request({ method: 'GET', path: '/users/queued', signal: controller.signal }),
      /caller gave up/,
    );
    assert.ok(performance.now() - started < 1_000, 'waited for the connection before giving up');
    await first;
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(
      server.requests.map((request) => request.url?.pathname),
      [`${API}/users/first`],
    );
    await client.close();
  });

  test("the caller's abort signal is honoured and reported as its own reason", async () => {
    const server = await loopback(() => {});
    const client = clientFor(server);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await assert.rejects(
      client.request({ method: 'GET', path: '/users', signal: controller.signal }),
      /caller gave up/,
    );
    await client.close();
  });

  test('403 with a problem body and no Bearer challenge is a refusal of the entity, not a scope problem', async () => {
    const server = await loopback((_req, res) =>
      sendJson(
        res,
        403,
        { title: 'Forbidden', detail: 'The role ROLE_ADMIN is protected.' },
        'application/problem+json',
      ),
    );
    const client = clientFor(server);
    await assert.rejects(client.request({ method: 'DELETE', path: '/roles/x' }), (error: unknown) => {
      isUpstream('forbidden')(error);
      const upstream = error as UpstreamError;
      assert.equal(upstream.details.scope, undefined);
      assert.match(upstream.message, /ROLE_ADMIN is protected/);
      return true;
    });
    await client.close();
  });

  test('keep-alive: sequential calls share one connection, concurrent ones stay within the pool and are reused', async () => {
    const server = await loopback(async (_req, res) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      sendJson(res, 200, []);
    });
    const client = clientFor(server, { pool: { connections: 4, keepAliveMs: 30_000 } });
    const get = () => client.request({ method: 'GET', path: '/users' });
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 10; i++) {
      await get();
      await tick();
    }
    assert.equal(server.connections, 1, '10 sequential calls: one connection');
    await client.request({ method: 'POST', path: '/groups', body: { name: 'x' } });
    await tick();
    assert.equal(server.connections, 1, 'writes use the same pool');
    // Back to back, undici sees the connection free only a tick after the body was read, so it
    // may open one more and then alternate between the two.
    for (let i = 0; i < 10; i++) await get();
    assert.ok(
      server.connections <= 2,
      `10 back-to-back calls: at most 2 connections, saw ${server.connections}`,
    );

    await Promise.all(Array.from({ length: 12 }, get));
    const afterBurst = server.connections;
    assert.ok(afterBurst > 2, 'concurrent calls are spread over more connections');
    assert.ok(afterBurst <= 4, `never more than pool.connections (4), saw ${afterBurst}`);
    await Promise.all(Array.from({ length: 12 }, get));
    for (let i = 0; i < 5; i++) await get();
    assert.equal(server.connections, afterBurst, 'later calls reuse the pooled connections');
    assert.equal(server.requests.length, 10 + 1 + 10 + 12 + 12 + 5);
    await client.close();
  });

  test('409 is conflict with the successor detail, and a GET meeting it is not retried', async () => {
    const server = await loopback((_req, res) =>
      sendJson(
        res,
        409,
        { title: 'Conflict', detail: 'The group "5a" was changed by another request.' },
        'application/problem+json',
      ),
    );
    const client = clientFor(server);
    for (const method of ['PATCH', 'GET'] as const) {
      await assert.rejects(
        client.request({ method, path: '/groups/5a', ...(method === 'GET' ? {} : { body: { name: 'y' } }) }),
        (error: unknown) => {
          isUpstream('conflict')(error);
          const upstream = error as UpstreamError;
          assert.equal(upstream.details.status, 409);
          assert.equal(upstream.details.method, method);
          assert.equal(upstream.details.path, `${API}/groups/5a`);
          assert.equal(
            upstream.message,
            `the successor refused ${method} ${API}/groups/5a with a conflict (409): The group "5a" was changed by another request.`,
          );
          return true;
        },
      );
    }
    assert.equal(server.requests.length, 2);
    await client.close();
  });

  test('the calls made with a counter add to it, retries and pages included; calls without one do not', async () => {
    const server = await loopback((_req, res) => sendJson(res, 200, []));
    const events: SuccessorCallEvent[] = [];
    const client = clientFor(server, {
      observer: combineObservers({ successorCall: (e) => events.push(e) }),
    });
    const stats: CallStats = { calls: 0, durationMs: 0 };
    const counted = countingCalls(client, stats);
    await counted.request({ method: 'GET', path: '/users/0b6f5c1e-8a4e-4c3b-9a57-3f1d2e4c5b6a' });
    await counted.readCollection('/groups');
    await client.request({ method: 'GET', path: '/roles' });
    assert.equal(stats.calls, 2);
    assert.ok(stats.durationMs > 0);
    // The observer sees every call, counted or not, with its route, the ID replaced.
    assert.deepEqual(
      events.map((e) => [e.kind, e.method, e.route.replace(/^.*(\/users|\/groups|\/roles)/, '$1'), e.status]),
      [
        ['api', 'GET', '/users/{id}', 200],
        ['api', 'GET', '/groups', 200],
        ['api', 'GET', '/roles', 200],
      ],
    );
    await client.close();
  });
});

describe('connect timeout', () => {
  test('a listener that never completes the handshake is a connect timeout; a GET is retried once, a POST never', async (t) => {
    const listener = await startFullListener();
    t.after(() => listener.close());
    // Linux queues at most backlog+1 handshakes for a listener that never accepts; the next
    // connect then hangs. Should a system complete them all, this fails loudly rather than pass.
    assert.ok(listener.full, 'the listener accepted every connection: no connect can hang here');
    const sink = new LogSink();
    const client = createSuccessorClient({
      baseUrl: `${listener.url}${API}`,
      auth: { type: 'apiKey', key: 'loopback-key' },
      timeouts: { connectMs: 200, totalMs: 10_000 },
      retries: { max: 1, baseDelayMs: 1 },
      logger: createLogger({ level: 'debug', destination: sink }),
    });
    t.after(() => client.close());
    const attempts = (method: string) =>
      sink
        .lines()
        .map((line) => line.successor as { method?: string; attempt?: number } | undefined)
        .filter((call) => call?.method === method)
        .map((call) => call?.attempt);
    const connectTimeout = (error: unknown) => {
      isUpstream('timeout')(error);
      const upstream = error as UpstreamError;
      assert.match(
        upstream.message,
        /^could not connect to the successor at http:\/\/127\.0\.0\.1:\d+ within 200 ms \((GET|POST) \/iserv\/idm\/api\/v1\/users; successor\.timeouts\.connectMs\)/,
      );
      assert.equal(upstream.details.retryable, true);
      assert.equal(mayHaveBeenApplied(upstream), false, 'nothing was sent');
      return true;
    };
    const started = performance.now();
    await assert.rejects(client.request({ method: 'GET', path: '/users' }), connectTimeout);
    // undici checks connect timeouts on a coarse timer (up to about a second late), still far
    // below the total timeout.
    assert.ok(performance.now() - started < 6_000, 'gave up on the connect timeout, not the total one');
    assert.deepEqual(attempts('GET'), [1, 2]);
    await assert.rejects(
      client.request({ method: 'POST', path: '/users', body: { user: 'x' } }),
      connectTimeout,
    );
    assert.deepEqual(attempts('POST'), [1]);
  });

  test('the total timeout holds while the connection is still being made', async (t) => {
    const listener = await startFullListener();
    t.after(() => listener.close());
    assert.ok(listener.full, 'the listener accepted every connection: no connect can hang here');
    const client = createSuccessorClient({
      baseUrl: `${listener.url}${API}`,
      auth: { type: 'apiKey', key: 'loopback-key' },
      timeouts: { connectMs: 5_000, totalMs: 300 },
      retries: { max: 0, baseDelayMs: 1 },
    });
    t.after(() => client.close());
    const started = performance.now();
    await assert.rejects(client.request({ method: 'POST', path: '/users', body: { user: 'x' } }), (error) => {
      isUpstream('timeout')(error);
      assert.match(
        (error as Error).message,
        /did not answer POST \/iserv\/idm\/api\/v1\/users within 300 ms/,
      );
      // Given up while it waited for the connection: the request never went out.
      assert.equal(mayHaveBeenApplied(error as UpstreamError), false);
      return true;
    });
    assert.ok(performance.now() - started < 2_000, 'waited for the connect timeout instead of the total one');
  });
});

describe('options', () => {
  test('invalid options are rejected naming the option', () => {
    assert.throws(
      () => createSuccessorClient({ baseUrl: 'not a url', auth: { type: 'apiKey', key: 'k' } }),
      /option baseUrl/,
    );
    assert.throws(
      () =>
        createSuccessorClient({
          baseUrl: 'http://127.0.0.1:1/api',
          auth: { type: 'apiKey', key: 'k' },
          pageSize: 0,
        }),
      /option pageSize/,
    );
    assert.throws(
      () =>
        createSuccessorClient({
          baseUrl: 'http://127.0.0.1:1/api',
          auth: {
            type: 'oauth2',
            issuer: 'http://127.0.0.1:1/auth',
            clientId: 'c',
            clientSecret: 's',
            scopes: { read: ['a b'], write: [] },
          },
        }),
      /option auth\.scopes\.read/,
    );
  });
});
