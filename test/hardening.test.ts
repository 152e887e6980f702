// Hostile and careless input against the real proxy on the real sandbox over HTTP: bodies on
// operations that take none, oversized input quoted in messages, successor attribute names in
// error paths, writes to soft-deleted users, and internals in 5xx bodies.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ErrorBody, snapshot } from './relation-helpers.js';
import { startUserProxy, type UserProxy } from './user-helpers.js';

describe('hardening', () => {
  let proxy: UserProxy;
  before(async () => {
    proxy = await startUserProxy();
  });
  after(async () => {
    await proxy.close();
  });

  describe('operations without a body', () => {
    const operations: [method: string, path: string][] = [
      ['DELETE', '/Entity/User/lena.mueller'],
      ['POST', '/User/ben.krause/restore'],
      ['POST', '/User/lena.mueller/password/reset'],
      ['POST', '/User/lena.mueller/adminpassword/reset'],
      ['POST', '/User/lena.mueller/adminpassword/revoke'],
      ['DELETE', '/Entity/Group/ag.robotik'],
      ['DELETE', '/Entity/Role/ROLE_STAFF'],
    ];
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const bodies: [label: string, body: string][] = [
      ['malformed JSON', '{"a": '],
      ['10,000-deep JSON', deep],
      ['an empty object', '{}'],
      ['plain text', 'hello'],
    ];

    for (const [method, path] of operations) {
      it(`${method} ${path} refuses a body with 400 and changes nothing`, async () => {
        const before = snapshot(proxy);
        for (const [label, body] of bodies) {
          proxy.resetCounts();
          const init: RequestInit = {
            method,
            headers: { authorization: proxy.authorization, 'content-type': 'application/json' },
            body,
          };
          const response = await fetch(`${proxy.core}${path}`, init);
          const answer = (await response.json()) as ErrorBody;
          assert.equal(response.status, 400, `${label}: ${JSON.stringify(answer)}`);
          assert.equal(answer.code, 400);
          assert.match(answer.message, /takes no request body/);
          assert.deepEqual(proxy.apiCalls(), {}, `${label}: nothing reaches the successor`);
        }
        assert.equal(snapshot(proxy), before);
      });
    }

    it('still runs with an empty or blank body', async () => {
      const empty = await proxy.call('POST', '/User/lena.mueller/adminpassword/revoke', '');
      assert.equal(empty.status, 204, empty.text);
      const blank = await proxy.call('POST', '/User/lena.mueller/adminpassword/revoke', ' \r\n');
      assert.equal(blank.status, 204, blank.text);
    });
  });
});
