// The 41 operations of the seed (legacy-api-v1.6.0.md section 4), pinned independently of the
// code: a fixed list of (method, path) pairs, copied from the seed's tables, that must equal what
// LEGACY_OPERATIONS registers (namespace Service), what the served OpenAPI document lists, and
// what a running proxy answers over real HTTP (neither 404 nor 405) against the sandbox.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LEGACY_OPERATIONS } from '../src/legacy/operations.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

/** Seed section 4, table by table, in the seed's order. */
const SEED_OPERATIONS = {
  '4.1 User': [
    'GET /Service/Core/Entity/User',
    'POST /Service/Core/Entity/User',
    'GET /Service/Core/Entity/User/{id}',
    'PUT /Service/Core/Entity/User/{id}',
    'DELETE /Service/Core/Entity/User/{id}',
    'POST /Service/Core/Entity/User/{id}/link/groups',
    'DELETE /Service/Core/Entity/User/{id}/link/groups',
    'POST /Service/Core/Entity/User/{id}/link/roles',
    'DELETE /Service/Core/Entity/User/{id}/link/roles',
    'POST /Service/Core/Entity/User/{id}/link/privileges',
    'DELETE /Service/Core/Entity/User/{id}/link/privileges',
    'POST /Service/Core/User/{id}/restore',
    'POST /Service/Core/User/{id}/password',
    'POST /Service/Core/User/{id}/password/reset',
    'POST /Service/Core/User/{id}/adminpassword',
    'POST /Service/Core/User/{id}/adminpassword/reset',
    'POST /Service/Core/User/{id}/adminpassword/revoke',
  ],
  '4.2 Group': [
    'GET /Service/Core/Entity/Group',
    'POST /Service/Core/Entity/Group',
    'GET /Service/Core/Entity/Group/{id}',
    'PUT /Service/Core/Entity/Group/{id}',
    'DELETE /Service/Core/Entity/Group/{id}',
    'POST /Service/Core/Entity/Group/{id}/link/users',
    'DELETE /Service/Core/Entity/Group/{id}/link/users',
    'POST /Service/Core/Entity/Group/{id}/link/assignedPrivileges',
    'DELETE /Service/Core/Entity/Group/{id}/link/assignedPrivileges',
    'POST /Service/Core/Entity/Group/{id}/link/assignedFlags',
    'DELETE /Service/Core/Entity/Group/{id}/link/assignedFlags',
  ],
  '4.3 Role': [
    'GET /Service/Core/Entity/Role',
    'POST /Service/Core/Entity/Role',
    'GET /Service/Core/Entity/Role/{id}',
    'DELETE /Service/Core/Entity/Role/{id}',
    'POST /Service/Core/Entity/Role/{id}/link/privileges',
    'DELETE /Service/Core/Entity/Role/{id}/link/privileges',
  ],
  '4.4 Privilege': [
    'GET /Service/Core/Entity/Privilege',
    'GET /Service/Core/Entity/Privilege/{id}',
    'POST /Service/Core/Entity/Privilege/{id}/link/roles',
    'DELETE /Service/Core/Entity/Privilege/{id}/link/roles',
    'POST /Service/Core/Entity/Privilege/{id}/link/groups',
    'DELETE /Service/Core/Entity/Privilege/{id}/link/groups',
  ],
  '4.5 SSO': ['POST /Service/Sso/authenticate'],
} as const;

const SEED: readonly string[] = Object.values(SEED_OPERATIONS).flat();
const sorted = (list: Iterable<string>) => [...list].sort();
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * One probe per seed operation, in the seed's order: the path with real IDs (so a 404 can only
 * mean a missing route) and a body that is refused (unknown IDs in link bodies, missing fields)
 * wherever the operation would otherwise change demo data. The destructive operations without a
 * body act on entities made for the probe (deleted, then restored).
 */
const PROBES: Record<string, { path: string; body?: unknown; form?: Record<string, string> }> = {
  'GET /Service/Core/Entity/User': { path: '/Service/Core/Entity/User' },
  'POST /Service/Core/Entity/User': { path: '/Service/Core/Entity/User', body: {} },
  'GET /Service/Core/Entity/User/{id}': { path: '/Service/Core/Entity/User/lena.mueller' },
  'PUT /Service/Core/Entity/User/{id}': { path: '/Service/Core/Entity/User/lena.mueller', body: { nope: 1 } },
  'DELETE /Service/Core/Entity/User/{id}': { path: '/Service/Core/Entity/User/probe.user' },
  'POST /Service/Core/Entity/User/{id}/link/groups': {
    path: '/Service/Core/Entity/User/lena.mueller/link/groups',
    body: ['no.such.group'],
  },
  'DELETE /Service/Core/Entity/User/{id}/link/groups': {
    path: '/Service/Core/Entity/User/lena.mueller/link/groups',
    body: ['no.such.group'],
  },
  'POST /Service/Core/Entity/User/{id}/link/roles': {
    path: '/Service/Core/Entity/User/lena.mueller/link/roles',
    body: ['ROLE_NO_SUCH'],
  },
  'DELETE /Service/Core/Entity/User/{id}/link/roles': {
    path: '/Service/Core/Entity/User/lena.mueller/link/roles',
    body: ['ROLE_NO_SUCH'],
  },
  'POST /Service/Core/Entity/User/{id}/link/privileges': {
    path: '/Service/Core/Entity/User/lena.mueller/link/privileges',
    body: ['no_such_privilege'],
  },
  'DELETE /Service/Core/Entity/User/{id}/link/privileges': {
    path: '/Service/Core/Entity/User/lena.mueller/link/privileges',
    body: ['no_such_privilege'],
  },
  'POST /Service/Core/User/{id}/restore': { path: '/Service/Core/User/probe.user/restore' },
  'POST /Service/Core/User/{id}/password': { path: '/Service/Core/User/lena.mueller/password', body: {} },
  'POST /Service/Core/User/{id}/password/reset': { path: '/Service/Core/User/probe.user/password/reset' },
  'POST /Service/Core/User/{id}/adminpassword': {
    path: '/Service/Core/User/lena.mueller/adminpassword',
    body: {},
  },
  'POST /Service/Core/User/{id}/adminpassword/reset': {
    path: '/Service/Core/User/probe.user/adminpassword/reset',
  },
  'POST /Service/Core/User/{id}/adminpassword/revoke': {
    path: '/Service/Core/User/probe.user/adminpassword/revoke',
  },
  'GET /Service/Core/Entity/Group': { path: '/Service/Core/Entity/Group' },
  'POST /Service/Core/Entity/Group': { path: '/Service/Core/Entity/Group', body: {} },
  'GET /Service/Core/Entity/Group/{id}': { path: '/Service/Core/Entity/Group/lehrer' },
  'PUT /Service/Core/Entity/Group/{id}': { path: '/Service/Core/Entity/Group/lehrer', body: { nope: 1 } },
  'DELETE /Service/Core/Entity/Group/{id}': { path: '/Service/Core/Entity/Group/probe.gruppe' },
  'POST /Service/Core/Entity/Group/{id}/link/users': {
    path: '/Service/Core/Entity/Group/lehrer/link/users',
    body: ['no.such.user'],
  },
  'DELETE /Service/Core/Entity/Group/{id}/link/users': {
    path: '/Service/Core/Entity/Group/lehrer/link/users',
    body: ['no.such.user'],
  },
  'POST /Service/Core/Entity/Group/{id}/link/assignedPrivileges': {
    path: '/Service/Core/Entity/Group/lehrer/link/assignedPrivileges',
    body: ['no_such_privilege'],
  },
  'DELETE /Service/Core/Entity/Group/{id}/link/assignedPrivileges': {
    path: '/Service/Core/Entity/Group/lehrer/link/assignedPrivileges',
    body: ['no_such_privilege'],
  },
  'POST /Service/Core/Entity/Group/{id}/link/assignedFlags': {
    path: '/Service/Core/Entity/Group/lehrer/link/assignedFlags',
    body: ['no_such_flag'],
  },
  'DELETE /Service/Core/Entity/Group/{id}/link/assignedFlags': {
    path: '/Service/Core/Entity/Group/lehrer/link/assignedFlags',
    body: ['no_such_flag'],
  },
  'GET /Service/Core/Entity/Role': { path: '/Service/Core/Entity/Role' },
  'POST /Service/Core/Entity/Role': { path: '/Service/Core/Entity/Role', body: {} },
  'GET /Service/Core/Entity/Role/{id}': { path: '/Service/Core/Entity/Role/ROLE_TEACHER' },
  'DELETE /Service/Core/Entity/Role/{id}': { path: '/Service/Core/Entity/Role/ROLE_PROBE' },
  'POST /Service/Core/Entity/Role/{id}/link/privileges': {
    path: '/Service/Core/Entity/Role/ROLE_TEACHER/link/privileges',
    body: ['no_such_privilege'],
  },
  'DELETE /Service/Core/Entity/Role/{id}/link/privileges': {
    path: '/Service/Core/Entity/Role/ROLE_TEACHER/link/privileges',
    body: ['no_such_privilege'],
  },
  'GET /Service/Core/Entity/Privilege': { path: '/Service/Core/Entity/Privilege' },
  'GET /Service/Core/Entity/Privilege/{id}': { path: '/Service/Core/Entity/Privilege/mail_external' },
  'POST /Service/Core/Entity/Privilege/{id}/link/roles': {
    path: '/Service/Core/Entity/Privilege/mail_external/link/roles',
    body: ['ROLE_NO_SUCH'],
  },
  'DELETE /Service/Core/Entity/Privilege/{id}/link/roles': {
    path: '/Service/Core/Entity/Privilege/mail_external/link/roles',
    body: ['ROLE_NO_SUCH'],
  },
  'POST /Service/Core/Entity/Privilege/{id}/link/groups': {
    path: '/Service/Core/Entity/Privilege/mail_external/link/groups',
    body: ['no.such.group'],
  },
  'DELETE /Service/Core/Entity/Privilege/{id}/link/groups': {
    path: '/Service/Core/Entity/Privilege/mail_external/link/groups',
    body: ['no.such.group'],
  },
  'POST /Service/Sso/authenticate': { path: '/Service/Sso/authenticate', form: { username: 'lena.mueller' } },
};

describe('the 41 operations of seed section 4', () => {
  it('are 17 + 11 + 6 + 6 + 1 distinct (method, path) pairs', () => {
    assert.deepEqual(
      Object.values(SEED_OPERATIONS).map((table) => table.length),
      [17, 11, 6, 6, 1],
    );
    assert.equal(new Set(SEED).size, 41);
    assert.deepEqual(sorted(Object.keys(PROBES)), sorted(SEED), 'one probe per operation');
  });

  it('are exactly the operations LEGACY_OPERATIONS registers (namespace Service)', () => {
    const registered = LEGACY_OPERATIONS.map((op) => `${op.method.toUpperCase()} /Service${op.path}`);
    assert.equal(registered.length, 41, 'no operation registered twice');
    assert.deepEqual(sorted(registered), sorted(SEED));
  });

  describe('through a running proxy', () => {
    let proxy: UserProxy;

    before(async () => {
      proxy = await startUserProxy();
      // Entities the destructive probes act on, so the demo data stays as it is.
      const user = await proxy.call('POST', '/Entity/User', {
        username: 'probe.user',
        firstname: 'Probe',
        lastname: 'User',
      });
      assert.equal(user.status, 201, user.text);
      const group = await proxy.call('POST', '/Entity/Group', { name: 'Probe Gruppe' });
      assert.equal(group.status, 201, group.text);
      const role = await proxy.call<{ _id: string }>('POST', '/Entity/Role', {
        name: 'Probe',
        module: 'Core',
      });
      assert.equal(role.status, 201, role.text);
      assert.equal(role.body._id, 'ROLE_PROBE');
    });
    after(async () => {
      await proxy?.close();
    });

    async function send(
      method: string,
      path: string,
      probe: { body?: unknown; form?: Record<string, string> },
    ) {
      const headers: Record<string, string> = { authorization: proxy.authorization };
      let body: string | URLSearchParams | undefined;
      if (probe.form !== undefined) body = new URLSearchParams(probe.form);
      else if (probe.body !== undefined) {
        body = JSON.stringify(probe.body);
        headers['content-type'] = 'application/json';
      }
      const response = await fetch(`${proxy.url}/iserv/api${path}`, { method, headers, body });
      return { status: response.status, text: await response.text() };
    }

    it('lists exactly these paths and methods in the served OpenAPI document', async () => {
      const response = await fetch(`${proxy.url}/iserv/api/docs/openapi.json`, {
        headers: { authorization: proxy.authorization },
      });
      assert.equal(response.status, 200);
      const document = (await response.json()) as {
        servers: { url: string }[];
        paths: Record<string, Record<string, unknown>>;
      };
      assert.deepEqual(
        document.servers.map((s) => new URL(s.url, response.url).pathname),
        ['/iserv/api/Service'],
      );
      const documented = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((key) => HTTP_METHODS.has(key))
          .map((method) => `${method.toUpperCase()} /Service${path}`),
      );
      assert.equal(documented.length, 41);
      assert.deepEqual(sorted(documented), sorted(SEED));
    });

    it('answers every one of them (neither 404 nor 405) with an API user, rendering only the fields each declares', async () => {
      // What each handler asks its mapping operation to render, as it runs: the profile is checked
      // at load against the fields an operation declares (`answer`), so a handler must ask no other.
      const engine = proxy.mappings.current();
      const run = engine.run.bind(engine);
      const rendered = new Map<string, Set<string>>();
      engine.run = (operationId, input, calls) => {
        const seen = rendered.get(operationId) ?? new Set<string>();
        rendered.set(operationId, seen);
        for (const field of input.fields ?? []) seen.add(field);
        return run(operationId, input, calls);
      };
      // The probe can fail: a path the seed does not have is a 404, a method it does not have a 405.
      assert.equal((await send('GET', '/Service/Core/Entity/Widget', {})).status, 404);
      assert.equal((await send('PATCH', '/Service/Core/Entity/User/lena.mueller', { body: {} })).status, 405);
      const answers: string[] = [];
      for (const operation of SEED) {
        const probe = PROBES[operation];
        assert.ok(probe, operation);
        const [method = ''] = operation.split(' ');
        const answer = await send(method, probe.path, probe);
        answers.push(`${operation} → ${answer.status}`);
        assert.ok(
          answer.status !== 404 && answer.status !== 405,
          `${operation} (${method} ${probe.path}) answered ${answer.status}: ${answer.text}`,
        );
        assert.ok(answer.status < 500, `${operation} answered ${answer.status}: ${answer.text}`);
      }
      assert.equal(answers.length, 41);
      // The lists' other variant, and the writes whose probes above are refused before they run.
      for (const list of ['User', 'Group', 'Role', 'Privilege'])
        assert.equal((await send('GET', `/Service/Core/Entity/${list}?extended=1`, {})).status, 200);
      for (const [method, path, body, status] of [
        ['POST', 'User', { username: 'probe.two', firstname: 'Probe', lastname: 'Two' }, 201],
        ['PUT', 'User/probe.two', { firstname: 'Probe 2' }, 200],
        ['POST', 'Group', { name: 'Probe Zwei' }, 201],
        ['PUT', 'Group/probe.zwei', { name: 'Probe 2' }, 200],
        ['POST', 'Role', { name: 'Probe Zwei', module: 'Core' }, 201],
      ] as const) {
        const answer = await send(method, `/Service/Core/Entity/${path}`, { body });
        assert.equal(answer.status, status, `${method} ${path}: ${answer.text}`);
      }
      engine.run = run;
      for (const operation of LEGACY_OPERATIONS) {
        const declared = 'fields' in operation.answer ? operation.answer.fields : [];
        const asked = [...(rendered.get(operation.id) ?? [])];
        assert.deepEqual(
          asked.filter((field) => !declared.includes(field)),
          [],
          `${operation.id} renders fields it does not declare`,
        );
        if (declared.length > 0) assert.ok(asked.length > 0, `${operation.id} ran`);
      }
    });
  });
});
