// The same code on a second mapping profile (test/fixtures/mappings/alt-uuid) that maps
// differently — users by UUID, groups by a persisted ID table (2,000 rows imported from a CSV
// file by `idm-compat ids import`, new ones by a sequence rule), auxInfo and importId swapped, another status value table — proves that the
// behaviour follows the tables and not the code.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import { userListItemSchema, userSchema } from '../src/legacy/user/schema.js';
import { uuidToBase58 } from '../src/lib/uuid.js';
import {
  ALT_PROFILE,
  DEFAULT_PROFILE,
  linksOf,
  sandboxUser,
  startUserProxy,
  type UserProxy,
} from './user-helpers.js';

type ErrorBody = { code: number; message: string; errors?: { path: string; message: string }[] };

/** Runs the CLI in-process with captured output. */
async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CommandIo = { out: (text) => (out += `${text}\n`), err: (text) => (err += `${text}\n`), env: {} };
  const code = await runCli(argv, io);
  return { code, out, err };
}

/** A config file for the CLI naming the proxy's own store, its profile and its successor (the sandbox). */
function writeConfig(proxy: UserProxy): string {
  const file = path.join(proxy.dir, `config-${randomUUID()}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      server: { port: 0 },
      successor: {
        baseUrl: proxy.sandbox.apiBaseUrl,
        auth: {
          type: 'oauth2',
          issuer: proxy.sandbox.issuer,
          clientId: proxy.sandbox.clients.readWrite.clientId,
          clientSecret: proxy.sandbox.clients.readWrite.clientSecret,
        },
      },
      store: { type: 'sqlite', path: path.join(proxy.dir, 'store.db') },
      mappings: { dir: path.dirname(proxy.profileDir), profile: path.basename(proxy.profileDir) },
    }),
  );
  return file;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('a second mapping profile (alt-uuid)', () => {
  let proxy: UserProxy;
  let adminUuid: string;

  before(async () => {
    proxy = await startUserProxy({ profile: ALT_PROFILE });
    adminUuid = sandboxUser(proxy, 'admin')?.id ?? '';
    const lehrer = proxy.sandbox.data.groupByAccount('lehrer')?.id ?? '';
    const klasse5a = proxy.sandbox.data.groupByAccount('klasse.5a')?.id ?? '';
    // A 2,000-row CSV, imported the way an operator does it (`idm-compat ids import FILE.csv`)
    // into the proxy's store: two real groups (one UUID base58), the rest legacy IDs of groups
    // the successor does not have.
    const csv = [
      'kind,legacy_id,uuid',
      `group,G-LEHRER,${lehrer}`,
      `group,G-5A,${uuidToBase58(klasse5a)}`,
      ...Array.from({ length: 1998 }, (_, i) => `group,legacy-${String(i).padStart(4, '0')},${randomUUID()}`),
    ];
    const file = path.join(proxy.dir, 'groups.csv');
    writeFileSync(file, `${csv.join('\n')}\n`);
    const imported = await cli(['ids', 'import', file, '--config', writeConfig(proxy), '--json']);
    assert.equal(imported.code, 0, imported.out + imported.err);
    assert.deepEqual(JSON.parse(imported.out), {
      file,
      rows: 2000,
      added: 2000,
      changed: 0,
      unchanged: 0,
      rejected: 0,
      rejections: [],
      warnings: [],
      notTableKinds: [],
    });
    assert.equal((await proxy.store.idMap.list('group')).length, 2000);
  });
  after(async () => {
    await proxy?.close();
  });

  it('loads the other profile', () => {
    assert.equal(proxy.mappings.current().profile.name, 'alt-uuid');
  });

  it('uses dashed UUIDs as user IDs, in _id and in references', async () => {
    const answer = await proxy.call<{ _id: string; username: string; createdBy: string | null }[]>(
      'GET',
      '/Entity/User',
    );
    assert.equal(answer.status, 200, answer.text);
    const list = z.array(userListItemSchema.strict()).parse(answer.body);
    for (const user of list) assert.match(user._id, UUID);
    const thomas = list.find((u) => u.username === 'thomas.becker');
    assert.equal(thomas?._id, sandboxUser(proxy, 'thomas.becker')?.id);
    assert.equal(thomas?.createdBy, adminUuid);
  });

  it('reads a user by dashed or base58 UUID with one successor call; account names are unknown IDs', async () => {
    const uuid = sandboxUser(proxy, 'thomas.becker')?.id ?? '';
    proxy.resetCounts();
    const dashed = await proxy.call<Record<string, unknown>>('GET', `/Entity/User/${uuid}`);
    assert.equal(dashed.status, 200, dashed.text);
    userSchema.strict().parse(dashed.body);
    assert.deepEqual(proxy.apiCalls(), { 'GET /users/{id}': 1 });
    const base58 = await proxy.call('GET', `/Entity/User/${uuidToBase58(uuid)}`);
    assert.deepEqual(base58.body, dashed.body);
    assert.equal((await proxy.call('GET', '/Entity/User/thomas.becker')).status, 404);
    assert.equal((await proxy.call('GET', `/Entity/User/${randomUUID()}`)).status, 404);
  });

  it('writes auxInfo and importId to the swapped attributes and reads them back', async () => {
    const created = await proxy.call<{ _id: string; auxInfo: string; importId: string }>(
      'POST',
      '/Entity/User',
      {
        username: 'alt.user',
        firstname: 'Alt',
        lastname: 'User',
        auxInfo: '7b',
        importId: 'IMP-1',
      },
    );
    assert.equal(created.status, 201, created.text);
    assert.match(created.body._id, UUID);
    assert.equal(created.headers.get('location'), `${proxy.core}/Entity/User/${created.body._id}`);
    assert.equal(created.body.auxInfo, '7b');
    assert.equal(created.body.importId, 'IMP-1');
    const record = sandboxUser(proxy, 'alt.user');
    assert.equal(record?.importId, '7b', 'legacy auxInfo lives in the successor importId');
    assert.equal(record?.auxInfo, 'IMP-1');
  });

  it('translates status through its own value table, both ways', async () => {
    const id = sandboxUser(proxy, 'alt.user')?.id ?? '';
    for (const [legacy, successor] of [
      ['r', 'inactive'],
      ['i', 'registered'],
      ['a', 'active'],
    ] as const) {
      const updated = await proxy.call<{ status: string }>('PUT', `/Entity/User/${id}`, { status: legacy });
      assert.equal(updated.status, 200, updated.text);
      assert.equal(updated.body.status, legacy);
      assert.equal(sandboxUser(proxy, 'alt.user')?.status, successor);
      const read = await proxy.call<{ status: string }>('GET', `/Entity/User/${id}`);
      assert.equal(read.body.status, legacy);
    }
  });

  describe('groups by an ID table', () => {
    it('links groups by their table IDs with one batched existence check', async () => {
      const id = sandboxUser(proxy, 'alt.user')?.id ?? '';
      proxy.resetCounts();
      const answer = await proxy.call<{ groups: string[] }>('POST', `/Entity/User/${id}/link/groups`, [
        'G-LEHRER',
        'G-5A',
      ]);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body.groups.slice().sort(), ['G-5A', 'G-LEHRER']);
      assert.deepEqual(linksOf(proxy, 'alt.user').groups, ['klasse.5a', 'lehrer']);
      assert.deepEqual(proxy.apiCalls(), { 'GET /groups': 1, 'POST /users/{id}/groups': 1 });
    });

    it('reads a group by its imported ID and links users to it from the group side', async () => {
      const thomas = sandboxUser(proxy, 'thomas.becker')?.id ?? '';
      assert.ok(!linksOf(proxy, 'thomas.becker').groups.includes('klasse.5a'), 'not a member before');
      const group = await proxy.call<{ _id: string; account: string }>('GET', '/Entity/Group/G-5A');
      assert.equal(group.status, 200, group.text);
      assert.equal(group.body._id, 'G-5A');
      assert.equal(group.body.account, 'klasse.5a');
      const linked = await proxy.call<{ _id: string; users: string[] }>(
        'POST',
        '/Entity/Group/G-5A/link/users',
        [thomas],
      );
      assert.equal(linked.status, 200, linked.text);
      assert.equal(linked.body._id, 'G-5A');
      assert.ok(linked.body.users.includes(thomas), linked.text);
      assert.ok(linksOf(proxy, 'thomas.becker').groups.includes('klasse.5a'));
      assert.equal(
        (await proxy.call('GET', '/Entity/Group/legacy-0100')).status,
        404,
        'a row without a group',
      );
    });

    it('rejects IDs missing from the table and table rows whose group the successor lacks', async () => {
      const id = sandboxUser(proxy, 'alt.user')?.id ?? '';
      const answer = await proxy.call<ErrorBody>('POST', `/Entity/User/${id}/link/groups`, [
        'G-LEHRER',
        'G-NOPE',
        'legacy-0100',
      ]);
      assert.equal(answer.status, 400, answer.text);
      assert.deepEqual(
        answer.body.errors?.map((e) => e.path),
        ['body.1', 'body.2'],
      );
      assert.deepEqual(linksOf(proxy, 'alt.user').groups, ['klasse.5a', 'lehrer']);
    });

    it('gives groups without a row IDs by the sequence rule, stable across reads', async () => {
      const first = await proxy.call<{ groups: string[]; username: string }[]>(
        'GET',
        '/Entity/User?extended',
      );
      assert.equal(first.status, 200, first.text);
      const admin = first.body.find((u) => u.username === 'admin');
      const [assignedId] = admin?.groups ?? [];
      assert.match(assignedId ?? '', /^G\d+$/, 'admins had no row: a number of the sequence');
      const alt = first.body.find((u) => u.username === 'alt.user');
      assert.deepEqual(alt?.groups.slice().sort(), ['G-5A', 'G-LEHRER']);
      const assigned = await proxy.store.idMap.byUuids('group', [
        proxy.sandbox.data.groupByAccount('admins')?.id ?? '',
      ]);
      assert.deepEqual([...assigned.values()], [assignedId]);
      const second = await proxy.call<{ groups: string[]; username: string }[]>(
        'GET',
        '/Entity/User?extended',
      );
      assert.deepEqual(second.body, first.body);
      const linked = await proxy.call<{ groups: string[] }>(
        'POST',
        `/Entity/User/${sandboxUser(proxy, 'alt.user')?.id}/link/groups`,
        [assignedId],
      );
      assert.equal(linked.status, 200, linked.text);
      assert.ok(linked.body.groups.includes(assignedId ?? ''));
    });
  });
});

describe('operation tables drive what the proxy sends (a copy of the default profile, edited)', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy({ copyProfile: true });
  });
  after(async () => {
    await proxy?.close();
  });

  type Operations = {
    operations: Record<string, { steps: Record<string, unknown>[] } & Record<string, unknown>>;
  };

  /** Edits one operation of the copied profile's operation table and reloads the tables (as SIGHUP does). */
  function editOperation(
    file: string,
    id: string,
    change: (operation: Operations['operations'][string]) => void,
  ) {
    const full = path.join(proxy.profileDir, 'operations', file);
    const table = JSON.parse(readFileSync(full, 'utf8')) as Operations;
    const operation = table.operations[id];
    assert.ok(operation, `${id} in ${file}`);
    change(operation);
    writeFileSync(full, JSON.stringify(table, null, 2));
    const reloaded = proxy.mappings.reload();
    assert.ok(reloaded.ok, JSON.stringify(reloaded));
  }

  it('user.list: dropping the deleted filter from the step query lists soft-deleted users too', async () => {
    assert.notEqual(proxy.profileDir, DEFAULT_PROFILE, 'a copy, not the shipped profile');
    assert.ok(sandboxUser(proxy, 'ben.krause')?.deleted, 'ben.krause is soft-deleted in the sandbox');
    const listed = async () => {
      proxy.resetCounts();
      const answer = await proxy.call<{ _id: string }[]>('GET', '/Entity/User');
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(proxy.apiCalls(), { 'GET /users': 1 });
      return answer.body.map((u) => u._id);
    };
    const before = await listed();
    assert.ok(!before.includes('ben.krause'));
    assert.ok(before.includes('lena.mueller'));

    editOperation('user.json', 'user.list', (operation) => {
      const [step] = operation.steps;
      const query = step?.query as Record<string, string> | undefined;
      assert.equal(query?.deleted, 'false');
      delete query?.deleted;
    });
    const after = await listed();
    assert.deepEqual(
      after.filter((id) => !before.includes(id)),
      ['ben.krause'],
    );
    assert.equal(after.length, before.length + 1);
  });

  it('group.link.users.add: routed through the users side, one write per user instead of one for all', async () => {
    const add = async (group: string, users: string[]) => {
      proxy.mappings.current().ids.clear();
      proxy.resetCounts();
      const answer = await proxy.call<{ users: string[] }>(
        'POST',
        `/Entity/Group/${group}/link/users`,
        users,
      );
      assert.equal(answer.status, 200, answer.text);
      for (const user of users) assert.ok(answer.body.users.includes(user), answer.text);
      for (const user of users) assert.ok(linksOf(proxy, user).groups.includes(group), `${user} in ${group}`);
      return proxy.apiCalls();
    };
    assert.deepEqual(await add('ag.robotik', ['lena.mueller', 'jonas.schmidt']), {
      'GET /groups': 1,
      'GET /users': 1,
      'POST /groups/{id}/members': 1,
    });

    editOperation('group.json', 'group.link.users.add', (operation) => {
      operation.steps = [
        {
          method: 'POST',
          path: '/users/{item.uuid}/groups',
          body: { addedGroups: ['{entity.iri}'] },
          forEach: 'items',
        },
      ];
    });
    assert.deepEqual(await add('ag.robotik', ['mia.fischer', 'finn.koch', 'luca.richter']), {
      'GET /groups': 1,
      'GET /users': 1,
      'POST /users/{id}/groups': 3,
      'GET /groups/{id}': 1,
    });
  });
});
