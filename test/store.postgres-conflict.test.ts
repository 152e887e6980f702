// Two processes writing the same ID-table rows at the same moment: the loser's transaction meets
// a unique violation and is run again; after five such conflicts in a row the
// write gives up with StoreConflictError, a legacy 503 with Retry-After: 1, never a raw driver
// error. Real conflicts are races no test can repeat at will, so a trigger on a real PostgreSQL
// server raises the SQLSTATE a concurrent writer's committed row causes (23505, unique_violation)
// on as many attempts in a row as each test asks.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { toLegacyError } from '../src/http/errors.js';
import { StoreConflictError, StoreUnavailableError } from '../src/store/errors.js';
import { openPostgresStore, type PostgresStore } from '../src/store/postgres/index.js';
import { startPostgres, type TestPostgres } from './postgres-helpers.js';

describe('ID-table writes that meet concurrent writers (PostgreSQL)', () => {
  let server: TestPostgres;
  let store: PostgresStore;
  let operator: pg.Client;

  before(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    store = await openPostgresStore({ url, poolSize: 2, connectTimeoutMs: 5_000, statementTimeoutMs: 5_000 });
    operator = new pg.Client({ connectionString: url });
    await operator.connect();
    // Every insert into id_map is an attempt (a sequence counts it, also when its transaction
    // rolls back); the first `conflicts` attempts fail.
    await operator.query(`
      CREATE SEQUENCE conflict_attempts;
      CREATE TABLE conflict_fault (conflicts int NOT NULL, code text NOT NULL);
      INSERT INTO conflict_fault VALUES (0, '23505');
      CREATE FUNCTION conflict_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE fault conflict_fault;
      BEGIN
        SELECT * INTO fault FROM conflict_fault;
        IF nextval('conflict_attempts') <= fault.conflicts THEN
          RAISE EXCEPTION 'conflict % on id_map', fault.code USING ERRCODE = fault.code;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER conflict_fault BEFORE INSERT ON id_map FOR EACH ROW EXECUTE FUNCTION conflict_fault();`);
  });
  after(async () => {
    await operator?.end();
    await store?.close();
    await server?.destroy();
  });

  /**
   * The next write meets `conflicts` conflicts in a row (SQLSTATE `code`, unique_violation unless
   * told); answers how many attempts it made.
   */
  async function withConflicts(conflicts: number, write: () => Promise<unknown>, code = '23505') {
    await operator.query('ALTER SEQUENCE conflict_attempts RESTART');
    await operator.query('UPDATE conflict_fault SET conflicts = $1, code = $2', [conflicts, code]);
    const outcome: { value?: unknown; error?: unknown } = await write().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    const { rows } = await operator.query<{ attempts: string }>(
      'SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS attempts FROM conflict_attempts',
    );
    return { ...outcome, attempts: Number(rows[0]?.attempts) };
  }

  it('runs the transaction again after a conflict and writes the row once', async () => {
    const uuid = randomUUID();
    const outcome = await withConflicts(4, () =>
      store.idMap.upsert([{ kind: 'group', legacyId: 'G-again', uuid }], Date.now()),
    );
    assert.equal(outcome.attempts, 5);
    assert.deepEqual(outcome.value, { added: 1, changed: 0, unchanged: 0 });
    assert.deepEqual([...(await store.idMap.byLegacyIds('group', ['G-again']))], [['G-again', uuid]]);
  });

  it('gives up after five conflicts in a row: StoreConflictError, a 503 with Retry-After 1, nothing written', async () => {
    const outcome = await withConflicts(5, () =>
      store.idMap.upsert([{ kind: 'group', legacyId: 'G-given-up', uuid: randomUUID() }], Date.now()),
    );
    assert.equal(outcome.attempts, 5, 'five attempts, not more');
    assert.ok(outcome.error instanceof StoreConflictError, String(outcome.error));
    assert.match(outcome.error.message, /changed under this write 5 times in a row.*try again/);
    const legacy = toLegacyError(outcome.error);
    assert.equal(legacy.status, 503);
    assert.deepEqual(legacy.headers, { 'Retry-After': '1' });
    assert.doesNotMatch(legacy.message, /duplicate key|id_map_pkey/);
    assert.equal((await store.idMap.byLegacyIds('group', ['G-given-up'])).size, 0);
  });

  it('assigns a sequence ID after conflicts, and gives up on the fifth', async () => {
    const uuid = randomUUID();
    const assigned = await withConflicts(2, () =>
      store.idMap.assignSequence('user', 'U-', 1, uuid, Date.now()),
    );
    assert.equal(assigned.attempts, 3);
    assert.deepEqual(assigned.value, { legacyId: 'U-1', inserted: true });
    const refused = await withConflicts(5, () =>
      store.idMap.assignSequence('user', 'U-', 1, randomUUID(), Date.now()),
    );
    assert.equal(refused.attempts, 5);
    assert.ok(refused.error instanceof StoreConflictError, String(refused.error));
  });

  for (const [code, name] of [
    ['40001', 'serialization_failure'],
    ['40P01', 'deadlock_detected'],
  ] as const) {
    it(`runs a transaction the server rolled back for a concurrent one (${code}, ${name}) again, four attempts in all, then answers 503`, async () => {
      const uuid = randomUUID();
      const again = await withConflicts(
        3,
        () => store.idMap.assignSequence('user', `S${code}-`, 1, uuid, Date.now()),
        code,
      );
      assert.equal(again.attempts, 4);
      assert.deepEqual(again.value, { legacyId: `S${code}-1`, inserted: true });
      const refused = await withConflicts(
        4,
        () => store.idMap.assignSequence('user', `S${code}-`, 1, randomUUID(), Date.now()),
        code,
      );
      assert.equal(refused.attempts, 4, 'four attempts, not more');
      assert.ok(refused.error instanceof StoreUnavailableError, String(refused.error));
      assert.equal(
        refused.error.message,
        `the store (PostgreSQL) is unavailable: other sessions kept changing the same rows (${code})`,
      );
      const legacy = toLegacyError(refused.error);
      assert.equal(legacy.status, 503);
      assert.deepEqual(legacy.headers, { 'Retry-After': '5' });
    });
  }
});
