// The interactive docs opened in real headless Chromium (a system Chromium, or the one inside the
// @sparticuz/chromium dev dependency), authenticated with an API user: every legacy operation is
// listed on the rendered page.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { LEGACY_OPERATIONS } from '../src/legacy/operations.js';
import { type AuthHarness, closeSharedSandbox, startHarness } from './auth-helpers.js';
import { launchBrowser } from './browser.js';

after(closeSharedSandbox);

describe('interactive docs in headless Chromium', () => {
  let h: AuthHarness;
  let browser: Browser;
  let password = '';

  before(async () => {
    h = await startHarness();
    password = await h.addUser('browser', ['127.0.0.0/8']);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });

  it('is refused without credentials or with wrong ones', async () => {
    for (const httpCredentials of [undefined, { username: 'browser', password: 'wrong' }]) {
      const context = await browser.newContext(httpCredentials ? { httpCredentials } : {});
      try {
        const page = await context.newPage();
        // Headless Chromium cannot prompt: an unanswered challenge fails the navigation, a
        // wrong answer ends on the 401 page.
        const outcome = await page.goto(`${h.url}/iserv/api/docs/`).then(
          (response) => String(response?.status()),
          (error: Error) => error.message,
        );
        assert.match(outcome, /^401$|ERR_INVALID_AUTH_CREDENTIALS/);
        assert.equal(await page.locator('.swagger-ui').count(), 0);
      } finally {
        await context.close();
      }
    }
  });

  it('lists every legacy operation and can try one out with the browser credentials', async () => {
    assert.ok(LEGACY_OPERATIONS.length > 0, 'LEGACY_OPERATIONS is empty: nothing to document yet');
    const context = await browser.newContext({ httpCredentials: { username: 'browser', password } });
    try {
      const page = await context.newPage();
      const problems: string[] = [];
      const foreign: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(error.message));
      page.on('request', (request) => {
        const url = request.url();
        if (!url.startsWith(`${h.url}/`) && !url.startsWith('data:')) foreign.push(url);
      });

      const response = await page.goto(`${h.url}/iserv/api/docs/`);
      assert.equal(response?.status(), 200);
      await page.locator('.swagger-ui .info .title').waitFor({ timeout: 30_000 });
      assert.match(
        (await page.locator('.swagger-ui .info .title').textContent()) ?? '',
        /User and Group Administration/,
      );
      await page.locator('.opblock').first().waitFor({ timeout: 30_000 });

      for (const operation of LEGACY_OPERATIONS) {
        const block = page.locator(`.opblock.opblock-${operation.method}`, {
          has: page.locator(`.opblock-summary-path[data-path="${operation.path}"]`),
        });
        assert.equal(
          await block.count(),
          1,
          `${operation.method.toUpperCase()} ${operation.path} is not listed`,
        );
        assert.equal(
          (await block.locator('.opblock-summary-operation-id').textContent())?.trim(),
          operation.id,
        );
      }
      assert.equal(await page.locator('.opblock').count(), LEGACY_OPERATIONS.length);

      // "Try it out" on a list operation: Swagger UI calls the proxy with the browser's credentials.
      const list = LEGACY_OPERATIONS.find((op) => op.method === 'get' && !op.path.includes('{'));
      if (list) {
        const block = page.locator(`.opblock.opblock-get`, {
          has: page.locator(`.opblock-summary-path[data-path="${list.path}"]`),
        });
        await block.locator('.opblock-summary').first().click();
        await block.locator('.try-out__btn').click();
        await block.locator('.execute').click();
        const status = block.locator('.live-responses-table .response .response-col_status').first();
        await status.waitFor({ timeout: 30_000 });
        assert.equal((await status.textContent())?.trim(), '200');
      }

      assert.deepEqual(foreign, [], 'the page loads nothing from other origins');
      assert.deepEqual(problems, [], 'no script errors or CSP violations');
    } finally {
      await context.close();
    }
  });
});
