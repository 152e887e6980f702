// A page that renders no members in the middle of a streamed list (every member a repeat of an
// earlier page's, say) must not stall the answer: a web stream asks for more only after a pull
// that delivered something. The mapping engine here is a stand-in that yields such pages, a case
// the sandbox successor cannot be made to produce.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { streamedList } from '../src/legacy/stream.js';
import { silentLogger } from '../src/lib/logger.js';
import type { AppEnv, Services } from '../src/services.js';

function appWithPages(pages: Record<string, unknown>[][]): Hono<AppEnv> {
  async function* rendered() {
    for (const page of pages) yield page;
  }
  const services = {
    logger: silentLogger(),
    mappings: { current: () => ({ run: async () => ({ type: 'collection-pages', pages: rendered() }) }) },
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
    const text = await Promise.race([
      response.text(),
      new Promise<string>((resolve) => setTimeout(() => resolve('(stalled)'), 2_000)),
    ]);
    assert.equal(text, '[{"_id":"a"},{"_id":"b"}]');
  });

  it('answers [] when every page is empty', async () => {
    const response = await appWithPages([[], []]).request('/list');
    assert.equal(await response.text(), '[]');
  });
});
