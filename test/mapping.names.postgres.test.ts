// Two replicas (proxies in this process, each with its own services and ID cache) on one sandbox
// and one PostgreSQL store: a rename through one is known to the other before it is answered (the
// store's names version), and a store that does not answer for that version holds no write for
// its statement timeout: the write trusts nothing cached and resolves by the successor.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

describe('natural IDs: replicas sharing a PostgreSQL store', () => {
  let server: TestPostgres;
  let url: string;
  let first: UserProxy;
  let second: UserProxy;

  before(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
    const config = { store: { type: 'postgres', url, poolSize: 2, statementTimeoutMs: 5_000 } };
    first = await startUserProxy({ config });
    second = await startUserProxy({ config, replicaOf: first });
  });
  after(async () => {
    await second?.close();
    await first?.close();
    await server?.destroy();
  });

  it('a rename through one is a 404 by the old ID through the other', async () => {
    for (const replica of [first, second])
      assert.equal((await replica.call('GET', '/Entity/Group/klasse.5a')).status, 200, 'cached');
    const renamed = await first.call('PUT', '/Entity/Group/klasse.5a', { account: 'klasse.5a.alt' });
    assert.equal(renamed.status, 200, renamed.text);
    const put = await second.call('PUT', '/Entity/Group/klasse.5a', { name: 'Not this group' });
    assert.equal(put.status, 404, put.text);
    assert.equal(first.sandbox.data.groupByAccount('klasse.5a.alt')?.name, 'Klasse 5a');
  });

  it('a names version held behind a lock: writes by a cached ID resolve by the successor at once, with one warning', async () => {
    assert.equal((await second.call('GET', '/Entity/Group/lehrer')).status, 200, 'cached');
    assert.equal((await second.call('GET', '/Entity/Group/schueler')).status, 200, 'cached');
    const operator = new pg.Client({ connectionString: url });
    await operator.connect();
    try {
      await operator.query('BEGIN');
      await operator.query('LOCK TABLE id_names_version IN ACCESS EXCLUSIVE MODE');
      second.resetCounts();
      for (const group of ['lehrer', 'schueler']) {
        const put = await second.call('PUT', `/Entity/Group/${group}`, { name: `${group} neu` });
        assert.equal(put.status, 200, put.text);
      }
      assert.deepEqual(second.apiCalls(), { 'GET /groups': 2, 'PATCH /groups/{id}': 2 }, 'resolved afresh');
      // Each write cached its group again; more writes by those IDs start no read beside the one
      // still waiting (each held a pooled connection: a locked table took the pool, logins too).
      for (let round = 0; round < 3; round++)
        for (const group of ['lehrer', 'schueler'])
          assert.equal((await second.call('PUT', `/Entity/Group/${group}`, { name: group })).status, 200);
      const { rows } = await operator.query<{ waiting: string }>(
        "SELECT count(*) AS waiting FROM pg_stat_activity WHERE query LIKE 'SELECT version FROM id_names_version%' AND state = 'active'",
      );
      assert.equal(Number(rows[0]?.waiting), 1, 'one read waits for the lock');
      const warnings = second.logSink
        .lines()
        .filter((line) => String(line.msg).startsWith('could not read the names version'));
      assert.equal(warnings.length, 1, 'one warning, not one a write');
      // Not held for the statement timeout (5 s, which would have said "a statement timed out").
      assert.equal(warnings[0]?.reason, 'no answer within 250 ms');
    } finally {
      await operator.query('ROLLBACK');
      await operator.end();
    }
  });
});
