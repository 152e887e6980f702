// Engine features the group, role and privilege tables use: template filters (derived values
// such as a role's technical key), `{fields.<attribute>}`, `when`, `undo` with `{applied.…}`,
// `relation`, and `{entity.…}` after a step that created the entity — each checked when the
// profile loads, with file, JSON path and reason for a table that misuses them.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/lib/logger.js';
import { MappingError, TranslationError } from '../src/mapping/errors.js';
import { loadProfile } from '../src/mapping/load.js';
import { compileTemplate, renderTemplate, renderText, TemplateError } from '../src/mapping/template.js';
import { startServer } from '../src/server.js';
import { LogSink } from './log-sink.js';
import { tempDir } from './temp-dir.js';
import { ALT_PROFILE, DEFAULT_PROFILE, startUserProxy, type UserProxy } from './user-helpers.js';

type Json = Record<string, unknown>;

const anyVariable = () => undefined;

/** Loads a copy of the default profile with one operation changed; answers the problems. */
function problemsWith(file: string, operation: string, change: (op: Json) => void): string[] {
  const dir = path.join(tempDir('engine'), 'profile');
  cpSync(DEFAULT_PROFILE, dir, { recursive: true });
  const target = path.join(dir, file);
  const json = JSON.parse(readFileSync(target, 'utf8')) as { operations: Record<string, Json> };
  const op = json.operations[operation];
  assert.ok(op, `${operation} in ${file}`);
  change(op);
  writeFileSync(target, JSON.stringify(json, null, 2));
  try {
    loadProfile(dir);
  } catch (error) {
    assert.ok(error instanceof MappingError, String(error));
    return error.problems.map((p) => `${p.file} ${p.path}: ${p.message}`);
  }
  return [];
}

describe('template filters', () => {
  const render = (source: string, value: unknown) =>
    renderTemplate(compileTemplate(source, anyVariable), () => value);

  it('derive a technical key from a display name', () => {
    const key = 'ROLE_{fields.name|ascii|upper|underscore}';
    assert.equal(render(key, 'Fachschaft Mathe'), 'ROLE_FACHSCHAFT_MATHE');
    assert.equal(render(key, 'Übungsleitung Sport-Halle'), 'ROLE_UEBUNGSLEITUNG_SPORT_HALLE');
    assert.equal(render(key, '  Groß & Klein!  '), 'ROLE_GROSS_KLEIN');
    assert.equal(render(key, 'Élève à l’école'), 'ROLE_ELEVE_A_LECOLE');
    assert.equal(render('{x|ascii|lower|dots}', 'Klasse 9 Übung'), 'klasse.9.uebung');
    // An umlaut sent decomposed (`u` and U+0308) gave ROLE_MULLER, the precomposed one ROLE_MUELLER.
    assert.equal(render(key, 'Mu\u0308ller Fo\u0308rderkurs'), 'ROLE_MUELLER_FOERDERKURS');
    assert.equal(render('{x|trim}', '  a b '), 'a b');
  });

  it('yield the filtered value for a whole placeholder, element by element for lists, null as null', () => {
    assert.deepEqual(render('{x|upper}', ['a', 'b']), ['A', 'B']);
    assert.equal(render('{x|upper}', null), null);
    assert.equal(render('{x|upper}', undefined), undefined);
    assert.equal(
      renderText(compileTemplate('k-{x|upper}', anyVariable), () => undefined),
      'k-',
    );
  });

  it('are checked at compile time', () => {
    assert.throws(
      () => compileTemplate('{x|shout}', anyVariable),
      (error: unknown) => {
        assert.ok(error instanceof TemplateError);
        assert.match(
          error.message,
          /\{x\|shout\}: no filter "shout" \(known: ascii, upper, lower, underscore, dots, trim\)/,
        );
        return true;
      },
    );
    assert.throws(() => compileTemplate('{x|}', anyVariable), TemplateError);
  });
});

describe('operation tables with rollback, conditions and created entities', () => {
  it('the shipped profiles use them and load', () => {
    for (const dir of [DEFAULT_PROFILE, ALT_PROFILE]) {
      const profile = loadProfile(dir);
      const unlink = profile.operations.get('group.link.users.remove');
      assert.deepEqual(unlink?.relation, { attribute: ['members'], change: 'remove' });
      assert.equal(unlink?.steps[0]?.undo?.method, 'POST');
      const create = profile.operations.get('role.create');
      assert.equal(create?.steps[1]?.when?.source, '{fields.privileges}');
      assert.equal(create?.steps[0]?.undo?.path.source, '/roles/{entity.uuid}');
      const privilege = profile.operations.get('privilege.link.roles.add');
      assert.equal(privilege?.steps[0]?.undo?.forEach, true);
    }
  });

  it('refuses an undo of a per-item step without "relation"', () => {
    const problems = problemsWith('operations/group.json', 'group.link.users.remove', (op) => {
      delete op.relation;
    });
    assert.deepEqual(problems, [
      'operations/group.json $.operations["group.link.users.remove"].steps[0].undo: a per-item step with "undo" needs "relation" on the operation, so that a rollback undoes only what the call changed',
    ]);
  });

  it('allows {applied.…} only in an undo, and {item.…} in an undo only per applied item', () => {
    const problems = problemsWith('operations/group.json', 'group.link.users.remove', (op) => {
      const [step] = op.steps as Json[];
      assert.ok(step);
      step.path = '/groups/{entity.uuid}/members/{applied.uuid}';
      (step.undo as Json).path = '/groups/{entity.uuid}/members/{item.uuid}';
    });
    assert.ok(
      problems.some((p) =>
        /steps\[0\]\.path: \{applied\.uuid\}: \{applied\.…\} is only available in an "undo"/.test(p),
      ),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => /steps\[0\]\.undo\.path: \{item\.uuid\}: .*forEach/.test(p)),
      problems.join('\n'),
    );
  });

  it('allows {entity.…} without a subject only after a step that returns the entity', () => {
    const problems = problemsWith('operations/role.json', 'role.create', (op) => {
      const steps = op.steps as Json[];
      steps.reverse();
    });
    assert.ok(
      problems.some((p) =>
        /role\.create"\]\.steps\[0\]\.path: \{entity\.uuid\}: \{entity\.…\} needs a "subject" on the operation or an earlier step/.test(
          p,
        ),
      ),
      problems.join('\n'),
    );
  });

  it('refuses an undo on a read, "relation" without items, and an unknown filter, with JSON paths', () => {
    const read = problemsWith('operations/group.json', 'group.list', (op) => {
      const [step] = op.steps as Json[];
      assert.ok(step);
      step.undo = { method: 'DELETE', path: '/groups' };
    });
    assert.deepEqual(read, [
      'operations/group.json $.operations["group.list"].steps[0].undo: a read changes nothing: it needs no undo',
    ]);
    const relation = problemsWith('operations/group.json', 'group.delete', (op) => {
      op.relation = { attribute: 'members', change: 'remove' };
    });
    assert.deepEqual(relation, [
      'operations/group.json $.operations["group.delete"].relation: "relation" needs "items": it names where the linked items are listed',
    ]);
    const filter = problemsWith('operations/role.json', 'role.create', (op) => {
      const [step] = op.steps as Json[];
      assert.ok(step);
      (step.body as Json).role = 'ROLE_{fields.name|slug}';
    });
    assert.equal(filter.length, 1);
    assert.match(filter[0] ?? '', /steps\[0\]\.body\.role: \{fields\.name\|slug\}: no filter "slug"/);
  });
});

describe('successor conventions of profile.json', () => {
  /** Rewrites `successor` of the profile.json in `folder`. */
  const setSuccessor = (folder: string, change: (successor: Json) => void) => {
    const file = path.join(folder, 'profile.json');
    const json = JSON.parse(readFileSync(file, 'utf8')) as Json;
    change(json.successor as Json);
    writeFileSync(file, JSON.stringify(json, null, 2));
  };

  it('every collection read of the engine, and the readiness read, pages with successor.paging, not with names in code', async () => {
    const proxy = await startUserProxy({ copyProfile: true });
    try {
      setSuccessor(proxy.profileDir, (successor) => {
        successor.paging = { page: 'p', itemsPerPage: 'size' };
      });
      assert.equal(proxy.mappings.reload().ok, true);
      const mark = proxy.logSink.text.length;
      const list = await proxy.call<unknown[]>('GET', '/Entity/User');
      assert.equal(list.status, 200, list.text);
      assert.equal((await proxy.call('GET', '/Entity/Group/lehrer')).status, 200);
      const reads = proxy.logSink.text
        .slice(mark)
        .split('\n')
        .filter((line) => line.includes('"successor call"'))
        .map((line) => String((JSON.parse(line) as { successor: { path: string } }).successor.path));
      assert.deepEqual(
        reads.map((read) => read.split('?')[0]),
        ['/iserv/idm/api/v1/users', '/iserv/idm/api/v1/groups'],
      );
      for (const read of reads) {
        const query = new URL(read, 'http://x').searchParams;
        assert.equal(query.get('size'), '100', read);
        assert.equal(query.has('itemsPerPage'), false, read);
      }
      // The readiness read too: one item, by the profile's page-size parameter.
      const readyMark = proxy.logSink.text.length;
      assert.equal((await fetch(`${proxy.url}/readyz`)).status, 200);
      const ready = proxy.logSink.text
        .slice(readyMark)
        .split('\n')
        .filter((line) => line.includes('"successor call"'))
        .map((line) => String((JSON.parse(line) as { successor: { path: string } }).successor.path));
      assert.deepEqual(ready, ['/iserv/idm/api/v1/users?size=1']);
    } finally {
      await proxy.close();
    }
  });

  it('/readyz reads successor.readinessPath of the live profile (a reload applies)', async () => {
    const dir = tempDir('ready');
    const folder = path.join(dir, 'mappings', 'ready');
    cpSync(DEFAULT_PROFILE, folder, { recursive: true });
    setSuccessor(folder, (successor) => {
      successor.readinessPath = '/group_flags';
    });
    const config = parseConfig(
      {
        sandbox: { enabled: true },
        server: { port: 0 },
        store: { type: 'sqlite', path: path.join(dir, 'store.db') },
        mappings: { dir: path.join(dir, 'mappings'), profile: 'ready' },
      },
      { label: 'test', env: {}, baseDir: dir },
    );
    const server = await startServer({
      config,
      logger: createLogger({ level: 'error', destination: new LogSink() }),
    });
    try {
      const sandbox = server.sandbox;
      assert.ok(sandbox);
      sandbox.counters.reset();
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
      const apiReads = () =>
        Object.keys(sandbox.counters.snapshot()).filter((key) => !key.includes('/token'));
      assert.deepEqual(apiReads(), ['GET /group_flags']);
      setSuccessor(folder, (successor) => {
        successor.readinessPath = '/roles';
      });
      assert.equal(server.services.mappings.reload().ok, true);
      sandbox.counters.reset();
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
      assert.deepEqual(apiReads(), ['GET /roles']);
    } finally {
      await server.close();
    }
  });
});

describe('successor values a field format cannot render', () => {
  /** What the successor (a real server that differs from the sandbox) sends for thomas.becker. */
  let odd: Json = {};
  const withOddValues = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(withOddValues);
    if (value === null || typeof value !== 'object') return value;
    const out = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withOddValues(v)]));
    return out.user === 'thomas.becker' ? { ...out, ...odd } : out;
  };
  /** A fetch whose successful answers on paths `applies` to have their JSON body rewritten. */
  const rewriting =
    (applies: (pathname: string) => boolean, rewrite: (body: unknown) => unknown): typeof fetch =>
    async (input, init) => {
      const response = await fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (!applies(new URL(url).pathname) || !response.ok) return response;
      const headers = new Headers(response.headers);
      headers.delete('content-length');
      const body = JSON.stringify(rewrite(await response.json()));
      return new Response(body, { status: response.status, headers });
    };
  const oddFetch = rewriting((pathname) => pathname.includes('/users'), withOddValues);
  /** Runs `test` against a proxy whose successor sends `odd`, which is cleared afterwards. */
  const withOddProxy = async (
    test: (proxy: UserProxy) => Promise<void>,
    options: { copyProfile?: boolean } = {},
  ) => {
    const proxy = await startUserProxy({ ...options, successorFetch: oddFetch });
    try {
      await test(proxy);
    } finally {
      odd = {};
      await proxy.close();
    }
  };
  const warnings = (proxy: UserProxy, from: number) =>
    proxy.logSink
      .lines()
      .slice(from)
      .filter((line) => String(line.msg).startsWith('successor value unusable'));

  it('render as null (or the field default), never a 500 or the raw value; the operator is told once per field', async () => {
    await withOddProxy(
      async (proxy) => {
        odd = { created: 1e20, lastLogin: 9e15 };
        const mark = proxy.logSink.lines().length;
        const list = await proxy.call<Json[]>('GET', '/Entity/User');
        assert.equal(list.status, 200, list.text);
        const listed = list.body.find((user) => user._id === 'thomas.becker');
        assert.equal(listed?.created, null);
        const one = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
        assert.equal(one.status, 200, one.text);
        assert.deepEqual([one.body.created, one.body.lastlogin], [null, null]);

        odd = { created: '25.12.2024', lastLogin: '2024-01-01 08:00:00 CET' };
        const text = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
        assert.deepEqual([text.body.created, text.body.lastlogin], [null, null]);
        const told = warnings(proxy, mark);
        assert.deepEqual(
          told.map((line) => [line.level, line.field, line.attribute, line.format, line.value]),
          [
            [40, 'created', 'created', 'date', '100000000000000000000'],
            [40, 'lastlogin', 'lastLogin', 'date-time', '9000000000000000'],
          ],
          'one warning per field, however many reads and values',
        );

        // A documented default is what such a value renders as.
        const fieldsFile = path.join(proxy.profileDir, 'fields', 'user.json');
        const table = JSON.parse(readFileSync(fieldsFile, 'utf8'));
        table.fields.created.default = '1970-01-01';
        writeFileSync(fieldsFile, JSON.stringify(table, null, 2));
        assert.equal(proxy.mappings.reload().ok, true);
        const withDefault = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
        assert.equal(withDefault.body.created, '1970-01-01');
      },
      { copyProfile: true },
    );
  });

  it('a string field: a number or boolean as its text, an object or list as null with the warning (its size, not its data), never JSON text', async () => {
    await withOddProxy(async (proxy) => {
      odd = { firstname: { given: 'x', secret: 'y' }, auxInfo: [1, 2], lastname: 42, type: true };
      const mark = proxy.logSink.lines().length;
      const one = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
      assert.equal(one.status, 200, one.text);
      assert.deepEqual(
        [one.body.firstname, one.body.auxInfo, one.body.lastname, one.body.type],
        [null, null, '42', 'true'],
      );
      assert.deepEqual(
        warnings(proxy, mark).map((line) => [line.field, line.format, line.value]),
        [
          ['firstname', 'string', 'an object of 2 keys'],
          ['auxInfo', 'string', 'a list of 2'],
        ],
      );
    });
  });

  /** The `request failed` lines' errors after line `from`, as text. */
  const failures = (proxy: UserProxy, from: number) =>
    proxy.logSink
      .lines()
      .slice(from)
      .filter((line) => line.msg === 'request failed')
      .map((line) => JSON.stringify(line.err));

  it("a list field sent as no list is a 502 of a read naming the attribute, never an empty list or admin: false; null is no item, PHP's array with gaps is a list, a write's answer renders", async () => {
    await withOddProxy(async (proxy) => {
      for (const [value, what] of [
        ['ROLE_ADMIN', 'a string, not'],
        ['/iserv/idm/api/v1/users/x/roles', 'a string (a link to a sub-resource? ask for it embedded), not'],
        [{ role: 'ROLE_ADMIN' }, 'an object, not'],
        [3, 'a number, not'],
      ] as const) {
        odd = { roles: value };
        for (const path of ['/Entity/User/thomas.becker', '/Entity/User?extended=1']) {
          const mark = proxy.logSink.lines().length;
          const answer = await proxy.call<Json>('GET', path);
          assert.equal(answer.status, 502, `${JSON.stringify(value)} ${path}: ${answer.text}`);
          const said = failures(proxy, mark);
          assert.equal(said.length, 1, `${path}: ${said.join('\n')}`);
          assert.ok(said[0]?.includes(`the successor sent roles as ${what} as a list`), said[0]);
        }
      }
      odd = { roles: null, groups: null };
      const none = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
      assert.equal(none.status, 200, none.text);
      assert.deepEqual([none.body.roles, none.body.groups, none.body.admin], [[], [], false]);
      // A PHP array with a gap (an item removed) comes as an object of its indices.
      odd = { roles: { '0': { role: 'ROLE_ADMIN' }, '2': { role: 'ROLE_TEACHER' } } };
      for (const path of ['/Entity/User/thomas.becker', '/Entity/User?extended=1']) {
        const gapped = await proxy.call<Json | Json[]>('GET', path);
        assert.equal(gapped.status, 200, gapped.text);
        const user = Array.isArray(gapped.body)
          ? gapped.body.find((u) => u._id === 'thomas.becker')
          : gapped.body;
        assert.deepEqual(user?.roles, ['ROLE_ADMIN', 'ROLE_TEACHER'], path);
        if (!Array.isArray(gapped.body)) assert.equal(gapped.body.admin, true);
      }
      // An empty object is an empty list (PHP's empty array with JSON_FORCE_OBJECT).
      odd = { privileges: {} };
      const empty = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
      assert.equal(empty.status, 200, empty.text);
      assert.deepEqual(empty.body.privileges, []);
      // A write is done once its answer comes: that answer is rendered, not refused, and the
      // operator is told (once per field).
      odd = { roles: 'ROLE_ADMIN' };
      const mark = proxy.logSink.lines().length;
      const written = await proxy.call<Json>('POST', '/Entity/User/thomas.becker/link/groups', ['lehrer']);
      assert.equal(written.status, 200, written.text);
      assert.deepEqual([written.body.roles, written.body.admin], [[], false]);
      assert.deepEqual(
        warnings(proxy, mark).map((line) => [line.field, line.format, line.value, line.msg]),
        [
          [
            'roles',
            'list',
            '"ROLE_ADMIN"',
            'successor value unusable as a legacy list: user.roles renders as its default (told once per field)',
          ],
          [
            'admin',
            'list',
            '"ROLE_ADMIN"',
            'successor value unusable as a legacy list: user.admin renders as false (told once per field)',
          ],
        ],
      );
    });
  });

  it('an entity without its legacy ID is a 502 of a read, in a list and read by its ID, never "_id": null or a 404', async () => {
    await withOddProxy(async (proxy) => {
      for (const value of [null, undefined, { first: 'thomas' }]) {
        odd = { user: value };
        let mark = proxy.logSink.lines().length;
        const list = await proxy.call<Json>('GET', '/Entity/User');
        assert.equal(list.status, 502, `${JSON.stringify(value)}: ${list.text}`);
        assert.match(
          failures(proxy, mark).join('\n'),
          /the successor sent a user \([0-9a-f-]{36}\) without \\"user\\", its legacy ID, as a text or number/,
        );
        // Read by its ID: the read by the name's filter answers the user without its name.
        mark = proxy.logSink.lines().length;
        const one = await proxy.call<Json>('GET', '/Entity/User/thomas.becker');
        assert.equal(one.status, 502, `${JSON.stringify(value)}: ${one.text}`);
        assert.match(
          failures(proxy, mark).join('\n'),
          /answered a read of user by user with one without \\"user\\" \(its legacy ID\)/,
        );
      }
    });
  });

  it('an entity without its legacy ID: a role list (answered whole) and a read by a UUID ID are 502s too', async () => {
    // A role without its key in the role list.
    const roleFetch = rewriting(
      (pathname) => pathname.endsWith('/roles'),
      (body) => {
        for (const list of Object.values(body as Record<string, Json[]>))
          if (Array.isArray(list))
            for (const item of list) if (item.role === 'ROLE_TEACHER') delete item.role;
        return body;
      },
    );
    const roles = await startUserProxy({ successorFetch: roleFetch });
    try {
      const mark = roles.logSink.lines().length;
      const list = await roles.call<Json>('GET', '/Entity/Role');
      assert.equal(list.status, 502, list.text);
      assert.match(failures(roles, mark).join('\n'), /the successor sent a role \([0-9a-f-]{36}\) without/);
    } finally {
      await roles.close();
    }
    // Users by UUID: one that comes without its UUID (`hexUuid` and `@id`) cannot be named.
    await withOddProxy(
      async (proxy) => {
        const idsFile = path.join(proxy.profileDir, 'ids.json');
        const table = JSON.parse(readFileSync(idsFile, 'utf8'));
        table.kinds.user = { strategy: 'uuid' };
        writeFileSync(idsFile, JSON.stringify(table, null, 2));
        assert.equal(proxy.mappings.reload().ok, true);
        const listed = await proxy.call<Json[]>('GET', '/Entity/User');
        const id = listed.body.find((user) => user.username === 'thomas.becker')?._id;
        assert.equal(typeof id, 'string', listed.text);
        odd = { hexUuid: undefined, '@id': undefined };
        const mark = proxy.logSink.lines().length;
        const one = await proxy.call<Json>('GET', `/Entity/User/${String(id)}`);
        assert.equal(one.status, 502, one.text);
        assert.match(failures(proxy, mark).join('\n'), /the successor sent a user without its UUID/);
      },
      { copyProfile: true },
    );
  });
});

describe('a field list the field table cannot read', () => {
  it('fails before any successor call, so a write never goes through before its answer fails', async () => {
    // A profile is checked at load against the fields each legacy operation declares; a handler
    // that renders another field must not have written by the time that fails.
    const proxy = await startUserProxy();
    try {
      proxy.resetCounts();
      await assert.rejects(
        proxy.mappings.current().run('user.create', {
          body: { username: 'no.write', firstname: 'No', lastname: 'Write' },
          fields: ['username', 'noSuchField'],
        }),
        (error: unknown) => {
          assert.ok(error instanceof TranslationError, String(error));
          assert.equal(error.code, 'profile_error');
          assert.match(error.message, /no readable field "noSuchField" for user/);
          return true;
        },
      );
      assert.deepEqual(proxy.apiCalls(), {}, 'no successor call');
      assert.equal(proxy.sandbox.data.userByAccount('no.write'), undefined);
    } finally {
      await proxy.close();
    }
  });
});
