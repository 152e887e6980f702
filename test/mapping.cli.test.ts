// The mapping CLI in-process (runCli with captured output): `mappings check [--live]` on the
// shipped and on deliberately broken profiles, `ids import` of a generated 2,000-row CSV and of
// bad rows, `ids export`, and `serve` refusing to start on a broken profile.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';
import { uuidToBase58 } from '../src/lib/uuid.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/index.js';
import { openSqliteStore } from '../src/store/sqlite/index.js';
import { spawnCli } from './cli-helpers.js';
import { idMapRows } from './id-map-rows.js';
import { successorConfigFor } from './sandbox-helpers.js';
import { hardLinkTo, keepingShippedFiles } from './shipped-files.js';
import { tempDir } from './temp-dir.js';
import { DEFAULT_PROFILE } from './user-helpers.js';

type Json = Record<string, unknown>;

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CommandIo = { out: (text) => (out += `${text}\n`), err: (text) => (err += `${text}\n`), env: {} };
  const code = await runCli(argv, io);
  return { code, out, err };
}

/** A config file: a store in `dir` and the profile folder given; the successor is `sandbox` or the embedded one. */
function writeConfig(dir: string, profileFolder: string, sandbox?: RunningSandbox): string {
  const file = path.join(dir, `config-${randomUUID()}.json`);
  const successor = sandbox
    ? {
        successor: successorConfigFor(sandbox),
      }
    : { sandbox: { enabled: true } };
  writeFileSync(
    file,
    JSON.stringify({
      ...successor,
      server: { port: 0 },
      store: { type: 'sqlite', path: path.join(dir, 'store.db') },
      mappings: { dir: path.dirname(profileFolder), profile: path.basename(profileFolder) },
    }),
  );
  return file;
}

function copyProfile(dir: string, name: string, change: (file: string, json: Json) => void): string {
  const folder = path.join(dir, 'profiles', name);
  cpSync(DEFAULT_PROFILE, folder, { recursive: true });
  for (const file of [
    'profile.json',
    'entities.json',
    'ids.json',
    'fields/user.json',
    'operations/user.json',
  ]) {
    const full = path.join(folder, file);
    const json = JSON.parse(readFileSync(full, 'utf8')) as Json;
    change(file, json);
    writeFileSync(full, JSON.stringify(json, null, 2));
  }
  return folder;
}

/** What `mappings check --live --json` printed: whether it checked live, and its problems. */
interface LiveReport {
  live: boolean;
  ok: boolean;
  problems: { file: string; path: string; message: string }[];
}

/** Runs `mappings check --live --json` on `config`: its exit code, output and parsed report. */
async function checkLive(
  config: string,
): Promise<{ code: number; out: string; err: string; report: LiveReport }> {
  const run = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
  return { ...run, report: JSON.parse(run.out) as LiveReport };
}

describe('idm-compat mappings check', () => {
  let sandbox: RunningSandbox;
  let dir: string;

  before(async () => {
    sandbox = await startSandbox({ port: 0 });
    dir = tempDir('cli');
  });
  after(async () => {
    await sandbox?.close();
  });

  it('accepts the shipped profile offline and against the successor', async () => {
    const config = writeConfig(dir, DEFAULT_PROFILE, sandbox);
    const offline = await cli(['mappings', 'check', '--config', config]);
    assert.equal(offline.code, 0, offline.err);
    assert.match(offline.out, /mapping profile iserv-idm-v1 .* is valid/);
    const live = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
    assert.equal(live.code, 0, live.out + live.err);
    const report = JSON.parse(live.out) as { live: boolean; ok: boolean; problems: unknown[] };
    assert.deepEqual(report.problems, []);
    assert.equal(report.ok, true);
    assert.equal(report.live, true);
    // The check touches no store: it created the configured one, empty, which `usage` and
    // `apiuser list` then took for the real one instead of refusing a store that is not there.
    assert.equal(existsSync(path.join(dir, 'store.db')), false, 'no store created');
  });

  it('reports an offline problem with file, JSON path and reason, exit 1', async () => {
    const folder = copyProfile(dir, 'offline-broken', (file, json) => {
      if (file === 'fields/user.json') ((json.fields as Json).status as Json).values = 'statuses';
    });
    const result = await cli(['mappings', 'check', '--config', writeConfig(dir, folder)]);
    assert.equal(result.code, 1);
    assert.match(result.err, /fields\/user\.json \$\.fields\.status\.values: no value table named statuses/);
  });

  it('--live on a profile that fails offline says that the live check did not run', async () => {
    // --json said "live": true, as if the successor had been checked.
    const folder = copyProfile(dir, 'offline-broken-live', (file, json) => {
      if (file === 'fields/user.json') ((json.fields as Json).status as Json).values = 'statuses';
    });
    const config = writeConfig(dir, folder, sandbox);
    const json = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
    assert.equal(json.code, 1);
    const report = JSON.parse(json.out) as { live: boolean; ok: boolean; problems: { path: string }[] };
    assert.equal(report.live, false);
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.problems.map((p) => p.path),
      ['$.fields.status.values'],
    );
    const text = await cli(['mappings', 'check', '--live', '--config', config]);
    assert.equal(text.code, 1);
    assert.match(
      text.err,
      /statuses \(known: userStatus\)\nnot checked against the successor: fix these first\n$/,
    );
    const offline = await cli(['mappings', 'check', '--config', config, '--json']);
    assert.equal((JSON.parse(offline.out) as { live: boolean }).live, false);
  });

  it('--live with a successor it cannot reach: the configuration file is named, not the profile, and nothing counts as checked', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const successor = successorConfigFor(sandbox);
    for (const [change, at, why] of [
      // The API's address: the token comes, the OpenAPI document does not.
      [
        { baseUrl: `http://127.0.0.1:${port}/iserv/idm/api/v1` },
        '$.successor.baseUrl',
        /could not reach the successor at http:\/\/127\.0\.0\.1:\d+ .*ECONNREFUSED/,
      ],
      // The client's credentials: no token.
      [{ auth: { ...successor.auth, clientSecret: 'not-the-secret' } }, '$.successor.auth', /token/],
    ] as const) {
      const config = writeConfig(dir, DEFAULT_PROFILE, sandbox);
      const written = JSON.parse(readFileSync(config, 'utf8')) as Json;
      writeFileSync(config, JSON.stringify({ ...written, successor: { ...successor, ...change } }));
      const json = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
      assert.equal(json.code, 1, json.out + json.err);
      const report = JSON.parse(json.out) as {
        live: boolean;
        ok: boolean;
        problems: { file: string; path: string; message: string }[];
      };
      assert.equal(report.live, false, at);
      assert.equal(report.problems.length, 1, json.out);
      const [problem] = report.problems;
      assert.equal(problem?.file, config);
      assert.equal(problem?.path, at);
      assert.match(
        problem?.message ?? '',
        /^cannot reach the successor, so nothing was checked against it: /,
      );
      assert.match(problem?.message ?? '', why);
      const text = await cli(['mappings', 'check', '--live', '--config', config]);
      assert.equal(text.code, 1);
      assert.match(text.err, /not checked against the successor: fix these first\n$/);
    }
    // A wrong path in successor.baseUrl: the server answers, but 404 for the OpenAPI document and
    // the readiness read alike. The configuration's base URL, not the profile's OpenAPI locations
    // (it was filed under profile.json $.successor.openApi, with "live": true).
    const wrongBase = writeConfig(dir, DEFAULT_PROFILE, sandbox);
    const base = JSON.parse(readFileSync(wrongBase, 'utf8')) as Json;
    writeFileSync(
      wrongBase,
      JSON.stringify({
        ...base,
        successor: { ...successor, baseUrl: sandbox.apiBaseUrl.replace(/\/v1$/, '/v2') },
      }),
    );
    const wrongBaseReport = await checkLive(wrongBase);
    assert.equal(wrongBaseReport.code, 1, wrongBaseReport.out + wrongBaseReport.err);
    const wrongBaseJson = wrongBaseReport.report;
    assert.equal(wrongBaseJson.live, false);
    assert.deepEqual(
      wrongBaseJson.problems.map((problem) => [problem.file, problem.path]),
      [[wrongBase, '$.successor.baseUrl']],
    );
    assert.match(
      wrongBaseJson.problems[0]?.message ?? '',
      /^no IDM API under \/iserv\/idm\/api\/v2, so nothing was checked against it: the readiness read \(GET \/users\) and the OpenAPI document \(\/docs\.jsonopenapi, \/docs\.json\) are not found there/,
    );
    // The profile's OpenAPI locations wrong, the API there: that is the profile's problem, found
    // by the live check.
    const wrongDocs = copyProfile(dir, 'wrong-openapi', (file, json) => {
      if (file === 'profile.json') (json.successor as Json).openApi = ['/openapi.json'];
    });
    const docsReport = await checkLive(writeConfig(dir, wrongDocs, sandbox));
    assert.equal(docsReport.code, 1, docsReport.out + docsReport.err);
    const docsJson = docsReport.report;
    assert.equal(docsJson.live, true);
    assert.deepEqual(
      docsJson.problems.map((problem) => [problem.file, problem.path]),
      [['profile.json', '$.successor.openApi']],
    );
    assert.match(
      docsJson.problems[0]?.message ?? '',
      /^cannot read the successor's OpenAPI document \(\/openapi\.json: /,
    );
    // A wrong API key: the OpenAPI document is public, the sample reads are refused. One problem
    // on successor.auth, not one per kind under the field tables. The document was checked, so
    // `live` is true: what it showed is listed beside, and is no offline problem to "fix first".
    const config = writeConfig(dir, DEFAULT_PROFILE, sandbox);
    const written = JSON.parse(readFileSync(config, 'utf8')) as Json;
    writeFileSync(
      config,
      JSON.stringify({
        ...written,
        successor: { baseUrl: sandbox.apiBaseUrl, auth: { type: 'apiKey', key: 'not-the-key' } },
      }),
    );
    const json = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
    assert.equal(json.code, 1, json.out + json.err);
    const report = JSON.parse(json.out) as {
      live: boolean;
      problems: { file: string; path: string; message: string }[];
    };
    assert.equal(report.live, true);
    assert.deepEqual(
      report.problems.map((problem) => [problem.file, problem.path]),
      [[config, '$.successor.auth']],
      json.out,
    );
    // With a finding of the document beside it (a paging parameter it does not take), the text
    // does not call the whole check undone.
    const pagingProfile = copyProfile(dir, 'paging-pg', (file, json) => {
      if (file === 'profile.json') ((json.successor as Json).paging as Json).page = 'pg';
    });
    writeFileSync(
      config,
      JSON.stringify({
        ...JSON.parse(readFileSync(writeConfig(dir, pagingProfile, sandbox), 'utf8')),
        successor: { baseUrl: sandbox.apiBaseUrl, auth: { type: 'apiKey', key: 'not-the-key' } },
      }),
    );
    const both = await cli(['mappings', 'check', '--live', '--config', config]);
    assert.equal(both.code, 1, both.out + both.err);
    assert.match(
      both.err,
      /profile\.json \$\.successor\.paging\.page: the successor documents no query parameter pg/,
    );
    assert.match(
      both.err,
      /\$\.successor\.auth: cannot read from the successor, so the sample reads were not checked/,
    );
    assert.doesNotMatch(both.err, /not checked against the successor: fix these first/);
    assert.match(
      report.problems[0]?.message ?? '',
      /^cannot read from the successor, so the sample reads were not checked: /,
    );
    assert.doesNotMatch(json.out, /not-the-key/);
    // A status the successor gave for one kind's read (a 500 for its attributes) is that kind's
    // finding, and the other kinds are read still; it is not the connection's.
    sandbox.faults.set({ rules: [{ match: 'GET /groups', status: 500 }] });
    try {
      const one = await checkLive(writeConfig(dir, DEFAULT_PROFILE, sandbox));
      assert.equal(one.code, 1, one.out + one.err);
      const found = one.report;
      assert.equal(found.live, true);
      assert.deepEqual(
        found.problems.map((problem) => [problem.file, problem.path]),
        [['fields/group.json', '$.fields']],
        one.out,
      );
    } finally {
      sandbox.faults.reset();
    }
  });

  it('--live catches mapped paths, parameters and attributes the successor does not have', async () => {
    const folder = copyProfile(dir, 'live-broken', (file, json) => {
      if (file === 'fields/user.json') ((json.fields as Json).lastlogin as Json).attribute = 'lastLoginAt';
      if (file === 'ids.json') ((json.kinds as Json).user as Json).filter = 'account';
      if (file === 'operations/user.json') {
        const restore = (json.operations as Record<string, Json>)['user.restore'] as Json;
        ((restore.steps as Json[])[0] as Json).path = '/users/{entity.uuid}/undelete';
        // Passed --live: the refusal of a deleted user then read a 400 for the caller.
        const update = (json.operations as Record<string, Json>)['user.update'] as Json;
        ((update.subject as Json).refuseWhen as Json as Json).attribute = 'delted';
      }
    });
    const offline = await cli(['mappings', 'check', '--config', writeConfig(dir, folder, sandbox)]);
    assert.equal(offline.code, 0, 'the broken profile is well-formed');
    const live = await cli([
      'mappings',
      'check',
      '--live',
      '--config',
      writeConfig(dir, folder, sandbox),
      '--json',
    ]);
    assert.equal(live.code, 1, live.out);
    const { problems } = JSON.parse(live.out) as {
      problems: { file: string; path: string; message: string }[];
    };
    const find = (file: string, at: string) => problems.find((p) => p.file === file && p.path === at);
    assert.match(
      find(path.join('fields', 'user.json'), '$.fields.lastlogin.attribute')?.message ??
        JSON.stringify(problems),
      /no attribute lastLoginAt; closest: lastLogin/,
    );
    assert.match(
      find('ids.json', '$.kinds.user.filter')?.message ?? JSON.stringify(problems),
      /no query parameter account on GET \/users/,
    );
    assert.match(
      find(path.join('operations', 'user.json'), '$.operations["user.restore"].steps[0].path')?.message ??
        JSON.stringify(problems),
      /no path like POST \/users\/\{entity\.uuid\}\/undelete; closest it offers: .*\/users\/\{id\}\/restore/,
    );
    assert.match(
      find(path.join('operations', 'user.json'), '$.operations["user.update"].subject.refuseWhen.attribute')
        ?.message ?? JSON.stringify(problems),
      /no attribute delted; closest: deleted/,
    );
    assert.ok(
      problems.some((p) => /sample read of \/users/.test(p.message)),
      'the sample read with the wrong attribute fails too',
    );
  });

  it("--live names an ID table's assign attribute the successor lacks in ids.json, not under the references to the kind", async () => {
    // It was filed as "fields/user.json $.fields.groups.ref: the successor's group has no attribute
    // groupname" (and so for every reference), and ids.json, where the mistake was, not at all.
    const folder = copyProfile(dir, 'live-assign', (file, json) => {
      if (file === 'ids.json')
        (json.kinds as Json).group = {
          strategy: 'table',
          assign: { rule: 'attribute', attribute: 'groupname' },
        };
    });
    const live = await checkLive(writeConfig(dir, folder, sandbox));
    assert.equal(live.code, 1, live.out);
    const { problems } = live.report;
    const assign = problems.find((p) => p.file === 'ids.json' && p.path === '$.kinds.group.assign.attribute');
    assert.match(assign?.message ?? JSON.stringify(problems), /no attribute groupname; closest: group/);
    assert.deepEqual(
      problems.filter((p) => p.path.endsWith('.ref') || /sample read/.test(p.message)),
      [],
      'the field tables are not blamed, by the document or by sample reads',
    );
  });

  it('--live checks what writes send: body keys, {fields} attributes, content types and query parameters', async () => {
    const folder = copyProfile(dir, 'live-bodies', (file, json) => {
      if (file === 'fields/user.json') ((json.fields as Json).created as Json).direction = 'both';
      if (file !== 'operations/user.json') return;
      const step = (id: string) =>
        ((((json.operations as Record<string, Json>)[id] as Json).steps as Json[])[0] ?? {}) as Json;
      step('user.link.groups.add').body = { addedGroupz: '{items.iri}' };
      (step('user.link.roles.remove').undo as Json).body = { addedRolez: '{applied.iri}' };
      step('user.update').contentType = 'application/json';
      step('user.restore').query = { _atributes: '{attributes}' };
    });
    const config = writeConfig(dir, folder, sandbox);
    assert.equal((await cli(['mappings', 'check', '--config', config])).code, 0, 'well-formed offline');

    const text = await cli(['mappings', 'check', '--live', '--config', config]);
    assert.equal(text.code, 1, text.out + text.err);
    assert.match(
      text.err,
      /operations\/user\.json \$\.operations\["user\.link\.groups\.add"\]\.steps\[0\]\.body\.addedGroupz: the body of the successor's POST \/users\/\{id\}\/groups has no property addedGroupz; closest: addedGroups/,
    );

    const live = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
    assert.equal(live.code, 1);
    const { problems } = JSON.parse(live.out) as {
      problems: { file: string; path: string; message: string }[];
    };
    const ops = path.join('operations', 'user.json');
    const at = (id: string, rest: string) => `$.operations[${JSON.stringify(id)}].steps[0]${rest}`;
    assert.deepEqual(
      problems
        .filter((p) => p.file === ops)
        .map((p) => `${p.path}: ${p.message}`)
        .sort(),
      [
        `${at('user.create', '.body')}: {fields} sends created (field created, writable in ${path.join('fields', 'user.json')}), which the body of the successor's POST /users does not take; it takes user, firstname, lastname, auxInfo, importId, emailAddress, locked, status, type`,
        `${at('user.link.groups.add', '.body.addedGroupz')}: the body of the successor's POST /users/{id}/groups has no property addedGroupz; closest: addedGroups`,
        `${at('user.link.roles.remove', '.undo.body.addedRolez')}: the body of the successor's POST /users/{id}/roles has no property addedRolez; closest: addedRoles`,
        `${at('user.restore', '.query["_atributes"]')}: the successor documents no query parameter _atributes on POST /users/{id}/restore; it takes none`,
        `${at('user.update', '.contentType')}: the successor's PATCH /users/{id} takes application/merge-patch+json, not application/json`,
      ],
    );
  });

  it('--live checks the paging parameters of the collections read page by page, and the readiness path', async () => {
    // Each passed --live: then every list longer than one page was a 502 ("the page repeats"), or
    // every /readyz a 503.
    const successor = (name: string, change: (successor: Json) => void) =>
      copyProfile(dir, name, (file, json) => {
        if (file === 'profile.json') change(json.successor as Json);
      });
    const problemsOf = async (folder: string) => {
      const config = writeConfig(dir, folder, sandbox);
      assert.equal((await cli(['mappings', 'check', '--config', config])).code, 0, 'well-formed offline');
      const live = await cli(['mappings', 'check', '--live', '--config', config, '--json']);
      assert.equal(live.code, 1, live.out);
      const { problems } = JSON.parse(live.out) as {
        problems: { file: string; path: string; message: string }[];
      };
      return problems.map((p) => `${p.file} ${p.path}: ${p.message}`);
    };
    const collections = 'GET /users, GET /groups, GET /roles, GET /privileges, GET /group_flags';

    const page = await problemsOf(
      successor('live-paging-page', (s) => {
        (s.paging as Json).page = 'pg';
        s.readinessPath = '/userz';
      }),
    );
    assert.equal(page.length, 2, page.join('\n'));
    assert.match(
      page.find((p) => p.startsWith('profile.json $.successor.paging.page:')) ?? page.join('\n'),
      new RegExp(`the successor documents no query parameter pg on ${collections}; closest: page,`),
    );
    assert.match(
      page.find((p) => p.startsWith('profile.json $.successor.readinessPath:')) ?? page.join('\n'),
      /the successor has no path like GET \/userz; closest it offers: \/users,/,
    );

    const size = await problemsOf(
      successor('live-paging-size', (s) => {
        (s.paging as Json).itemsPerPage = 'perPage';
      }),
    );
    assert.equal(size.length, 1, size.join('\n'));
    assert.match(
      size[0] ?? '',
      new RegExp(
        `^profile\\.json \\$\\.successor\\.paging\\.itemsPerPage: the successor documents no query parameter perPage on ${collections}; closest: itemsPerPage,`,
      ),
    );

    // The readiness read asks for one item: its route must take the page size too.
    const readiness = await problemsOf(
      successor('live-readiness', (s) => {
        s.readinessPath = '/lookup/users';
      }),
    );
    assert.equal(readiness.length, 1, readiness.join('\n'));
    assert.match(
      readiness[0] ?? '',
      /^profile\.json \$\.successor\.paging\.itemsPerPage: the successor documents no query parameter itemsPerPage on GET \/lookup\/users \(the readiness read\); closest: /,
    );
    // An item's route is named as the readiness path's problem, not the page size's.
    for (const readinessPath of ['/users/admin', '/users/{id}']) {
      const item = await problemsOf(
        successor(`live-readiness-item-${readinessPath.length}`, (s) => {
          s.readinessPath = readinessPath;
        }),
      );
      assert.deepEqual(item, [
        'profile.json $.successor.readinessPath: GET /users/{id} reads one entity, not a collection; the readiness read lists one item of a collection, such as /users',
      ]);
    }
  });
});

describe('idm-compat ids import / export', () => {
  let dir: string;
  let config: string;
  const groupRows = Array.from({ length: 2000 }, (_, i) => ({
    legacy: `GRP-${String(i).padStart(5, '0')}`,
    uuid: randomUUID(),
  }));

  before(() => {
    dir = tempDir('ids');
    config = writeConfig(dir, DEFAULT_PROFILE);
  });

  it('imports a generated 2,000-row CSV and reports what it did; a second run changes nothing', async () => {
    const file = path.join(dir, 'groups.csv');
    const lines = groupRows.map(
      (row, i) => `group,${row.legacy},${i % 2 === 0 ? row.uuid : uuidToBase58(row.uuid)}`,
    );
    writeFileSync(file, `kind,legacy_id,uuid\n${lines.join('\n')}\n`);
    const first = await cli(['ids', 'import', file, '--config', config]);
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /2000 added, 0 changed, 0 unchanged, 0 rejected \(2000 rows\)/);
    assert.match(first.err, /kind group does not use the table ID strategy/);
    const again = await cli(['ids', 'import', file, '--config', config, '--json']);
    assert.equal(again.code, 0);
    assert.deepEqual(
      (({ added, changed, unchanged, rejected }) => ({ added, changed, unchanged, rejected }))(
        JSON.parse(again.out),
      ),
      { added: 0, changed: 0, unchanged: 2000, rejected: 0 },
    );
    const store = openSqliteStore(path.join(dir, 'store.db'));
    try {
      assert.equal(await store.idMap.count('group'), 2000);
      const map = await store.idMap.byLegacyIds('group', ['GRP-00001', 'GRP-01999']);
      assert.equal(map.get('GRP-00001'), groupRows[1]?.uuid, 'base58 input is stored dashed');
      assert.equal(map.get('GRP-01999'), groupRows[1999]?.uuid);
    } finally {
      await store.close();
    }
  });

  it('changes moved rows, rejects bad ones with their line numbers, imports the rest (exit 1)', async () => {
    const file = path.join(dir, 'mixed.csv');
    const moved = randomUUID();
    writeFileSync(
      file,
      [
        'legacy_id,uuid',
        `GRP-00000,${moved}`,
        `GRP-NEW,${randomUUID()}`,
        'GRP-BAD,not-a-uuid',
        `,${randomUUID()}`,
        `GRP-NEW,${randomUUID()}`,
        `GRP-DUP,${moved}`,
        // A base58 UUID cut off in transfer, and a word of the base58 alphabet: imported as UUIDs
        // with zeros in front before (000e1857-…), so their legacy IDs found nothing.
        `GRP-CUT,${uuidToBase58(randomUUID()).slice(0, 20)}`,
        'GRP-WORD,Mississippihappyday',
      ].join('\n'),
    );
    const result = await cli(['ids', 'import', file, '--kind', 'group', '--config', config]);
    assert.equal(result.code, 1);
    assert.match(result.out, /1 added, 1 changed, 0 unchanged, 6 rejected \(8 rows\)/);
    assert.match(result.err, /line 4: not a UUID/);
    assert.match(result.err, /line 5: empty legacy ID/);
    assert.match(result.err, /line 6: legacy ID "GRP-NEW" already given on line 3/);
    assert.match(result.err, /line 7: UUID .* already given on line 2/);
    assert.match(result.err, /line 8: not a UUID/);
    assert.match(result.err, /line 9: not a UUID/);
    const unknownKind = await cli(['ids', 'import', file, '--kind', 'team', '--config', config]);
    assert.equal(unknownKind.code, 2);
    assert.match(unknownKind.err, /unknown kind team/);
  });

  it('exports the table as CSV that imports back unchanged, or as JSON', async () => {
    const csv = await cli(['ids', 'export', '--kind', 'group', '--config', config]);
    assert.equal(csv.code, 0);
    const lines = csv.out.trim().split('\n');
    assert.equal(lines[0], 'kind,legacy_id,uuid,source,updated_at');
    assert.equal(lines.length, 2002);
    const file = path.join(dir, 'export.csv');
    writeFileSync(file, csv.out);
    const reimport = await cli(['ids', 'import', file, '--config', config, '--json']);
    assert.equal(JSON.parse(reimport.out).unchanged, 2001);
    const json = await cli(['ids', 'export', '--json', '--config', config]);
    const rows = JSON.parse(json.out) as { kind: string; legacyId: string; uuid: string }[];
    assert.equal(rows.length, 2001);
    assert.ok(rows.every((row) => row.kind === 'group'));
  });

  it('refuses a file that is no ID table (empty, another header) with exit 2, and reads a short first row as a row', async () => {
    // An empty file and one with another header "imported" 0 rows with exit 0; a first row short
    // of a column was blamed on the header, and nothing was imported.
    const dir = tempDir('ids-headers');
    const config = writeConfig(dir, DEFAULT_PROFILE);
    for (const [name, text, why] of [
      ['empty.csv', '', /the CSV needs a header with the columns legacy_id and uuid .*; the file is empty/],
      ['other.csv', 'foo,bar\n1,2\n', /the CSV needs a header .*; its header is "foo,bar"/],
    ] as const) {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      const run = await cli(['ids', 'import', file, '--kind', 'group', '--config', config]);
      assert.equal(run.code, 2, `${name}: ${run.out}`);
      assert.match(run.err, why);
    }
    const short = path.join(dir, 'short.csv');
    writeFileSync(short, `kind,legacy_id,uuid\ngroup,SHORT-1\ngroup,SHORT-2,${randomUUID()}\n`);
    const run = await cli(['ids', 'import', short, '--config', config]);
    assert.equal(run.code, 1, run.err);
    assert.match(run.out, /1 added, 0 changed, 0 unchanged, 1 rejected \(2 rows\)/);
    assert.match(run.err, /line 2: not a UUID/);
  });

  it('rejects a row whose kind is not the --kind given, instead of importing it under its own', async () => {
    const dir = tempDir('ids-kinds');
    const config = writeConfig(dir, DEFAULT_PROFILE);
    const file = path.join(dir, 'mixed-kinds.csv');
    writeFileSync(
      file,
      `kind,legacy_id,uuid\nuser,KIND-1,${randomUUID()}\n,KIND-2,${randomUUID()}\ngroup,KIND-3,${randomUUID()}\n`,
    );
    const run = await cli(['ids', 'import', file, '--kind', 'group', '--config', config, '--json']);
    assert.equal(run.code, 1, run.err);
    const summary = JSON.parse(run.out) as { added: number; rejections: { line: number; reason: string }[] };
    assert.equal(summary.added, 2);
    assert.deepEqual(summary.rejections, [{ line: 2, reason: 'kind "user", but --kind group' }]);
  });

  it('names a row by the line it starts on, also after a quoted field with CRLF or LF line breaks', async () => {
    // After a CRLF inside quotes every later row was named one line too far (csv-parse counts the
    // CR and the LF), and a row over several lines was named by its last line.
    const dir = tempDir('ids-lines');
    const config = writeConfig(dir, DEFAULT_PROFILE);
    const file = path.join(dir, 'lines.csv');
    writeFileSync(
      file,
      [
        'kind,legacy_id,uuid', // 1
        'group,"q', // 2
        'q",bad', // 3
        '', // 4
        ' ', // 5
        'group,L6,bad', // 6
        'group,"a\nb\nc",bad', // 7–9
        'group,L10,bad', // 10
      ].join('\r\n'),
    );
    const run = await cli(['ids', 'import', file, '--config', config, '--json']);
    assert.equal(run.code, 1, run.err);
    const { rejections } = JSON.parse(run.out) as { rejections: { line: number }[] };
    assert.deepEqual(
      rejections.map((row) => row.line),
      [2, 6, 7, 10],
    );
    // Lines that end in a lone CR (Excel for Mac), and a lone CR inside quotes in an LF file.
    writeFileSync(file, 'kind,legacy_id,uuid\r\rgroup,"a\r\rb",bad\rgroup,L5,bad\r');
    const mac = await cli(['ids', 'import', file, '--config', config, '--json']);
    assert.deepEqual(
      (JSON.parse(mac.out) as { rejections: { line: number }[] }).rejections.map((row) => row.line),
      [3, 6],
    );
    writeFileSync(file, 'kind,legacy_id,uuid\ngroup,"a\rb",bad\ngroup,L4,bad\n');
    const lone = await cli(['ids', 'import', file, '--config', config, '--json']);
    assert.deepEqual(
      (JSON.parse(lone.out) as { rejections: { line: number }[] }).rejections.map((row) => row.line),
      [2, 4],
    );
  });

  it('refuses a header naming a column twice, and --kind given twice with different values (exit 2)', async () => {
    // The last column won unseen: `legacy_id` twice imported the second one's value, and an empty
    // last column rejected the row as "empty legacy ID"; `--kind user --kind group` imported as group.
    // Two names of one part (`legacy_id` and an export's row number `id`) take the first in order.
    const dir = tempDir('ids-twice');
    const config = writeConfig(dir, DEFAULT_PROFILE);
    for (const [header, why] of [
      ['kind,legacy_id,uuid,legacy_id', /the column legacy_id twice: keep one/],
      ['kind,uuid,legacy_id,uuid', /the column uuid twice: keep one/],
      ['Kind,legacy_id,uuid,kind', /the column kind twice: keep one/],
    ] as const) {
      const file = path.join(dir, 'twice.csv');
      writeFileSync(file, `${header}\ngroup,first,${randomUUID()},second\n`);
      const run = await cli(['ids', 'import', file, '--config', config]);
      assert.equal(run.code, 2, `${header}: ${run.out}`);
      assert.match(run.err, why);
    }
    const numbered = path.join(dir, 'numbered.csv');
    writeFileSync(numbered, `id,kind,legacy_id,uuid\n1,group,NUMBERED,${randomUUID()}\n`);
    const first = await cli(['ids', 'import', numbered, '--config', config, '--json']);
    assert.equal(first.code, 0, first.err);
    const file = path.join(dir, 'k.csv');
    writeFileSync(file, `legacy_id,uuid\nteachers,${randomUUID()}\n`);
    const kinds = await cli(['ids', 'import', file, '--kind', 'user', '--kind', 'group', '--config', config]);
    assert.equal(kinds.code, 2, kinds.out);
    assert.match(
      kinds.err,
      /^error: option --kind given twice with different values \("user", "group"\): give it once/,
    );
    const store = openSqliteStore(path.join(dir, 'store.db'));
    try {
      assert.deepEqual([...(await store.idMap.byLegacyIds('group', ['NUMBERED', '1'])).keys()], ['NUMBERED']);
      assert.equal(await store.idMap.count('group'), 1, 'nothing else imported');
      assert.equal(await store.idMap.count('user'), 0);
    } finally {
      await store.close();
    }
    const same = await cli(['ids', 'import', file, '--kind', 'group', '--kind', 'group', '--config', config]);
    assert.equal(same.code, 0, same.err);
  });

  it('refuses an unknown --kind (exit 2) as ids import does, instead of exporting an empty table', async () => {
    // It printed the CSV header alone with exit 0: "no rows of that kind" for a typo or `User`.
    const output = path.join(dir, 'unknown-kind.csv');
    for (const kind of ['bogus', 'User']) {
      for (const extra of [[], ['--json'], ['--output', output]]) {
        const run = await cli(['ids', 'export', '--kind', kind, ...extra, '--config', config]);
        assert.equal(run.code, 2, `${kind} ${extra.join(' ')}: ${run.out}`);
        assert.equal(run.out, '');
        assert.equal(
          run.err,
          `error: unknown kind ${kind}; the profile has user, group, role, privilege, flag\n`,
        );
      }
      const imported = await cli([
        'ids',
        'import',
        path.join(dir, 'groups.csv'),
        '--kind',
        kind,
        '--config',
        config,
      ]);
      assert.equal(imported.code, 2);
      assert.match(imported.err, new RegExp(`error: unknown kind ${kind}; the profile has user, group`));
    }
    assert.equal(existsSync(output), false, 'nothing written');
  });

  it('exports rows by kind without the mapping tables: a profile that cannot be read only leaves a kind without rows unchecked', async () => {
    // --kind loaded the profile first: a missing or broken profile refused every export by kind.
    const noProfile = writeConfig(dir, path.join(dir, 'no-such-profiles', 'gone'));
    const groups = await cli(['ids', 'export', '--kind', 'group', '--json', '--config', noProfile]);
    assert.equal(groups.code, 0, groups.err);
    assert.equal((JSON.parse(groups.out) as unknown[]).length, 2001);
    assert.equal(groups.err, '');
    const bogus = await cli(['ids', 'export', '--kind', 'bogus', '--json', '--config', noProfile]);
    assert.equal(bogus.code, 0, bogus.err);
    assert.deepEqual(JSON.parse(bogus.out), []);
    assert.match(
      bogus.err,
      /^note: no rows of kind bogus, and the kind could not be checked against the mapping profile: .*no-such-profiles.*(does not exist|ENOENT)/,
    );
  });

  it('refuses an --output that is the store itself, its log or its shared memory, or in the shipped mappings folder (exit 2), and leaves them as they are', async () => {
    // It wrote "wrote 15 rows" over the SQLite file: every API user and ID gone.
    const store = path.join(dir, 'store.db');
    const link = path.join(dir, 'link-to-store.db');
    symlinkSync(store, link);
    for (const output of [store, link, `${store}-wal`]) {
      if (!existsSync(output)) continue;
      const run = await cli(['ids', 'export', '--output', output, '--config', config]);
      assert.equal(run.code, 2, `${output}: ${run.err}`);
      assert.match(
        run.err,
        /--output .* is the store('s write-ahead log| \(store\.path\)); it would be emptied or overwritten/,
      );
    }
    // Nor into the shipped mappings/ folder: a CSV in a profile's folder is read as one of its
    // tables (every start fails), and the shipped rules or profile overwritten break the same.
    const touched = await keepingShippedFiles(async () => {
      for (const output of [
        path.resolve('mappings', 'iserv-idm-v1', 'ids.csv'),
        path.resolve('mappings', 'compare-rules.default.json'),
        hardLinkTo(path.resolve('mappings', 'iserv-idm-v1', 'profile.json'), dir, 'profile-link.json'),
      ]) {
        const run = await cli(['ids', 'export', '--output', output, '--config', config]);
        assert.equal(run.code, 2, `${output}: ${run.err}`);
        assert.match(
          run.err,
          /--output .* is in the folder idm-compat ships its mapping profiles and compare rules in/,
        );
      }
    });
    assert.deepEqual(touched, []);
    const still = await cli(['ids', 'export', '--json', '--config', config]);
    assert.equal(still.code, 0, still.err);
    assert.equal((JSON.parse(still.out) as unknown[]).length, 2001);
  });

  it("rejects legacy IDs no legacy call can address (Input limits), and warns about a UUID that is not the row's", async () => {
    const file = path.join(dir, 'limits.csv');
    const own = randomUUID();
    const other = randomUUID();
    writeFileSync(
      file,
      [
        'legacy_id,uuid',
        `${'L'.repeat(300)},${randomUUID()}`,
        `"bad\tid",${randomUUID()}`,
        `${'ü'.repeat(43)},${randomUUID()}`, // 43 × 6 = 258 bytes URL-encoded
        `${'ü'.repeat(42)},${randomUUID()}`, // 252 bytes: fits
        `${other},${own}`,
        `5a/2024,${randomUUID()}`, // a path separator: GET …/Group/5a%2F2024 matches no route
        `..,${randomUUID()}`,
      ].join('\n'),
    );
    const result = await cli(['ids', 'import', file, '--kind', 'group', '--config', config]);
    assert.equal(result.code, 1, result.err);
    assert.match(result.out, /2 added, 0 changed, 0 unchanged, 5 rejected \(7 rows\)/);
    assert.match(
      result.err,
      /line 2: legacy ID "L{40}"… must be at most 255 bytes URL-encoded: no legacy call/,
    );
    assert.match(result.err, /line 3: legacy ID "bad\\tid" must not contain control characters/);
    assert.match(result.err, /line 4: legacy ID "ü+"… must be at most 255 bytes URL-encoded/);
    assert.match(
      result.err,
      /line 7: legacy ID "5a\/2024" must not contain "\/" or "\\" nor be "\." or "\.\."/,
    );
    assert.match(result.err, /line 8: legacy ID "\.\." must not contain/);
    assert.match(
      result.err,
      new RegExp(`warning, line 6: legacy ID ${other} is a UUID, but not the row's \\(${own}\\)`),
    );
    const json = JSON.parse(
      (await cli(['ids', 'import', file, '--kind', 'group', '--config', config, '--json'])).out,
    );
    assert.deepEqual(
      json.rejections.map((row: { line: number }) => row.line),
      [2, 3, 4, 7, 8],
    );
    assert.deepEqual(
      json.warnings.map((row: { line: number }) => row.line),
      [6],
    );
  });
  it('warns about rows that take away an ID the proxy assigned (an integration may hold it), and imports them', async () => {
    const [victim, renumbered, incoming, kept] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const [one, two] = [randomUUID(), randomUUID()];
    const store = openSqliteStore(path.join(dir, 'store.db'));
    try {
      for (const [legacyId, uuid, source] of [
        ['AS-7', victim, 'assigned'],
        ['AS-8', renumbered, 'assigned'],
        ['IM-1', kept, 'import'],
        ['SW-1', one, 'assigned'],
        ['SW-2', two, 'assigned'],
      ] as const)
        assert.equal(
          await store.idMap.insert({ kind: 'group', legacyId, uuid, source }, Date.now()),
          'inserted',
        );
    } finally {
      await store.close();
    }
    const file = path.join(dir, 'takeover.csv');
    writeFileSync(
      file,
      [
        'legacy_id,uuid',
        `AS-7,${incoming}`,
        `AS-99,${renumbered}`,
        `IM-1,${randomUUID()}`,
        `AS-8X,${randomUUID()}`,
        // A swap: each keeps an ID, the other's.
        `SW-1,${two}`,
        `SW-2,${one}`,
      ].join('\n'),
    );
    const result = await cli(['ids', 'import', file, '--kind', 'group', '--config', config, '--json']);
    assert.equal(result.code, 0, result.err);
    const summary = JSON.parse(result.out) as { warnings: { line: number; reason: string }[] };
    assert.deepEqual(
      summary.warnings.map((row) => [row.line, row.reason]),
      [
        [
          2,
          `legacy ID AS-7 was assigned by the proxy to group ${victim}: an integration that holds it names ${incoming} after the import, and ${victim} gets a new ID when next seen`,
        ],
        [
          3,
          `group ${renumbered} has the legacy ID AS-8, assigned by the proxy: it becomes AS-99, and an integration that holds AS-8 no longer reaches it`,
        ],
        [
          6,
          `legacy ID SW-1 was assigned by the proxy to group ${one}: an integration that holds it names ${two} after the import, and ${one} gets SW-2 (line 7)`,
        ],
        [
          6,
          `group ${two} has the legacy ID SW-2, assigned by the proxy: it becomes SW-1, and an integration that holds SW-2 no longer reaches it`,
        ],
        [
          7,
          `legacy ID SW-2 was assigned by the proxy to group ${two}: an integration that holds it names ${one} after the import, and ${two} gets SW-1 (line 6)`,
        ],
        [
          7,
          `group ${one} has the legacy ID SW-1, assigned by the proxy: it becomes SW-2, and an integration that holds SW-1 no longer reaches it`,
        ],
      ],
      'an imported row changed (line 4) and a new ID (line 5) are no warning',
    );
    const after = openSqliteStore(path.join(dir, 'store.db'));
    try {
      const map = await after.idMap.byLegacyIds('group', ['AS-7', 'AS-99', 'AS-8']);
      assert.deepEqual(
        [map.get('AS-7'), map.get('AS-99'), map.get('AS-8')],
        [incoming, renumbered, undefined],
      );
    } finally {
      await after.close();
    }
  });

  it('refuses a CSV that is not UTF-8 (Windows-1252, UTF-16) with exit 2, nothing imported; a UTF-8 BOM is fine', async () => {
    const latin1 = path.join(dir, 'latin1.csv');
    const uuid = randomUUID();
    // Excel's "CSV (Comma delimited)" on Windows: ü is the single byte 0xFC.
    writeFileSync(
      latin1,
      Buffer.concat([
        Buffer.from(`legacy_id,uuid\nGRP-LATIN-OK,${randomUUID()}\nm`),
        Buffer.from([0xfc]),
        Buffer.from(`ller-gruppe,${uuid}\n`),
      ]),
    );
    const refused = await cli(['ids', 'import', latin1, '--kind', 'group', '--config', config]);
    assert.equal(refused.code, 2, refused.out);
    assert.match(refused.err, /latin1\.csv is not UTF-8 \(line 3 holds other bytes/);
    const utf16 = path.join(dir, 'utf16.csv');
    writeFileSync(
      utf16,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`legacy_id,uuid\nGRP-U16,${uuid}\n`, 'utf16le')]),
    );
    const refused16 = await cli(['ids', 'import', utf16, '--kind', 'group', '--config', config]);
    assert.equal(refused16.code, 2);
    assert.match(refused16.err, /utf16\.csv is UTF-16; save it as UTF-8/);
    const bom = path.join(dir, 'bom.csv');
    writeFileSync(bom, `\uFEFFlegacy_id,uuid\nmüller-gruppe,${uuid}\n`);
    const imported = await cli(['ids', 'import', bom, '--kind', 'group', '--config', config]);
    assert.equal(imported.code, 0, imported.err);
    const store = openSqliteStore(path.join(dir, 'store.db'));
    try {
      const map = await store.idMap.byLegacyIds('group', [
        'müller-gruppe',
        'm\uFFFDller-gruppe',
        'GRP-LATIN-OK',
      ]);
      assert.equal(map.get('müller-gruppe'), uuid);
      assert.equal(map.has('m\uFFFDller-gruppe'), false, 'no mangled legacy ID');
      assert.equal(map.has('GRP-LATIN-OK'), false, 'nothing of the refused file');
    } finally {
      await store.close();
    }
  });
});

describe('idm-compat ids import interrupted', () => {
  it('stops after the chunk under way on SIGINT and says how far it got (exit 1); running it again writes the rest', async () => {
    // Ended by Node's default for the signal, it printed nothing (exit 130), the table half
    // written.
    const dir = tempDir('ids-interrupted');
    const config = writeConfig(dir, DEFAULT_PROFILE);
    const file = path.join(dir, 'many.csv');
    const rows = 100_000;
    writeFileSync(
      file,
      `kind,legacy_id,uuid\n${Array.from({ length: rows }, (_, i) => `group,G-${i},${randomUUID()}`).join('\n')}\n`,
    );
    const importing = spawnCli(['ids', 'import', file, '--config', config]);
    const store = path.join(dir, 'store.db');
    const written = () => idMapRows(store);
    while (written() === 0) await sleep(10);
    const exit = await importing.stop('SIGINT');
    assert.equal(exit.code, 1, importing.stderr());
    const stopped =
      /(\d+) added, 0 changed, 0 unchanged, 0 rejected \(100000 rows; stopped after (\d+) of 100000 rows to write\)/.exec(
        importing.stdout(),
      );
    assert.ok(stopped, importing.stdout());
    const done = Number(stopped[2]);
    assert.ok(done > 0 && done < rows, `stopped after ${done}`);
    assert.equal(Number(stopped[1]), done);
    assert.equal(written(), done, 'the table holds what the summary says');
    assert.match(
      importing.stderr(),
      new RegExp(
        `error: the import stopped after ${done} of 100000 rows: interrupted \\(SIGINT\\)\n.*Run the same import again to write the rest`,
      ),
    );
    const again = await cli(['ids', 'import', file, '--config', config]);
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, new RegExp(`${rows - done} added, 0 changed, ${done} unchanged, 0 rejected`));
  });
});

describe('idm-compat serve with a broken profile', () => {
  it('does not start, and says which file, JSON path and why (exit 2)', async () => {
    const dir = tempDir('serve');
    const folder = copyProfile(dir, 'serve-broken', (file, json) => {
      if (file === 'entities.json') ((json.kinds as Json).user as Json).item = '/users/{id}';
    });
    const result = await cli(['serve', '--config', writeConfig(dir, folder)]);
    assert.equal(result.code, 2);
    assert.match(
      result.err,
      /entities\.json \$\.kinds\.user\.item: \{id\}: use \{uuid\}, \{uuid58\} or \{apiBase\}/,
    );
  });
});
