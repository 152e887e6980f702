// Bounded, well-formed input on the legacy surface: every writable text field has one documented
// length limit, the same on create and update, and refuses control characters and unpaired
// surrogates; legacy IDs are capped in bytes URL-encoded. All of it is answered before any
// successor call (the sandbox's request counters stay at zero).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type ErrorBody = { code: number; message: string; errors?: { path: string; message: string }[] };

/** A writable field: where it is written and its documented limit. */
interface FieldCase {
  label: string;
  method: 'POST' | 'PUT';
  path: string;
  /** A valid body apart from the field under test. */
  base: Record<string, unknown>;
  field: string;
  max: number;
}

const userBase = { username: 'limits.user', firstname: 'Ada', lastname: 'Lovelace' };
const FIELDS: FieldCase[] = [
  ...(
    [
      ['username', 64],
      ['firstname', 255],
      ['lastname', 255],
      ['type', 255],
      ['importId', 255],
      ['auxInfo', 255],
    ] as const
  ).flatMap(
    ([field, max]) =>
      [
        { label: `user create ${field}`, method: 'POST', path: '/Entity/User', base: userBase, field, max },
        {
          label: `user update ${field}`,
          method: 'PUT',
          path: '/Entity/User/lena.mueller',
          base: {},
          field,
          max,
        },
      ] satisfies FieldCase[],
  ),
  { label: 'group create name', method: 'POST', path: '/Entity/Group', base: {}, field: 'name', max: 64 },
  {
    label: 'group update name',
    method: 'PUT',
    path: '/Entity/Group/lehrer',
    base: {},
    field: 'name',
    max: 64,
  },
  {
    label: 'group update account',
    method: 'PUT',
    path: '/Entity/Group/lehrer',
    base: {},
    field: 'account',
    max: 64,
  },
  {
    label: 'role create name',
    method: 'POST',
    path: '/Entity/Role',
    base: { module: 'Core' },
    field: 'name',
    max: 50,
  },
  {
    label: 'role create module',
    method: 'POST',
    path: '/Entity/Role',
    base: { name: 'Limits' },
    field: 'module',
    max: 255,
  },
];

/** Control characters (C0, DEL, C1) and unpaired UTF-16 surrogates, each inside a plain name. */
const UNSAFE = [
  'nul\u0000',
  'tab\there',
  'new\nline',
  'esc\u001b[31m',
  'del\u007f',
  'c1\u0085',
  'lone\ud800',
  'x\udc00y',
  '\ud83d',
];

describe('legacy input bounds', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  /** Calls the proxy and asserts a 400 naming `path`, with no successor call made. */
  async function refused(method: string, path: string, body: unknown, errorPath: string, status = 400) {
    proxy.resetCounts();
    const answer = await proxy.call<ErrorBody>(method, path, body);
    assert.equal(answer.status, status, `${method} ${path}: ${answer.text.slice(0, 300)}`);
    assert.equal(answer.body.code, status);
    assert.ok(
      answer.body.errors?.some((e) => e.path === errorPath),
      `${method} ${path}: no error at ${errorPath}: ${answer.text.slice(0, 300)}`,
    );
    assert.deepEqual(proxy.apiCalls(), {}, `${method} ${path}: the successor was called`);
    return answer.body;
  }

  describe('writable text fields', () => {
    it('refuses a value one over the limit, on create and update alike', async () => {
      for (const c of FIELDS) {
        const body = { ...c.base, [c.field]: 'a'.repeat(c.max + 1) };
        const error = await refused(c.method, c.path, body, `body.${c.field}`);
        assert.match(error.errors?.[0]?.message ?? '', new RegExp(`at most ${c.max}`), c.label);
      }
    });

    it('refuses a body that is not UTF-8 (a Latin-1 ü), whatever charset it declares, and writes nothing', async () => {
      const latin1 = (text: string) => Buffer.from(text, 'latin1');
      const cases = [
        ['PUT', '/Entity/User/lena.mueller', latin1('{"firstname":"J\u00fcrgen"}'), 'application/json'],
        [
          'PUT',
          '/Entity/User/lena.mueller',
          latin1('{"firstname":"J\u00fcrgen"}'),
          'application/json; charset=iso-8859-1',
        ],
        [
          'POST',
          '/Entity/User',
          latin1('{"username":"latin.one","firstname":"J\u00fcrgen","lastname":"M\u00fcller"}'),
          'application/json',
        ],
        ['POST', '/Entity/Group/lehrer/link/users', latin1('["j\u00fcrgen"]'), 'application/json'],
      ] as const;
      for (const [method, path, body, type] of cases) {
        proxy.resetCounts();
        const response = await fetch(`${proxy.core}${path}`, {
          method,
          headers: { authorization: proxy.authorization, 'content-type': type },
          body,
        });
        const answer = (await response.json()) as ErrorBody;
        assert.equal(response.status, 400, `${method} ${path} (${type}): ${JSON.stringify(answer)}`);
        assert.equal(answer.message, 'The request body is not valid UTF-8');
        assert.deepEqual(answer.errors, [{ path: 'body', message: 'must be UTF-8 text' }]);
        assert.deepEqual(proxy.apiCalls(), {}, `${method} ${path}: the successor was called`);
      }
      const user = await proxy.call<{ firstname: string }>('GET', '/Entity/User/lena.mueller');
      assert.equal(user.body.firstname, 'Lena');
      assert.equal((await proxy.call('GET', '/Entity/User/latin.one')).status, 404);
      // The same text in UTF-8, with a byte order mark, is taken.
      const utf8 = await fetch(`${proxy.core}/Entity/User/lena.mueller`, {
        method: 'PUT',
        headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
        body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"firstname":"Lena\u00fc"}')]),
      });
      assert.equal(utf8.status, 200, await utf8.text());
      assert.equal(
        (await proxy.call<{ firstname: string }>('GET', '/Entity/User/lena.mueller')).body.firstname,
        'Lena\u00fc',
      );
      assert.equal((await proxy.call('PUT', '/Entity/User/lena.mueller', { firstname: 'Lena' })).status, 200);
    });

    it('refuses control characters and unpaired surrogates, naming the field', async () => {
      for (const c of FIELDS) {
        for (const value of UNSAFE) {
          await refused(c.method, c.path, { ...c.base, [c.field]: value }, `body.${c.field}`);
        }
      }
    });

    it('refuses a 1 MB group name on update and a 600 KB role name (not a 502)', async () => {
      await refused('PUT', '/Entity/Group/lehrer', { name: 'n'.repeat(1_000_000) }, 'body.name');
      await refused('POST', '/Entity/Role', { name: 'R'.repeat(600_000), module: 'Core' }, 'body.name');
    });

    it('accepts values at the limit and paired surrogates, and reads them back unchanged', async () => {
      const firstname = `${'é'.repeat(251)}😀`; // 253 characters, 255 UTF-16 code units
      const created = await proxy.call<Record<string, unknown>>('POST', '/Entity/User', {
        username: `u${'x'.repeat(63)}`,
        firstname,
        lastname: 'L'.repeat(255),
        auxInfo: 'Klasse 5a – Raum 2.14',
      });
      assert.equal(created.status, 201, created.text.slice(0, 300));
      const id = String(created.body._id);
      const read = await proxy.call<Record<string, unknown>>('GET', `/Entity/User/${id}`);
      assert.equal(read.body.firstname, firstname);
      assert.equal(read.body.auxInfo, 'Klasse 5a – Raum 2.14');

      const group = await proxy.call<Record<string, unknown>>('POST', '/Entity/Group', {
        name: `g${'x'.repeat(63)}`,
      });
      assert.equal(group.status, 201, group.text.slice(0, 300));
      const renamed = await proxy.call('PUT', `/Entity/Group/${String(group.body._id)}`, {
        name: `Gruppe ${'ä'.repeat(57)}`,
      });
      assert.equal(renamed.status, 200, renamed.text.slice(0, 300));

      const role = await proxy.call<Record<string, unknown>>('POST', '/Entity/Role', {
        name: '㎯'.repeat(50),
        module: 'M'.repeat(255),
      });
      assert.equal(role.status, 201, role.text.slice(0, 300));
      assert.equal(role.body._id, `ROLE_${'RADS2'.repeat(50)}`, 'the longest key, 255 bytes, still fits');
      const roleRead = await proxy.call('GET', `/Entity/Role/${String(role.body._id)}`);
      assert.equal(roleRead.status, 200, roleRead.text.slice(0, 300));
    });
  });

  describe('wording for a person', () => {
    it("says a field left out is required, an empty one must not be empty, and what type a value must have, not zod's words", async () => {
      const messageAt = (body: ErrorBody, path: string) => body.errors?.find((e) => e.path === path)?.message;
      const created = await refused(
        'POST',
        '/Entity/User',
        { username: 'x.y', lastname: 7 },
        'body.firstname',
      );
      assert.equal(messageAt(created, 'body.firstname'), 'is required');
      assert.equal(messageAt(created, 'body.lastname'), 'must be a string, not a number');
      const password = await refused('POST', '/User/lena.mueller/password', {}, 'body.password');
      assert.equal(messageAt(password, 'body.password'), 'is required');
      const links = await refused(
        'POST',
        '/Entity/User/lena.mueller/link/groups',
        JSON.stringify('lehrer'),
        'body',
      );
      assert.equal(messageAt(links, 'body'), 'must be an array, not a string');
      // The schema's own message stays.
      const empty = await refused('PUT', '/Entity/User/lena.mueller', { firstname: '' }, 'body.firstname');
      assert.equal(messageAt(empty, 'body.firstname'), 'must not be empty');
      const sso = await fetch(`${proxy.url}/iserv/api/Service/Sso/authenticate`, {
        method: 'POST',
        headers: { authorization: proxy.authorization, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'username=',
      });
      const ssoBody = (await sso.json()) as ErrorBody;
      assert.equal(sso.status, 400);
      assert.equal(messageAt(ssoBody, 'body.username'), 'must not be empty');
      assert.doesNotMatch(
        JSON.stringify([created, password, links, empty, ssoBody]),
        /Invalid input|Too small|undefined/,
      );
    });
  });

  describe('legacy IDs', () => {
    const resources = ['User', 'Group', 'Role', 'Privilege'];

    it('answers 404 for a path ID over 255 bytes URL-encoded, without asking the successor', async () => {
      for (const id of ['a'.repeat(256), 'a'.repeat(16_000), 'ü'.repeat(43)]) {
        for (const resource of resources) {
          const path = `/Entity/${resource}/${encodeURIComponent(id)}`;
          const error = await refused('GET', path, undefined, 'path.id', 404);
          assert.match(error.errors?.[0]?.message ?? '', /255 bytes/);
        }
        await refused('PUT', `/Entity/User/${encodeURIComponent(id)}`, { firstname: 'A' }, 'path.id', 404);
        await refused('DELETE', `/Entity/Group/${encodeURIComponent(id)}`, undefined, 'path.id', 404);
        await refused('POST', `/Entity/Role/${encodeURIComponent(id)}/link/privileges`, [], 'path.id', 404);
      }
    });

    it('looks up an ID of 255 bytes as usual (an unknown one is a 404 from the lookup)', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<ErrorBody>('GET', `/Entity/User/${encodeURIComponent('ü'.repeat(42))}`);
      assert.equal(answer.status, 404);
      assert.ok(proxy.apiCallCount() > 0, 'a 252-byte ID is looked up');
    });

    it('answers 400 naming the body index of a link ID over the cap, before any successor call', async () => {
      for (const long of ['x'.repeat(20_000), 'ü'.repeat(3_000), 'a'.repeat(256)]) {
        const body = ['thomas.becker', 'lena.mueller', 'mia.fischer', long];
        const error = await refused('POST', '/Entity/Group/lehrer/link/users', body, 'body.3');
        assert.match(error.errors?.[0]?.message ?? '', /255 bytes/);
        await refused('DELETE', '/Entity/User/lena.mueller/link/groups', ['schueler', long], 'body.1');
        await refused('POST', '/Entity/Privilege/print_colour/link/roles', [long], 'body.0');
        await refused(
          'POST',
          '/Entity/Role',
          { name: 'Limits', module: 'Core', privileges: [long] },
          'body.privileges.0',
        );
      }
      await refused('POST', '/Entity/Group/lehrer/link/users', ['lena.mueller', 'nul\u0000'], 'body.1');
      await refused('POST', '/Entity/Group/lehrer/link/users', ['lone\ud800'], 'body.0');
    });
  });
});
