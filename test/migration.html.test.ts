// The HTML report of `idm-compat compare --html` opened in real headless Chromium: one
// self-contained file (no request leaves the page), the per-operation table with its bars,
// expandable sample differences with the request that caused them, and hostile values shown as
// text, never as markup.
import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import type { RecordedExchange } from '../src/migration/recording.js';
import { launchBrowser } from './browser.js';
import { tempDir } from './temp-dir.js';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';

function exchange(requestId: string, over: Partial<RecordedExchange>): RecordedExchange {
  return {
    time: '2026-03-02T08:00:00.000Z',
    requestId,
    apiUser: 'untis',
    operation: 'user.get',
    mode: 'replay',
    method: 'GET',
    path: `/Service/Core/Entity/User/${requestId}`,
    query: '',
    requestBody: null,
    status: 200,
    responseBody: null,
    durationMs: 2,
    ...over,
  };
}

describe('compare --html in headless Chromium', () => {
  let browser: Browser;
  let report = '';
  let cliOutput = '';

  before(async () => {
    const dir = tempDir('html');
    const as: RecordedExchange[] = [];
    const bs: RecordedExchange[] = [];
    // user.get: 6 pairs, 3 match (50 %): two differ in firstname, one in status.
    for (let i = 0; i < 5; i += 1) {
      const id = `user${i}`;
      as.push(exchange(id, { responseBody: { _id: id, firstname: 'Ada' } }));
      bs.push(
        exchange(id, { responseBody: { _id: id, firstname: i === 0 ? HOSTILE : i === 1 ? 'Bob' : 'Ada' } }),
      );
    }
    as.push(exchange('user9', { status: 200, responseBody: { _id: 'user9' } }));
    bs.push(exchange('user9', { status: 404, responseBody: { code: 404 } }));
    // group.update: a write with its body, differing; group.get: all match.
    as.push(
      exchange('g1', {
        operation: 'group.update',
        method: 'PUT',
        path: '/Service/Core/Entity/Group/lehrer',
        requestBody: { name: 'Lehrer & Co' },
        responseBody: { name: 'Lehrer & Co', account: 'lehrer' },
      }),
    );
    bs.push(
      exchange('g1', {
        operation: 'group.update',
        method: 'PUT',
        path: '/Service/Core/Entity/Group/lehrer',
        requestBody: { name: 'Lehrer & Co' },
        responseBody: { name: 'Lehrer &amp; Co', account: 'lehrer' },
      }),
    );
    as.push(exchange('g2', { operation: 'group.get', responseBody: { account: 'lehrer' } }));
    bs.push(exchange('g2', { operation: 'group.get', responseBody: { account: 'lehrer' } }));
    const a = path.join(dir, 'a.ndjson');
    const b = path.join(dir, 'b.ndjson');
    writeFileSync(a, `${as.map((e) => JSON.stringify(e)).join('\n')}\n`);
    writeFileSync(b, `${bs.map((e) => JSON.stringify(e)).join('\n')}\n`);
    report = path.join(dir, 'report.html');
    const io: CommandIo = {
      out: (text) => {
        cliOutput += text;
      },
      err: (text) => {
        cliOutput += text;
      },
      env: {},
    };
    assert.equal(await runCli(['compare', a, b, '--exact', '--html', report], io), 1, cliOutput);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  it('is written readable by its owner only, as replay --out is', () => {
    assert.equal(statSync(report).mode & 0o777, 0o600);
  });

  it('loads as one file, shows the table with bars and expandable samples, and escapes values', async () => {
    const context = await browser.newContext({ offline: true });
    const requested: string[] = [];
    context.on('request', (request) => requested.push(request.url()));
    try {
      const page = await context.newPage();
      const response = await page.goto(pathToFileURL(report).href);
      assert.ok(response === null || response.ok());
      // Self-contained: the page itself is the only resource.
      assert.deepEqual(requested, [pathToFileURL(report).href]);

      const rows = page.locator('#operations tbody tr');
      assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-operation'))), [
        'group.get',
        'group.update',
        'user.get',
      ]);
      const userRow = page.locator('#operations tr[data-operation="user.get"]');
      assert.deepEqual(
        await userRow.locator('td').evaluateAll((tds) => tds.slice(1, 5).map((td) => td.textContent?.trim())),
        ['6', '3', '3', '50.0 %'],
      );
      assert.match((await page.locator('#totals').textContent()) ?? '', /50\.0 % of 8 paired requests match/);

      // The bar of user.get is half green, the one of group.get all green (the stylesheet applies).
      const barShare = async (operation: string) =>
        page.locator(`tr[data-operation="${operation}"] .bar`).evaluate((bar) => {
          const ok = bar.querySelector('.ok');
          return ok ? ok.getBoundingClientRect().width / bar.getBoundingClientRect().width : -1;
        });
      assert.equal(await barShare('user.get'), 0.5);
      assert.equal(await barShare('group.get'), 1);
      assert.equal(
        await page.locator('tr[data-operation="group.get"] .ok').evaluate(
          (el) =>
            // Runs in the page; DOM types are not in this project's TypeScript lib.
            (
              globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
            ).getComputedStyle(el).backgroundColor,
        ),
        'rgb(46, 125, 50)',
      );

      // Sample differences: closed until their summary is clicked.
      const section = page.locator('section#op-user\\.get');
      assert.match((await section.locator('h2').textContent()) ?? '', /user\.get: 3 of 6 differ/);
      assert.deepEqual(
        await section
          .locator('table.paths tbody tr')
          .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))),
        [
          ['$.firstname', '2'],
          ['status', '1'],
        ],
      );
      const samples = section.locator('details.sample');
      assert.equal(await samples.count(), 3);
      const first = samples.first();
      assert.equal(await first.locator('table').isVisible(), false);
      await first.locator('summary').click();
      assert.equal(await first.locator('table').isVisible(), true);
      assert.match(
        (await first.locator('summary').textContent()) ?? '',
        /GET \/Service\/Core\/Entity\/User\/user0/,
      );
      const cells = await first
        .locator('tbody tr td')
        .evaluateAll((tds) => tds.map((td) => td.textContent?.trim() ?? ''));
      assert.deepEqual(cells, ['$.firstname', '"Ada"', JSON.stringify(HOSTILE)]);

      // The request of a write is shown with its body; the & in values survives as text.
      const write = page.locator('section#op-group\\.update details.sample');
      await write.locator('summary').click();
      assert.match(
        (await write.locator('summary').textContent()) ?? '',
        /PUT \/Service\/Core\/Entity\/Group\/lehrer/,
      );
      assert.match((await write.locator('pre').first().textContent()) ?? '', /"name": "Lehrer & Co"/);
      assert.match((await write.locator('tbody').textContent()) ?? '', /Lehrer &amp; Co/);

      // The hostile value is text: no element was made of it and its handler never ran.
      assert.equal(await page.locator('img').count(), 0);
      assert.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
      assert.equal(await page.locator('script').count(), 0);
    } finally {
      await context.close();
    }
  });
});
