// Link and unlink groups, roles and privileges of a user through the proxy: bodies are JSON
// arrays of legacy IDs, every ID is resolved before anything is written, both directions are
// idempotent, and a link call costs one batched resolution plus the writes.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { USER_FIELDS, userSchema } from '../src/legacy/user/schema.js';
import { linksOf, startUserProxy, type UserProxy } from './user-helpers.js';

type ErrorBody = { code: number; message: string; errors?: { path: string; message: string }[] };
type User = { groups: string[]; roles: string[]; privileges: string[]; admin: boolean };

describe('user links', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
    const created = await proxy.call('POST', '/Entity/User', {
      username: 'lina.link',
      firstname: 'Lina',
      lastname: 'Link',
    });
    assert.equal(created.status, 201, created.text);
  });
  after(async () => {
    await proxy?.close();
  });

  it('adds groups and answers the updated user (one resolution, one batched lookup, one write)', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const answer = await proxy.call<User>('POST', '/Entity/User/lina.link/link/groups', [
      'lehrer',
      'klasse.5a',
      'ag.robotik',
    ]);
    assert.equal(answer.status, 200, answer.text);
    userSchema.strict().parse(answer.body);
    assert.deepEqual(Object.keys(answer.body), [...USER_FIELDS]);
    assert.deepEqual(answer.body.groups.slice().sort(), ['ag.robotik', 'klasse.5a', 'lehrer']);
    assert.deepEqual(linksOf(proxy, 'lina.link').groups, ['ag.robotik', 'klasse.5a', 'lehrer']);
    assert.deepEqual(proxy.apiCalls(), {
      'GET /users': 1,
      'GET /groups': 1,
      'POST /users/{id}/groups': 1,
    });
  });

  it('is idempotent: adding what is linked already changes nothing and is not an error', async () => {
    proxy.resetCounts();
    const answer = await proxy.call<User>('POST', '/Entity/User/lina.link/link/groups', ['lehrer', 'lehrer']);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(linksOf(proxy, 'lina.link').groups, ['ag.robotik', 'klasse.5a', 'lehrer']);
    assert.deepEqual(
      proxy.apiCalls(),
      { 'GET /users/{id}': 1, 'POST /users/{id}/groups': 1 },
      'warm cache: groups cached; the user is read to refuse a deleted one',
    );
  });

  it('rejects a body with any unknown ID with 400, listing each, and writes nothing', async () => {
    const before = linksOf(proxy, 'lina.link');
    proxy.resetCounts();
    const answer = await proxy.call<ErrorBody>('POST', '/Entity/User/lina.link/link/groups', [
      'schueler',
      'no.such.group',
      'klasse.7b',
      'other.missing',
    ]);
    assert.equal(answer.status, 400, answer.text);
    assert.match(
      answer.body.message,
      /unknown group IDs: "no\.such\.group", "other\.missing"; nothing was changed/i,
    );
    assert.deepEqual(answer.body.errors, [
      { path: 'body.1', message: 'no group with ID "no.such.group"' },
      { path: 'body.3', message: 'no group with ID "other.missing"' },
    ]);
    assert.deepEqual(linksOf(proxy, 'lina.link'), before);
    assert.ok(
      Object.keys(proxy.apiCalls()).every((key) => key.startsWith('GET ')),
      `no write was sent: ${JSON.stringify(proxy.apiCalls())}`,
    );
  });

  it('removes groups given in a JSON array body, ignoring ones that are not linked', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const answer = await proxy.call<User>('DELETE', '/Entity/User/lina.link/link/groups', [
      'ag.robotik',
      'klasse.5a',
      'schueler',
    ]);
    assert.equal(answer.status, 200, answer.text);
    userSchema.strict().parse(answer.body);
    assert.deepEqual(answer.body.groups, ['lehrer']);
    assert.deepEqual(linksOf(proxy, 'lina.link').groups, ['lehrer']);
    assert.deepEqual(proxy.apiCalls(), {
      'GET /users': 1,
      'GET /groups': 1,
      'DELETE /users/{id}/groups/{groupId}': 3,
      'GET /users/{id}': 1,
    });
    const again = await proxy.call<User>('DELETE', '/Entity/User/lina.link/link/groups', ['ag.robotik']);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body.groups, ['lehrer']);
  });

  it('rejects an unlink body with an unknown ID and removes nothing', async () => {
    const answer = await proxy.call<ErrorBody>('DELETE', '/Entity/User/lina.link/link/groups', [
      'lehrer',
      'gone',
    ]);
    assert.equal(answer.status, 400, answer.text);
    assert.deepEqual(answer.body.errors, [{ path: 'body.1', message: 'no group with ID "gone"' }]);
    assert.deepEqual(linksOf(proxy, 'lina.link').groups, ['lehrer']);
  });

  it('links roles: the admin role makes admin true, removing it makes it false', async () => {
    const added = await proxy.call<User>('POST', '/Entity/User/lina.link/link/roles', [
      'ROLE_TEACHER',
      'ROLE_ADMIN',
    ]);
    assert.equal(added.status, 200, added.text);
    assert.deepEqual(added.body.roles.slice().sort(), ['ROLE_ADMIN', 'ROLE_TEACHER']);
    assert.equal(added.body.admin, true);
    assert.deepEqual(linksOf(proxy, 'lina.link').roles, ['ROLE_ADMIN', 'ROLE_TEACHER']);
    const removed = await proxy.call<User>('DELETE', '/Entity/User/lina.link/link/roles', ['ROLE_ADMIN']);
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(removed.body.roles, ['ROLE_TEACHER']);
    assert.equal(removed.body.admin, false);
    const unknown = await proxy.call<ErrorBody>('POST', '/Entity/User/lina.link/link/roles', ['ROLE_NOPE']);
    assert.equal(unknown.status, 400);
    assert.deepEqual(linksOf(proxy, 'lina.link').roles, ['ROLE_TEACHER']);
  });

  it('links and unlinks privileges', async () => {
    const added = await proxy.call<User>('POST', '/Entity/User/lina.link/link/privileges', [
      'print_colour',
      'mail_external',
    ]);
    assert.equal(added.status, 200, added.text);
    assert.deepEqual(added.body.privileges.slice().sort(), ['mail_external', 'print_colour']);
    assert.deepEqual(linksOf(proxy, 'lina.link').privileges, ['mail_external', 'print_colour']);
    const removed = await proxy.call<User>('DELETE', '/Entity/User/lina.link/link/privileges', [
      'print_colour',
    ]);
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(removed.body.privileges, ['mail_external']);
    const unknown = await proxy.call<ErrorBody>('DELETE', '/Entity/User/lina.link/link/privileges', [
      'mail_external',
      'nope',
    ]);
    assert.equal(unknown.status, 400);
    assert.deepEqual(linksOf(proxy, 'lina.link').privileges, ['mail_external']);
  });

  it('answers the user unchanged for an empty list, without writing', async () => {
    proxy.resetCounts();
    const answer = await proxy.call<User>('POST', '/Entity/User/lina.link/link/groups', []);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.groups, ['lehrer']);
    assert.ok(Object.keys(proxy.apiCalls()).every((key) => key.startsWith('GET ')));
  });

  it('rejects bodies that are not arrays of ID strings', async () => {
    const before = linksOf(proxy, 'lina.link');
    for (const body of [{ groups: ['lehrer'] }, ['lehrer', 5], '"lehrer"', '[lehrer]', [''], '']) {
      for (const method of ['POST', 'DELETE']) {
        const answer = await proxy.call<ErrorBody>(method, '/Entity/User/lina.link/link/groups', body);
        assert.equal(answer.status, 400, `${method} ${JSON.stringify(body)}: ${answer.text}`);
        assert.equal(answer.body.code, 400);
      }
    }
    assert.deepEqual(linksOf(proxy, 'lina.link'), before);
  });

  it('answers 404 for an unknown user, even when the body also has unknown IDs', async () => {
    const answer = await proxy.call<ErrorBody>('POST', '/Entity/User/no.body/link/groups', [
      'lehrer',
      'gone',
    ]);
    assert.equal(answer.status, 404, answer.text);
    const remove = await proxy.call<ErrorBody>('DELETE', '/Entity/User/no.body/link/roles', ['ROLE_ADMIN']);
    assert.equal(remove.status, 404, remove.text);
  });
});

describe('a link body longer than maxIdsPerQuery', () => {
  let proxy: UserProxy;
  const courses = Array.from({ length: 250 }, (_, i) => `kurs.${String(i).padStart(3, '0')}`);

  before(async () => {
    proxy = await startUserProxy({
      sandbox: { fixture: { groups: courses.map((group) => ({ group, name: `Kurs ${group.slice(5)}` })) } },
    });
  });
  after(async () => {
    await proxy?.close();
  });

  it('resolves 250 IDs with one filter query per 100 (profile.json maxIdsPerQuery), then writes once', async () => {
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const mark = proxy.logSink.text.length;
    const answer = await proxy.call<User>('POST', '/Entity/User/thomas.becker/link/groups', courses);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(
      courses.filter((course) => !answer.body.groups.includes(course)),
      [],
      'every course is in the answer',
    );
    assert.deepEqual(proxy.apiCalls(), {
      'GET /users': 1,
      'GET /groups': 3,
      'POST /users/{id}/groups': 1,
    });
    const idsPerQuery = proxy.logSink
      .lines()
      .slice(proxy.logSink.text.slice(0, mark).split('\n').filter(Boolean).length)
      .flatMap((line) => {
        const call = line.successor as { method?: string; path?: string } | undefined;
        if (
          line.msg !== 'successor call' ||
          call?.method !== 'GET' ||
          !call.path?.startsWith('/iserv/idm/api/v1/groups?')
        )
          return [];
        return [new URL(call.path, 'http://x').searchParams.getAll('group[]').length];
      });
    assert.deepEqual(
      idsPerQuery.sort((a, b) => a - b),
      [50, 100, 100],
    );
    assert.equal(linksOf(proxy, 'thomas.becker').groups.filter((g) => g.startsWith('kurs.')).length, 250);
  });

  it('splits long IDs by maxIdBytesPerQuery too: 60 unknown IDs of 255 characters are a 400, not a 502', async () => {
    // Each ID passes the legacy cap (255 bytes URL-encoded); 100 of them in one URL (25 KB) are
    // more than the successor's server takes (Node's 16 KB of headers: 431).
    const long = Array.from({ length: 60 }, (_, i) => `${String(i).padStart(4, '0')}${'a'.repeat(251)}`);
    proxy.mappings.current().ids.clear();
    proxy.resetCounts();
    const mark = proxy.logSink.lines().length;
    const answer = await proxy.call<{ message: string }>('POST', '/Entity/User/thomas.becker/link/groups', [
      'kurs.000',
      ...long,
    ]);
    assert.equal(answer.status, 400, answer.text);
    assert.match(answer.body.message, /unknown/i);
    const urls = proxy.logSink
      .lines()
      .slice(mark)
      .flatMap((line) => {
        const call = line.successor as { method?: string; path?: string } | undefined;
        return line.msg === 'successor call' && call?.path?.startsWith('/iserv/idm/api/v1/groups?')
          ? [call.path]
          : [];
      });
    // 4096 bytes of IDs at most per query (profile.json), 15 of these IDs each (268 bytes with
    // `group%5B%5D=…&`), kurs.000 in the first: four queries.
    assert.equal(urls.length, 4, urls.map((url) => url.length).join(', '));
    for (const url of urls) assert.ok(url.length < 5_000, `a query of ${url.length} characters`);
    // Measured as sent: `(` is one character of a legacy ID and three in the query (%28).
    const parens = Array.from({ length: 60 }, (_, i) => `${String(i).padStart(4, '0')}${'('.repeat(251)}`);
    const before = proxy.logSink.lines().length;
    const refused = await proxy.call('POST', '/Entity/User/thomas.becker/link/groups', parens);
    assert.equal(refused.status, 400, refused.text);
    for (const line of proxy.logSink.lines().slice(before)) {
      const call = line.successor as { path?: string } | undefined;
      if (line.msg === 'successor call' && call?.path?.startsWith('/iserv/idm/api/v1/groups?'))
        assert.ok(call.path.length < 5_000, `a query of ${call.path.length} characters`);
    }
    assert.equal(linksOf(proxy, 'thomas.becker').groups.filter((g) => g.startsWith('kurs.')).length, 250);
  });
});

describe('a successor that refuses a filter query as too long', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy({ copyProfile: true });
    const file = path.join(proxy.profileDir, 'profile.json');
    const profile = JSON.parse(readFileSync(file, 'utf8'));
    profile.successor.maxIdBytesPerQuery = 65_536;
    writeFileSync(file, JSON.stringify(profile));
    assert.equal(proxy.mappings.reload().ok, true);
  });
  after(async () => {
    await proxy?.close();
  });

  it('answers 502 and names the setting to lower in the log', async () => {
    const long = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(4, '0')}${'a'.repeat(251)}`);
    const answer = await proxy.call('POST', '/Entity/User/thomas.becker/link/groups', long);
    assert.equal(answer.status, 502, answer.text);
    const failed = proxy.logSink
      .lines()
      .find((line) => line.msg === 'request failed' && /too long/.test(JSON.stringify(line)));
    assert.match(
      JSON.stringify(failed),
      /the successor refused GET \/iserv\/idm\/api\/v1\/groups: its URL or headers are too long \(431\); for the ID filter queries of link bodies lower successor.maxIdBytesPerQuery/,
    );
  });
});
