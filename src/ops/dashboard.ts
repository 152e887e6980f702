import type { Hono } from 'hono';
import { html, raw } from 'hono/html';
import { DASHBOARD_PATH } from '../config/fixed-paths.js';
import { NO_SNIFF } from '../http/errors.js';
import { LEGACY_OPERATIONS } from '../legacy/operations.js';
import { formatRate } from '../migration/report-text.js';
import { shadowReport } from '../migration/shadow-report.js';
import type { AppEnv, Services } from '../services.js';
import { operatorGuard } from './guard.js';

const DAY_MS = 24 * 3_600_000;

/** What the dashboard shows, also served as JSON at `/_migration/api/status`. */
export interface MigrationStatus {
  generatedAt: string;
  operations: {
    operation: string;
    method: string;
    path: string;
    mode: string;
    usage: { apiUser: string; callsLast24h: number; lastSeen: string }[];
    shadow: {
      pairs: number;
      matched: number;
      mismatched: number;
      rate: number | null;
      errors: number;
      skipped: number;
      paths: { path: string; count: number }[];
      samples: unknown[];
    } | null;
  }[];
  recentErrors: { operation: string; at: string; requestId: string; detail: unknown }[];
}

/** Gathers the dashboard's figures: modes, the usage inventory and the shadow outcomes. */
export async function migrationStatus(services: Services): Promise<MigrationStatus> {
  const now = services.clock.now();
  const [rows, recent, report] = await Promise.all([
    services.store.usage.list(),
    services.store.usage.recent(now - DAY_MS),
    shadowReport(services.store.shadow, { samples: 3 }),
  ]);
  const modes = services.migration.modes.current();
  return {
    generatedAt: new Date(now).toISOString(),
    operations: LEGACY_OPERATIONS.map((operation) => {
      const users = new Map<string, { callsLast24h: number; lastSeen: number }>();
      for (const row of rows) {
        if (row.operation !== operation.id || row.apiUser === '') continue;
        const seen = users.get(row.apiUser) ?? { callsLast24h: 0, lastSeen: 0 };
        seen.lastSeen = Math.max(seen.lastSeen, row.lastSeen);
        users.set(row.apiUser, seen);
      }
      for (const row of recent) {
        const seen = row.operation === operation.id ? users.get(row.apiUser) : undefined;
        if (seen) seen.callsLast24h += row.count;
      }
      const shadow = report.operations.find((entry) => entry.operation === operation.id);
      return {
        operation: operation.id,
        method: operation.method.toUpperCase(),
        path: operation.path,
        mode: modes.modeOf(operation.id),
        usage: [...users]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([apiUser, seen]) => ({
            apiUser,
            callsLast24h: seen.callsLast24h,
            lastSeen: new Date(seen.lastSeen).toISOString(),
          })),
        shadow: shadow
          ? {
              pairs: shadow.pairs,
              matched: shadow.matched,
              mismatched: shadow.mismatched,
              rate: shadow.rate,
              errors: shadow.errors ?? 0,
              skipped: shadow.skipped ?? 0,
              paths: shadow.paths.slice(0, 5),
              samples: shadow.samples,
            }
          : null,
      };
    }),
    recentErrors: report.errorSamples.slice(0, 10),
  };
}

const STYLE = `
:root { color-scheme: light dark; --ok: #2e7d32; --bad: #c62828; --muted: #6b7280; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 80rem; padding: 0 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #8884; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.mode-translate { color: var(--ok); } .mode-shadow { color: #b26a00; } .mode-passthrough { color: var(--muted); }
.muted { color: var(--muted); } ul { margin: 0; padding-left: 1rem; }
code, pre { font: 13px/1.4 ui-monospace, monospace; } pre { white-space: pre-wrap; word-break: break-all; margin: .2rem 0; }
details { margin: .3rem 0; }
`;

function page(status: MigrationStatus) {
  const rows = status.operations.map(
    (op) => html`<tr data-operation="${op.operation}">
  <td><code>${op.operation}</code><div class="muted"><code>${op.method} ${op.path}</code></div></td>
  <td class="mode-${op.mode}">${op.mode}</td>
  <td>${
    op.usage.length === 0
      ? html`<span class="muted">no API user</span>`
      : html`<ul>${op.usage.map(
          (u) => html`<li>${u.apiUser}: ${u.callsLast24h} in 24 h, last ${u.lastSeen}</li>`,
        )}</ul>`
  }</td>
  <td class="num">${op.shadow ? html`${formatRate(op.shadow.rate)} <span class="muted">(${op.shadow.pairs})</span>` : html`<span class="muted">–</span>`}</td>
  <td>${
    op.shadow && op.shadow.paths.length > 0
      ? html`<ul>${op.shadow.paths.map((p) => html`<li><code>${p.path}</code> ×${p.count}</li>`)}</ul>`
      : ''
  }${
    op.shadow && op.shadow.samples.length > 0
      ? op.shadow.samples.map(
          (sample) =>
            html`<details><summary>sample</summary><pre>${JSON.stringify(sample, null, 2)}</pre></details>`,
        )
      : ''
  }</td>
  <td class="num">${op.shadow ? `${op.shadow.errors} / ${op.shadow.skipped}` : ''}</td>
</tr>`,
  );
  const errors =
    status.recentErrors.length === 0
      ? html`<p class="muted">No translation errors recorded.</p>`
      : html`<table><thead><tr><th>Operation</th><th>When</th><th>Request id</th><th>What failed</th></tr></thead><tbody>${status.recentErrors.map(
          (e) =>
            html`<tr><td><code>${e.operation}</code></td><td>${e.at}</td><td><code>${e.requestId}</code></td><td>${(e.detail as { error?: string }).error ?? ''}</td></tr>`,
        )}</tbody></table>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>idm-compat migration</title><style>${raw(STYLE)}</style></head>
<body>
<h1>Migration dashboard</h1>
<p class="muted">Generated ${status.generatedAt}. Modes come from <code>migration.modes</code> (SIGHUP reloads them); usage from the usage inventory; shadow figures from the shadow comparisons. JSON: <a href="${DASHBOARD_PATH}/api/status">${DASHBOARD_PATH}/api/status</a>.</p>
<table id="operations"><thead><tr><th>Operation</th><th>Mode</th><th>Calls by API user</th><th>Shadow match rate</th><th>Differing paths and samples</th><th>Errors / skipped</th></tr></thead>
<tbody>${rows}</tbody></table>
<h2>Recent translation errors</h2>
${errors}
</body></html>`;
}

/**
 * The migration dashboard for operators (SPEC 8): `/_migration/` (server-rendered HTML, no
 * script, no external asset) and its JSON twin `/_migration/api/status`, behind their own
 * credentials and address ranges (`migration.dashboard`).
 */
export function registerDashboard(app: Hono<AppEnv>, services: Services): void {
  const settings = services.config.migration.dashboard;
  if (!settings.enabled) return;
  app.use(
    `${DASHBOARD_PATH}/*`,
    operatorGuard({
      what: 'migration dashboard',
      realm: 'migration',
      ranges: settings.ranges,
      trustedProxies: services.config.server.trustedProxies,
      username: settings.username,
      password: settings.password,
      throttle: services.config.auth.throttle,
      clock: services.clock,
    }),
  );
  app.get(DASHBOARD_PATH, (c) => c.redirect(`${DASHBOARD_PATH}/`, 301));
  // Both hold usage figures and sample differences (user data): kept out of caches, and taken
  // for nothing but what they say they are.
  const unshared = { 'Cache-Control': 'no-store', ...NO_SNIFF };
  app.get(`${DASHBOARD_PATH}/api/status`, async (c) =>
    c.json(await migrationStatus(services), 200, unshared),
  );
  app.get(`${DASHBOARD_PATH}/`, async (c) => {
    const body = await page(await migrationStatus(services));
    return c.html(body, 200, {
      'Content-Security-Policy':
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'",
      ...unshared,
    });
  });
}
