import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CommandError, type CommandIo, parseCommandArgs } from '../src/cli/command.js';
import { runSandbox, sandboxCommand, sandboxOptionsFromArgs } from '../src/cli/sandbox.js';
import { uuidToBase58 } from '../src/lib/uuid.js';
import { faultPatchSchema } from '../src/sandbox/faults.js';
import { FixtureError, type SandboxFixture } from '../src/sandbox/fixture.js';
import { DEMO_ADMIN_PASSWORD, DEMO_PASSWORD, sandboxUuid } from '../src/sandbox/index.js';
import { runCliCaptured } from './cli-helpers.js';
import { keyClient, list, obj, sandbox } from './sandbox-helpers.js';
import { tempDir } from './temp-dir.js';

describe('sandbox demo data', () => {
  it('seeds the documented data set with stable UUIDs', async () => {
    const [a, b] = await Promise.all([sandbox(), sandbox()]);
    try {
      const { data } = a;
      assert.equal(data.roles.size, 4);
      assert.ok(data.roleByName('ROLE_ADMIN'));
      assert.equal(data.privileges.size, 6);
      assert.equal(data.groupFlags.size, 3);
      assert.equal(data.users.size, 25);
      assert.equal(data.groups.size, 6);
      assert.ok(data.groupByAccount('admins'));
      assert.deepEqual([...a.data.users.keys()].sort(), [...b.data.users.keys()].sort());
      assert.equal(data.userByAccount('admin')?.id, sandboxUuid('users:admin'));
      assert.equal(data.groupByAccount('lehrer')?.id, sandboxUuid('groups:lehrer'));
      const statuses = new Set(data.list('users').map((u) => u.status));
      assert.deepEqual([...statuses].sort(), ['active', 'inactive', 'registered']);
      assert.deepEqual(
        data
          .list('users')
          .filter((u) => u.locked)
          .map((u) => u.user),
        ['leon.weber'],
      );
      assert.deepEqual(
        data
          .list('users')
          .filter((u) => u.deleted !== null)
          .map((u) => u.user),
        ['ben.krause'],
      );
      assert.ok(data.list('groups').some((g) => data.groupFlagLinks.rightOf(g.id).length > 0));
      assert.ok(data.list('groups').every((g) => data.membersOf(g.id).length > 0));
      const admin = data.userByAccount('admin')?.id ?? '';
      assert.ok(data.verifyPassword(admin, DEMO_ADMIN_PASSWORD));
      assert.ok(data.verifyAdminPassword(admin, DEMO_ADMIN_PASSWORD));
      assert.ok(data.verifyPassword(data.userByAccount('lena.mueller')?.id ?? '', DEMO_PASSWORD));
      assert.equal(data.passwordState(data.userByAccount('emma.meyer')?.id ?? '').hasPassword, false);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('starts empty without seed and fixture', async () => {
    const sb = await sandbox({ seed: false });
    try {
      assert.deepEqual(list((await keyClient(sb).get('/users')).body), []);
      const created = await keyClient(sb).post('/users', { user: 'first', firstname: 'F', lastname: 'L' });
      assert.equal(obj(created.body).createdBy, null, 'no admin user: no createdBy');
    } finally {
      await sb.close();
    }
  });
});

describe('sandbox fixtures', () => {
  let dir: string;
  before(() => {
    dir = tempDir('sandbox-fixture');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, content: unknown) => {
    const file = join(dir, name);
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };

  it('loads a fixture file after the seed, resolving references by natural key or UUID', async () => {
    const fixedId = '3f0c2a4e-8d5b-4a51-9b64-2c1f0e7d9a10';
    const file = write('school.json', {
      privileges: [{ privilege: 'lab_access', name: 'Lab access' }],
      groupFlags: [{ name: 'archived', title: 'Archived' }],
      roles: [{ role: 'ROLE_LAB', name: 'Lab', privileges: ['lab_access'] }],
      users: [
        {
          id: uuidToBase58(fixedId),
          user: 'lab.tech',
          firstname: 'Lab',
          lastname: 'Tech',
          roles: ['ROLE_LAB'],
          groups: ['chemie'],
        },
        {
          user: 'old.user',
          firstname: 'Old',
          lastname: 'User',
          status: 'inactive',
          deleted: '2026-01-01T00:00:00+00:00',
        },
      ],
      groups: [
        {
          group: 'chemie',
          name: 'Chemie',
          owner: fixedId,
          members: ['thomas.becker'],
          privileges: [sandboxUuid('privileges:lab_access')],
          flags: ['archived', 'has_home'],
        },
      ],
    });
    const sb = await sandbox({ fixture: file, retentionSeconds: 10 * 365 * 24 * 3600 });
    try {
      assert.equal(sb.data.users.size, 27);
      const tech = sb.data.users.get(fixedId);
      assert.equal(tech?.user, 'lab.tech');
      assert.equal(tech?.createdBy, sb.data.userByAccount('admin')?.id);
      const chemie = sb.data.groupByAccount('chemie');
      assert.equal(chemie?.id, sandboxUuid('groups:chemie'));
      assert.equal(chemie?.owner, fixedId);
      assert.deepEqual(
        sb.data
          .membersOf(chemie?.id ?? '')
          .map((u) => u.user)
          .sort(),
        ['lab.tech', 'thomas.becker'],
      );
      assert.equal(sb.data.groupFlagLinks.rightOf(chemie?.id ?? '').length, 2);
      const old = sb.data.userByAccount('old.user');
      assert.equal(old?.deletedBy, sb.data.userByAccount('admin')?.id);
      const group = obj(
        (await keyClient(sb).get(`/groups/${chemie?.id}?_attributes=privileges.privilege`)).body,
      );
      assert.deepEqual(group.privileges, [{ privilege: 'lab_access' }]);
    } finally {
      await sb.close();
    }
  });

  it('accepts a fixture object instead of the seed', async () => {
    const sb = await sandbox({
      seed: false,
      fixture: { users: [{ user: 'solo', firstname: 'S', lastname: 'O' }] },
    });
    try {
      assert.deepEqual(
        list((await keyClient(sb).get('/users')).body).map((u) => u.user),
        ['solo'],
      );
    } finally {
      await sb.close();
    }
  });

  it('refuses bad fixtures naming the source, the JSON path and the reason', async () => {
    const cases: [unknown, RegExp][] = [
      [
        { groups: [{ name: 'X', members: ['nobody'] }] },
        /\$\.groups\[0\]\.members\[0\]: unknown users "nobody"/,
      ],
      [
        { users: [{ user: 'admin', firstname: 'A', lastname: 'B' }] },
        /\$\.users\[0\]\.user: account "admin" is already taken/,
      ],
      [{ users: [{ user: 'x', firstname: 'A' }] }, /\$\.users\[0\]\.lastname/],
      [{ users: [{ user: 'x', firstname: 'A', lastname: 'B', status: 'a' }] }, /\$\.users\[0\]\.status/],
      [{ people: [] }, /people/],
      ['{ not json', /not valid JSON/],
    ];
    for (const [content, message] of cases) {
      const file = write('bad.json', content);
      await assert.rejects(sandbox({ fixture: file }), (error: unknown) => {
        assert.ok(error instanceof FixtureError);
        assert.match(error.message, new RegExp(file.replaceAll('.', '\\.')));
        assert.match(error.message, message);
        return true;
      });
    }
    await assert.rejects(sandbox({ fixture: join(dir, 'missing.json') }), /cannot read the file \(ENOENT\)/);
  });
});

describe("sandbox fixtures follow the API's create rules", () => {
  const uuid = '3f0c2a4e-8d5b-4a51-9b64-2c1f0e7d9a10';
  const user = { user: 'lab.tech', firstname: 'Lab', lastname: 'Tech' };
  /** Fixtures the API would refuse, each with the path and the message of its FixtureError. */
  const refused: [string, unknown, string][] = [
    [
      'a role key not shaped ROLE_…',
      { roles: [{ role: 'lab', name: 'Lab' }] },
      '$.roles[0].role: A role name looks like ROLE_SOMETHING (upper case, digits, "_").',
    ],
    [
      'a password shorter than 8',
      { users: [{ ...user, password: 'short' }] },
      '$.users[0].password: This value is too short. It should have 8 characters or more.',
    ],
    [
      'an admin password shorter than 8',
      { users: [{ ...user, adminPassword: '1234567' }] },
      '$.users[0].adminPassword: This value is too short. It should have 8 characters or more.',
    ],
    [
      'an account name the API refuses',
      { users: [{ ...user, user: 'Lab Tech' }] },
      '$.users[0].user: This value is not a valid account name: use lower-case letters, digits, ".", "_" and "-".',
    ],
    [
      'a blank first name',
      { users: [{ ...user, firstname: '  ' }] },
      '$.users[0].firstname: This value should not be blank.',
    ],
    [
      'an invalid e-mail address',
      { users: [{ ...user, emailAddress: 'lab.tech' }] },
      '$.users[0].emailAddress: This value is not a valid email address.',
    ],
    [
      'a group account the API refuses',
      { groups: [{ name: 'Chemie', group: 'Chemie!' }] },
      '$.groups[0].group: This value is not a valid account name: use lower-case letters, digits, ".", "_" and "-".',
    ],
    [
      'a group name taken (case-insensitively)',
      { groups: [{ name: 'LEHRER', group: 'lehrer2' }] },
      '$.groups[0].name: duplicate group name "LEHRER"',
    ],
    [
      'a user and a group with the same UUID',
      { users: [{ ...user, id: uuid }], groups: [{ name: 'Chemie', id: uuid }] },
      `$.groups[0].id: duplicate id ${uuid} (already the id of one of the users)`,
    ],
    [
      'a role with the UUID of a demo user',
      { roles: [{ role: 'ROLE_LAB', name: 'Lab', id: sandboxUuid('users:admin') }] },
      `$.roles[0].id: duplicate id ${sandboxUuid('users:admin')} (already the id of one of the users)`,
    ],
  ];
  for (const [what, fixture, message] of refused) {
    it(`refuses ${what}, naming the entry and the rule`, async () => {
      // A sandbox that loads anyway is closed, so that the failure does not keep the run alive.
      const loaded = sandbox({ fixture: fixture as SandboxFixture }).then(async (sb) => {
        await sb.close();
        throw new Error('the fixture loaded');
      });
      await assert.rejects(loaded, (error: unknown) => {
        assert.ok(error instanceof FixtureError, String(error));
        assert.equal(error.message, `sandbox fixture (object): ${message}`);
        return true;
      });
    });
  }

  it('gives the same reasons as the API for the same values', async () => {
    const sb = await sandbox({ seed: false });
    try {
      const client = keyClient(sb);
      const role = obj((await client.post('/roles', { role: 'lab2', name: 'Lab' })).body);
      assert.deepEqual(role.violations, [
        { propertyPath: 'role', message: 'A role name looks like ROLE_SOMETHING (upper case, digits, "_").' },
      ]);
      const created = obj((await client.post('/users', user)).body);
      const short = await client.post(`/users/${String(created.uuid)}/password`, { password: 'short' });
      assert.equal(short.status, 422);
      assert.deepEqual(obj(short.body).violations, [
        {
          propertyPath: 'password',
          message: 'This value is too short. It should have 8 characters or more.',
        },
      ]);
    } finally {
      await sb.close();
    }
  });
});

describe('docs/sandbox.md', () => {
  const doc = readFileSync(new URL('../docs/sandbox.md', import.meta.url), 'utf8');

  it('lists the demo data as seeded (accounts, UUIDs, statuses)', async () => {
    const sb = await sandbox();
    try {
      const documented = new Map<string, string[]>();
      for (const line of doc.split('\n')) {
        const cells = line.split('|').map((c) => c.trim());
        const uuid = cells.at(-2)?.match(/^`([0-9a-f-]{36})`$/)?.[1];
        const key = cells[1]?.match(/^`([^`]+)`$/)?.[1];
        if (uuid && key) documented.set(uuid, cells.slice(1, -1));
      }
      const expect = (id: string, key: string) => {
        assert.ok(documented.has(id), `${key} (${id}) is documented`);
        assert.equal(documented.get(id)?.[0], `\`${key}\``);
      };
      for (const u of sb.data.list('users')) {
        expect(u.id, u.user);
        assert.equal(documented.get(u.id)?.[3], u.status, u.user);
      }
      for (const g of sb.data.list('groups')) expect(g.id, g.group);
      for (const r of sb.data.list('roles')) expect(r.id, r.role);
      for (const p of sb.data.list('privileges')) expect(p.id, p.privilege);
      for (const f of sb.data.list('group_flags')) expect(f.id, f.name);
      assert.equal(documented.size, 25 + 6 + 4 + 6 + 3);
    } finally {
      await sb.close();
    }
  });

  it('shows a fixture example that loads', async () => {
    const section = doc.slice(doc.indexOf('## Fixtures'));
    const example = section.match(/```json\n([\s\S]*?)```/)?.[1];
    assert.ok(example, 'fixture example present');
    const sb = await sandbox({ fixture: JSON.parse(example) });
    try {
      const chemie = sb.data.groupByAccount('chemie');
      assert.equal(chemie?.owner, sb.data.userByAccount('lab.tech')?.id);
      assert.ok(sb.data.verifyPassword(sb.data.userByAccount('lab.tech')?.id ?? '', 'initial-password'));
    } finally {
      await sb.close();
    }
  });
});

describe('idm-compat sandbox command', () => {
  const io = (): CommandIo & { lines: string[] } => {
    const lines: string[] = [];
    return { lines, out: (t) => lines.push(t), err: (t) => lines.push(t), env: { LOG_LEVEL: 'silent' } };
  };

  it('parses its options and refuses bad values', () => {
    const args = parseCommandArgs(sandboxCommand, [
      '--port',
      '0',
      '--no-seed',
      '--latency',
      '25',
      '--error-rate',
      '0.1',
      '--token-down',
    ]);
    const options = sandboxOptionsFromArgs(args, io());
    assert.equal(options.port, 0);
    assert.equal(options.seed, false);
    assert.deepEqual(options.faults, { latencyMs: 25, errorRate: 0.1, tokenEndpointDown: true });
    for (const argv of [
      ['--port', 'abc'],
      ['--port', '70000'],
      ['--error-rate', '2'],
      ['--latency=-1'],
      ['--latency', '1.5'],
    ]) {
      assert.throws(() => sandboxOptionsFromArgs(parseCommandArgs(sandboxCommand, argv), io()), CommandError);
    }
  });

  it('parses the Hydra prefix, page sizes and retention, and refuses bad values naming the flag', () => {
    const parse = (argv: string[]) => sandboxOptionsFromArgs(parseCommandArgs(sandboxCommand, argv), io());
    const options = parse([
      '--no-hydra-prefix',
      '--page-size',
      '10',
      '--max-page-size',
      '50',
      '--retention',
      '3600',
    ]);
    assert.equal(options.hydraPrefix, false);
    assert.equal(options.pageSize, 10);
    assert.equal(options.maxPageSize, 50);
    assert.equal(options.retentionSeconds, 3600);
    assert.equal(parse(['--retention', '0']).retentionSeconds, 0);
    const defaults = parse([]);
    for (const key of ['hydraPrefix', 'pageSize', 'maxPageSize', 'retentionSeconds'] as const) {
      assert.equal(defaults[key], undefined, `${key} is left to the sandbox's default`);
    }
    const refused: [string[], RegExp][] = [
      [['--page-size', '0'], /^--page-size must be a whole number of at least 1, got "0"$/],
      [['--page-size', '2.5'], /^--page-size must be/],
      [['--page-size', 'ten'], /^--page-size must be/],
      [
        ['--max-page-size=-3'],
        /^--max-page-size must be a whole number from 1 to 9007199254740991, got "-3"$/,
      ],
      [['--max-page-size', ''], /^--max-page-size must be/],
      [
        ['--retention=-1'],
        /^--retention must be a whole number of seconds from 0 to 9007199254740991, got "-1"$/,
      ],
      [['--retention', '1h'], /^--retention must be/],
      [
        ['--page-size', '501'],
        /^--page-size 501 is larger than the largest page size 500; raise it with --max-page-size$/,
      ],
      [
        ['--page-size', '60', '--max-page-size', '50'],
        /^--page-size 60 is larger than the largest page size 50/,
      ],
    ];
    for (const [argv, message] of refused) {
      assert.throws(
        () => parse(argv),
        (error: unknown) => error instanceof CommandError && message.test(error.message),
        argv.join(' '),
      );
    }
  });

  it("refuses every out-of-range number naming the flag and its range (exit 2), not with the sandbox's own error", async () => {
    const run = await runCliCaptured(['sandbox', '--port', '0', '--no-seed', '--latency', '600001']);
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr.split('\n')[0],
      'error: --latency must be a whole number of milliseconds from 0 to 600000, got "600001"',
    );
    assert.doesNotMatch(run.stderr, /too_big|"origin"/);
    assert.equal(run.stdout, '');

    const parse = (argv: string[]) => sandboxOptionsFromArgs(parseCommandArgs(sandboxCommand, argv), io());
    const refused: [string[], string][] = [
      [['--port', '65536'], '--port must be a port number from 0 to 65535, got "65536"'],
      [['--latency', '1e9'], '--latency must be a whole number of milliseconds from 0 to 600000, got "1e9"'],
      [['--error-rate', '1.01'], '--error-rate must be a number from 0 to 1, got "1.01"'],
      [
        ['--max-page-size', '9007199254740992'],
        '--max-page-size must be a whole number from 1 to 9007199254740991, got "9007199254740992"',
      ],
      [
        ['--retention', '1e300'],
        '--retention must be a whole number of seconds from 0 to 9007199254740991, got "1e300"',
      ],
      [
        ['--page-size', '1e300'],
        '--page-size 1e+300 is larger than the largest page size 500; raise it with --max-page-size',
      ],
    ];
    for (const [argv, message] of refused) {
      assert.throws(
        () => parse(argv),
        (error: unknown) =>
          error instanceof CommandError && error.exitCode === 2 && error.message === message,
        argv.join(' '),
      );
    }
    // The largest values the flags take are what the sandbox itself takes.
    const largest = parse([
      '--latency',
      '600000',
      '--max-page-size',
      '9007199254740991',
      '--retention',
      '9007199254740991',
    ]);
    assert.doesNotThrow(() => faultPatchSchema.parse(largest.faults));
    assert.equal(largest.maxPageSize, Number.MAX_SAFE_INTEGER);
  });

  it('names the ranges in --help', async () => {
    const run = await runCliCaptured(['sandbox', '--help']);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /--latency MS .*0 to 600000/);
    assert.match(run.stdout, /--port N .*0 to 65535/);
    assert.match(run.stdout, /--error-rate R .*0 to 1/);
  });

  it('serves what the flags chose: unprefixed Hydra keys and the page size', async () => {
    const out = io();
    let stop = () => {};
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const args = parseCommandArgs(sandboxCommand, ['--json', '--no-hydra-prefix', '--page-size', '7']);
    const running = runSandbox(args, out, stopped);
    while (out.lines.length === 0) await new Promise((r) => setTimeout(r, 10));
    const printed = obj(JSON.parse(out.lines[0] ?? '{}'));
    const response = await fetch(`${String(printed.apiBaseUrl)}/users`, {
      headers: { 'x-iserv-authentication': String(printed.apiKey), accept: 'application/ld+json' },
    });
    const body = obj(await response.json());
    stop();
    assert.equal(await running, 0);
    assert.equal(body['@type'], 'Collection');
    assert.equal(body['hydra:member'], undefined);
    assert.ok(Array.isArray(body.member));
    assert.equal(body.member.length, 7);
    assert.equal(body.totalItems, 25);
  });

  it('prints URLs and credentials as JSON, serves until stopped, then closes', async () => {
    const out = io();
    let stop = () => {};
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const args = parseCommandArgs(sandboxCommand, ['--port', '0', '--json', '--latency', '1']);
    const running = runSandbox(args, out, stopped);
    while (out.lines.length === 0) await new Promise((r) => setTimeout(r, 10));
    const printed = obj(JSON.parse(out.lines[0] ?? '{}'));
    assert.deepEqual(printed.clients, {
      readWrite: { clientId: 'idm-compat', clientSecret: 'sandbox-secret' },
      readOnly: { clientId: 'idm-compat-readonly', clientSecret: 'sandbox-readonly-secret' },
    });
    assert.equal(printed.apiKey, 'sandbox-api-key');
    const discovery = obj(await (await fetch(String(printed.discovery))).json());
    assert.equal(discovery.token_endpoint, printed.tokenEndpoint);
    const faults = obj(await (await fetch(obj(printed.control).faults as string)).json());
    assert.equal(faults.latencyMs, 1);
    stop();
    assert.equal(await running, 0);
    await assert.rejects(fetch(String(printed.discovery)));
  });

  it('a port in use is exit 1 (as serve gives), not the usage error of a bad option', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (busy.address() as AddressInfo).port;
      const args = parseCommandArgs(sandboxCommand, ['--port', String(port), '--no-seed']);
      await assert.rejects(
        runSandbox(args, io(), Promise.resolve()),
        (error: unknown) =>
          error instanceof CommandError && error.exitCode === 1 && /EADDRINUSE/.test(error.message),
      );
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it('prints a text summary by default', async () => {
    const out = io();
    const running = runSandbox(parseCommandArgs(sandboxCommand, ['--no-seed']), out, Promise.resolve());
    assert.equal(await running, 0);
    const text = out.lines.join('\n');
    assert.match(text, /Sandbox IDM running at http:\/\/127\.0\.0\.1:\d+/);
    assert.match(text, /idm-compat \/ sandbox-secret/);
    assert.match(text, /sandbox-api-key/);
  });
});
