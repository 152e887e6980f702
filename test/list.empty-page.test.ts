// A page that renders no members in the middle of a streamed list (every member a repeat of an
// earlier page's, say) must not stall the answer: a web stream asks for more only after a pull
// that delivered something. And a HEAD answer, which has no body to read them, must close the
// pages. The mapping engine here is a stand-in that yields such pages (primed, as the engine
// hands them over) and tells whether they were closed, cases the sandbox successor cannot show.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { streamedList } from '../src/legacy/stream.js';
import { silentLogger } from '../src/lib/logger.js';
import type { AppEnv, Services } from '../src/services.js';
import { primed } from '../src/successor/collections.js';

function appWithPages(pages: Record<string, unknown>[][], closed = { pages: false }): Hono<AppEnv> {
  async function* rendered() {
    try {
      // The engine hands pages over as their JSON text.
      for (const page of pages) yield JSON.stringify(page);
    } finally {
      closed.pages = true;
    }
  }
  const services = {
    logger: silentLogger(),
    mappings: {
      current: () => ({ run: async () => ({ type: 'collection-pages', pages: await primed(rendered()) }) }),
    },
  } as unknown as Services;
  const app = new Hono<AppEnv>();
  app.get('/list', (c) => {
    c.set('services', services);
    c.set('requestId', 'test');
    return streamedList(c, 'user.list', ['_id']);
  });
  return app;
}

describe('a streamed list with empty pages', () => {
  it('answers every member when pages in the middle and at the end render nothing', async () => {
    const app = appWithPages([[{ _id: 'a' }], [], [], [{ _id: 'b' }], []]);
    const response = await app.request('/list');
    let timer: NodeJS.Timeout | undefined;
    const text = await Promise.race([
      response.text(),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('(stalled)'), 2_000);
      }),
    ]);
    clearTimeout(timer);
    assert.equal(text, '[{"_id":"a"},{"_id":"b"}]');
  });

  it('closes the pages of a HEAD answer, which nothing reads', async () => {
    const closed = { pages: false };
    const response = await appWithPages([[{ _id: 'a' }], [{ _id: 'b' }]], closed).request('/list', {
      method: 'HEAD',
    });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '');
    assert.equal(closed.pages, true);
  });

  it('answers [] when every page is empty', async () => {
    const response = await appWithPages([[], []]).request('/list');
    assert.equal(await response.text(), '[]');
  });
});
