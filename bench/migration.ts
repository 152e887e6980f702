// `npx tsx bench/migration.ts`: what recording costs a request, and how fast `compare` runs.
// Measures RecordingWriter.record() (the part a request pays; the disk write happens later) and
// the time to flush, then compareRecordings over two recordings of user answers with the
// shipped rules. Options (env): BENCH_EXCHANGES (default 50 000). `--json` for machines.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareRecordings } from '../src/migration/compare.js';
import { loadCompareRules } from '../src/migration/compare-rules.js';
import { type RecordedExchange, RecordingWriter, readRecording } from '../src/migration/recording.js';

const count = Number(process.env.BENCH_EXCHANGES ?? 50_000);
const dir = mkdtempSync(path.join(tmpdir(), 'idm-compat-bench-migration-'));

function exchange(i: number, changed: boolean): RecordedExchange {
  const id = `user.${i}`;
  return {
    time: new Date(1_770_000_000_000 + i).toISOString(),
    requestId: `req-${i}`,
    apiUser: 'untis',
    operation: i % 10 === 0 ? 'user.password.reset' : 'user.get',
    mode: 'translate',
    method: i % 10 === 0 ? 'POST' : 'GET',
    path: `/Service/Core/Entity/User/${id}`,
    query: '',
    requestBody: null,
    status: 200,
    responseBody:
      i % 10 === 0
        ? { password: `Temp-${i}` }
        : {
            username: id,
            firstname: changed && i % 100 === 1 ? 'Changed' : 'Ada',
            lastname: 'Lovelace',
            status: 'a',
            type: null,
            importId: null,
            auxInfo: '5a',
            created: '2026-01-01',
            createdBy: 'admin',
            lastlogin: new Date(1_770_000_000_000 + i * (changed ? 7 : 1)).toISOString(),
            deleted: null,
            deletedBy: null,
            roles: ['ROLE_STUDENT'],
            groups: ['schueler', 'klasse.5a'],
            admin: false,
            privileges: [],
            _id: id,
          },
    durationMs: 10,
  };
}

async function record(file: string, changed: boolean) {
  const writer = new RecordingWriter({ path: file, maxPendingLines: count });
  const exchanges = Array.from({ length: count }, (_, i) => exchange(i, changed));
  const start = performance.now();
  for (const e of exchanges) writer.record(e);
  const recorded = performance.now() - start;
  await writer.close();
  const flushed = performance.now() - start;
  return { recordUsPerExchange: (recorded * 1000) / count, totalMs: flushed };
}

try {
  const a = path.join(dir, 'a.ndjson');
  const b = path.join(dir, 'b.ndjson');
  const writeA = await record(a, false);
  await record(b, true);
  const readStart = performance.now();
  const [ra, rb] = [await readRecording(a), await readRecording(b)];
  const readMs = performance.now() - readStart;
  const rules = loadCompareRules();
  const compareStart = performance.now();
  const report = compareRecordings(ra.exchanges, rb.exchanges, rules);
  const compareMs = performance.now() - compareStart;
  const result = {
    exchanges: count,
    recordMicrosecondsPerExchange: Number(writeA.recordUsPerExchange.toFixed(2)),
    recordAndFlushMs: Math.round(writeA.totalMs),
    readBothMs: Math.round(readMs),
    compareMs: Math.round(compareMs),
    comparePairsPerSecond: Math.round((report.totals.pairs / compareMs) * 1000),
    matchRate: report.totals.rate,
    heapUsedMb: Math.round(process.memoryUsage().heapUsed / 1024 / 1024),
  };
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
  else {
    console.log(
      `recording ${count} exchanges: ${result.recordMicrosecondsPerExchange} µs per record() call, ${result.recordAndFlushMs} ms until on disk`,
    );
    console.log(`reading both recordings: ${result.readBothMs} ms`);
    console.log(
      `compare: ${result.compareMs} ms (${result.comparePairsPerSecond} pairs/s), match rate ${((result.matchRate ?? 0) * 100).toFixed(1)} %`,
    );
    console.log(`heap used: ${result.heapUsedMb} MB`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
