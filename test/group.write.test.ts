// Creating, updating and deleting groups through the proxy: 201 with the seed's shape of a new
// group and a Location, PUT answers {name, account}, DELETE 204 (soft delete); bad input of every
// kind is a 400 that changes nothing, protected groups 403, unknown groups 404.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GROUP_FIELDS, groupSchema, groupWritableSchema } from '../src/legacy/group/schema.js';
import { type ErrorBody, onlyReads, snapshot } from './relation-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

type Group = Record<string, unknown>;

describe('group writes', () => {
  let proxy: UserProxy;

  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy?.close();
  });

  describe('create', () => {
    it('answers 201 with the new group as the seed describes it, and its Location', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Group>('POST', '/Entity/Group', { name: 'Fachschaft Mathe' });
      assert.equal(answer.status, 201, answer.text);
      assert.deepEqual(Object.keys(answer.body), [...GROUP_FIELDS]);
      groupSchema.strict().parse(answer.body);
      // The seed: "returned with account set, users, privileges and flags as empty arrays, and the
      // other fields null" — name included; GET below shows the stored name.
      assert.deepEqual(answer.body, {
        name: null,
        account: 'fachschaft.mathe',
        home: null,
        owner: null,
        created: null,
        createdBy: null,
        deleted: null,
        deletedBy: null,
        flags: [],
        users: [],
        privileges: [],
        _id: 'fachschaft.mathe',
      });
      assert.equal(
        answer.headers.get('location'),
        `${proxy.url}/iserv/api/Service/Core/Entity/Group/fachschaft.mathe`,
      );
      assert.deepEqual(proxy.apiCalls(), { 'POST /groups': 1 }, 'one write, the answer is the entity');
      const stored = proxy.sandbox.data.groupByAccount('fachschaft.mathe');
      assert.equal(stored?.name, 'Fachschaft Mathe');

      const read = await fetch(answer.headers.get('location') ?? '', {
        headers: { authorization: proxy.authorization },
      });
      assert.equal(read.status, 200);
      const group = (await read.json()) as Group;
      assert.equal(group.name, 'Fachschaft Mathe');
      assert.match(String(group.created), /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(group.createdBy, 'admin');
    });

    it('derives the account as the successor does (umlauts transliterated)', async () => {
      const answer = await proxy.call<Group>('POST', '/Entity/Group', { name: 'Klasse 9 Übung' });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.account, 'klasse.9.uebung');
      assert.equal(answer.body._id, 'klasse.9.uebung');
    });

    it('refuses bad bodies with 400 and creates nothing', async () => {
      const before = snapshot(proxy);
      for (const body of [
        {},
        { name: '' },
        { name: 5 },
        { name: null },
        { name: 'Zusatz', account: 'zusatz' },
        { name: 'Zusatz', users: [] },
        ['Zusatz'],
        '"Zusatz"',
        '{"name": ',
        '',
      ]) {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>('POST', '/Entity/Group', body);
        assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
        assert.equal(answer.body.code, 400);
        assert.deepEqual(proxy.apiCalls(), {}, `${JSON.stringify(body)}: nothing reaches the successor`);
      }
      const unknown = await proxy.call<ErrorBody>('POST', '/Entity/Group', { name: 'X', owner: 'admin' });
      assert.deepEqual(
        unknown.body.errors?.map((e) => e.path),
        ['body'],
        'zod names the unknown key on the body',
      );
      assert.match(unknown.body.errors?.[0]?.message ?? '', /owner/);
      assert.equal(snapshot(proxy), before);
    });

    it('refuses a name or account that is taken with 400 and the successor reason', async () => {
      const before = snapshot(proxy);
      const taken = await proxy.call<ErrorBody>('POST', '/Entity/Group', { name: 'Lehrer' });
      assert.equal(taken.status, 400, taken.text);
      assert.match(taken.body.message, /rejected/);
      assert.ok(
        taken.body.errors?.some((e) => /already exists/.test(e.message)),
        taken.text,
      );
      const account = await proxy.call<ErrorBody>('POST', '/Entity/Group', { name: 'Thomas Becker' });
      assert.equal(account.status, 400, account.text);
      assert.ok(
        account.body.errors?.some((e) => /already in use/.test(e.message)),
        account.text,
      );
      assert.equal(snapshot(proxy), before);
    });
  });

  describe('update', () => {
    before(async () => {
      assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Chor' })).status, 201);
    });

    it('changes the name and answers exactly {name, account}', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Group>('PUT', '/Entity/Group/chor', { name: 'Schulchor' });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { name: 'Schulchor', account: 'chor' });
      groupWritableSchema.strict().parse(answer.body);
      assert.equal(proxy.sandbox.data.groupByAccount('chor')?.name, 'Schulchor');
      assert.deepEqual(proxy.apiCalls(), { 'PATCH /groups/{id}': 1 }, 'warm cache: one merge patch');
    });

    it('changes the account, which is the legacy ID: the old one is 404 afterwards', async () => {
      const answer = await proxy.call<Group>('PUT', '/Entity/Group/chor', {
        name: 'Schulchor Unterstufe',
        account: 'chor.unterstufe',
      });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { name: 'Schulchor Unterstufe', account: 'chor.unterstufe' });
      assert.equal((await proxy.call('GET', '/Entity/Group/chor')).status, 404);
      const moved = await proxy.call<Group>('GET', '/Entity/Group/chor.unterstufe');
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.body._id, 'chor.unterstufe');
    });

    it('answers the group unchanged for an empty body', async () => {
      const answer = await proxy.call<Group>('PUT', '/Entity/Group/chor.unterstufe', {});
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { name: 'Schulchor Unterstufe', account: 'chor.unterstufe' });
    });

    it('refuses unknown fields, wrong types and malformed JSON with 400 and changes nothing', async () => {
      const before = snapshot(proxy);
      for (const body of [
        { owner: 'admin' },
        { name: 'X', home: '/x' },
        { users: ['admin'] },
        { name: 7 },
        { account: '' },
        { name: null },
        [],
        '{"name": "x"',
      ]) {
        proxy.resetCounts();
        const answer = await proxy.call<ErrorBody>('PUT', '/Entity/Group/chor.unterstufe', body);
        assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
        assert.ok(onlyReads(proxy.apiCalls()), JSON.stringify(proxy.apiCalls()));
      }
      const taken = await proxy.call<ErrorBody>('PUT', '/Entity/Group/chor.unterstufe', {
        account: 'lehrer',
      });
      assert.equal(taken.status, 400, taken.text);
      assert.equal(snapshot(proxy), before);
    });

    it('answers 403 for the protected group and 404 for an unknown one', async () => {
      const before = snapshot(proxy);
      for (const body of [{ name: 'Admins' }, { account: 'admins2' }]) {
        const answer = await proxy.call<ErrorBody>('PUT', '/Entity/Group/admins', body);
        assert.equal(answer.status, 403, answer.text);
        assert.equal(answer.body.code, 403);
        assert.match(answer.body.message, /may not be deleted or updated/);
      }
      const unknown = await proxy.call<ErrorBody>('PUT', '/Entity/Group/no.such.group', { name: 'X' });
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(snapshot(proxy), before);
    });
  });

  describe('delete', () => {
    before(async () => {
      assert.equal((await proxy.call('POST', '/Entity/Group', { name: 'Theater AG' })).status, 201);
      const linked = await proxy.call('POST', '/Entity/Group/theater.ag/link/users', ['thomas.becker']);
      assert.equal(linked.status, 200, linked.text);
    });

    it('answers 204 with no body; the group leaves the list, GET shows deleted and deletedBy', async () => {
      proxy.resetCounts();
      const answer = await proxy.call('DELETE', '/Entity/Group/theater.ag');
      assert.equal(answer.status, 204, answer.text);
      assert.equal(answer.text, '');
      assert.deepEqual(proxy.apiCalls(), { 'DELETE /groups/{id}': 1 });
      const read = await proxy.call<Group>('GET', '/Entity/Group/theater.ag');
      assert.equal(read.status, 200, read.text);
      groupSchema.strict().parse(read.body);
      assert.equal(read.body.deleted, new Date().toISOString().slice(0, 10));
      assert.equal(read.body.deletedBy, 'admin');
      assert.deepEqual(read.body.users, ['thomas.becker'], 'a soft-deleted group keeps its links');
      const list = await proxy.call<Group[]>('GET', '/Entity/Group');
      assert.ok(!list.body.some((g) => g._id === 'theater.ag'));
    });

    it('accepts a PUT of the deleted group, as the successor does (no group restore, so no refusal: docs/mappings.md)', async () => {
      proxy.resetCounts();
      const answer = await proxy.call<Group>('PUT', '/Entity/Group/theater.ag', { name: 'Theater AG (alt)' });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { name: 'Theater AG (alt)', account: 'theater.ag' });
      assert.deepEqual(proxy.apiCalls(), { 'PATCH /groups/{id}': 1 }, 'no read before it');
      const read = await proxy.call<Group>('GET', '/Entity/Group/theater.ag');
      assert.equal(read.body.name, 'Theater AG (alt)');
      assert.equal(read.body.deleted, new Date().toISOString().slice(0, 10), 'still deleted');
    });

    it('answers 403 for the protected group and 404 for an unknown one, deleting nothing', async () => {
      const before = snapshot(proxy);
      const protectedGroup = await proxy.call<ErrorBody>('DELETE', '/Entity/Group/admins');
      assert.equal(protectedGroup.status, 403, protectedGroup.text);
      assert.match(protectedGroup.body.message, /may not be deleted or updated/);
      assert.equal(proxy.sandbox.data.groupByAccount('admins')?.deleted, null);
      const unknown = await proxy.call<ErrorBody>('DELETE', '/Entity/Group/no.such.group');
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(snapshot(proxy), before);
    });
  });
});
