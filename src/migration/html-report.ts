import { html, raw } from 'hono/html';
import type { CompareReport, Difference, OperationReport, Sample } from './report.js';
import { formatRate, ratePercent } from './report-text.js';

/** What the page says about where the report came from. */
export interface HtmlReportMeta {
  title?: string;
  /** Labels of the two sides, e.g. the recording files. */
  a: string;
  b: string;
  /** The rules file used, or a description such as "exact". */
  rules: string;
  generatedAt: Date;
}

// Everything inline: the page is one file that opens anywhere, with no network access.
const STYLE = `
:root { color-scheme: light dark; --ok: #2e7d32; --bad: #c62828; --muted: #6b7280; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #8884; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: flex; width: 12rem; height: .9rem; background: var(--bad); border-radius: 3px; overflow: hidden; }
.bar.none { background: #8884; }
.bar > .ok { background: var(--ok); height: 100%; }
.meta { color: var(--muted); }
code, pre { font: 13px/1.4 ui-monospace, monospace; }
pre { margin: .2rem 0; white-space: pre-wrap; word-break: break-all; }
details { margin: .4rem 0; padding: .3rem .6rem; border: 1px solid #8884; border-radius: 4px; }
summary { cursor: pointer; }
.matched { color: var(--ok); } .mismatched { color: var(--bad); }
`;

const percent = formatRate;
const json = (value: unknown) => (value === undefined ? '(absent)' : JSON.stringify(value, null, 2));

function bar(operation: OperationReport) {
  if (operation.rate === null) return html`<div class="bar none" role="img" aria-label="no pairs"></div>`;
  // Rounded down as the figure is: a bar is full only when every pair matched.
  const width = ratePercent(operation.rate);
  return html`<div class="bar" role="img" aria-label="${percent(operation.rate)} matched"><div class="ok" style="width: ${width}%"></div></div>`;
}

/** Which optional columns a report has: ERRORS (shadow), SKIPPED (compare and shadow). */
interface Columns {
  errors: boolean;
  skipped: boolean;
}

function row(operation: OperationReport, columns: Columns) {
  const name =
    operation.mismatched > 0
      ? html`<a href="#op-${operation.operation}">${operation.operation}</a>`
      : html`${operation.operation}`;
  return html`<tr data-operation="${operation.operation}">
  <td><code>${name}</code></td>
  <td class="num">${operation.pairs}</td>
  <td class="num matched">${operation.matched}</td>
  <td class="num mismatched">${operation.mismatched}</td>
  <td class="num">${percent(operation.rate)}</td>
  <td>${bar(operation)}</td>
  <td class="num">${operation.onlyA}</td>
  <td class="num">${operation.onlyB}</td>
  ${columns.errors ? html`<td class="num">${operation.errors ?? 0}</td>` : ''}${columns.skipped ? html`<td class="num">${operation.skipped ?? 0}</td>` : ''}
</tr>`;
}

function difference(d: Difference) {
  return html`<tr><td><code>${d.path}</code></td><td><pre>${json(d.a)}</pre></td><td><pre>${json(d.b)}</pre></td></tr>`;
}

function sample(s: Sample) {
  const target = `${s.method} ${s.path}${s.query === '' ? '' : `?${s.query}`}`;
  const count = s.differences.length + s.moreDifferences;
  return html`<details class="sample" data-request-id="${s.requestId}">
  <summary><code>${target}</code> — status ${s.status.a} / ${s.status.b} — ${count} difference${count === 1 ? '' : 's'}</summary>
  <p class="meta">Request id <code>${s.requestId}</code></p>
  ${s.requestBody === null ? '' : html`<p>Request body:</p><pre>${json(s.requestBody)}</pre>`}
  <table>
    <thead><tr><th>Path</th><th>A</th><th>B</th></tr></thead>
    <tbody>${s.differences.map(difference)}</tbody>
  </table>
  ${s.moreDifferences > 0 ? html`<p class="meta">… and ${s.moreDifferences} more</p>` : ''}
</details>`;
}

function details(operation: OperationReport) {
  return html`<section id="op-${operation.operation}">
  <h2><code>${operation.operation}</code>: ${operation.mismatched} of ${operation.pairs} differ</h2>
  <table class="paths">
    <thead><tr><th>Differing path</th><th class="num">Requests</th></tr></thead>
    <tbody>${operation.paths.map((p) => html`<tr><td><code>${p.path}</code></td><td class="num">${p.count}</td></tr>`)}</tbody>
  </table>
  ${operation.samples.map(sample)}
</section>`;
}

/** Renders a compare report as one self-contained HTML page (inline CSS, no scripts, no external assets). */
export async function renderHtmlReport(report: CompareReport, meta: HtmlReportMeta): Promise<string> {
  const title = meta.title ?? 'idm-compat compare report';
  const t = report.totals;
  // Shadow reports also count comparisons that failed; both kinds count requests not compared.
  const columns = { errors: t.errors !== undefined, skipped: t.skipped !== undefined };
  const page = await html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>${raw(STYLE)}</style>
</head>
<body>
<h1>${title}</h1>
<p class="meta">A: <code>${meta.a}</code> · B: <code>${meta.b}</code> · rules: <code>${meta.rules}</code> · ${meta.generatedAt.toISOString()}</p>
<p id="totals"><strong>${percent(t.rate)}</strong> of ${t.pairs} paired requests match: <span class="matched">${t.matched} matched</span>, <span class="mismatched">${t.mismatched} differ</span>; ${t.onlyA} only in A, ${t.onlyB} only in B${t.skipped === undefined ? '' : html`; ${t.skipped} not compared`}.</p>
<table id="operations">
  <thead><tr><th>Operation</th><th class="num">Pairs</th><th class="num">Matched</th><th class="num">Differ</th><th class="num">Rate</th><th>Match rate</th><th class="num">Only A</th><th class="num">Only B</th>${columns.errors ? html`<th class="num">Errors</th>` : ''}${columns.skipped ? html`<th class="num">Skipped</th>` : ''}</tr></thead>
  <tbody>${report.operations.map((operation) => row(operation, columns))}</tbody>
</table>
${report.operations.filter((o) => o.mismatched > 0).map(details)}
</body>
</html>
`;
  return page.toString();
}
