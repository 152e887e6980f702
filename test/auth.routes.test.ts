// The shared security cases over every legacy route, from one table: no credentials, wrong
// password, unknown user → 401; right password from outside the ranges → 403; under every namespace.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LEGACY_OPERATIONS } from '../src/legacy/operations.js';
import { type AuthHarness, call, closeSharedSandbox, startHarness } from './auth-helpers.js';

after(closeSharedSandbox);

const NAMESPACES = ['Service', 'IServ'];

describe('every legacy route is protected', () => {
  let h: AuthHarness;
  let outsidePassword = '';
  let insidePassword = '';

  before(async () => {
    h = await startHarness({
      // Many deliberate failures from one address: raise the thresholds so none of them is a 429.
      config: {
        legacy: { namespaces: NAMESPACES },
        auth: {
          throttle: { pairFreeFailures: 10_000, userFreeFailures: 10_000, addressFreeFailures: 10_000 },
        },
      },
    });
    insidePassword = await h.addUser('inside', ['127.0.0.0/8']);
    outsidePassword = await h.addUser('outside', ['192.0.2.0/24', '2001:db8::/32']);
  });
  after(() => h?.close());

  const cases: { name: string; user?: string; password?: () => string; status: number }[] = [
    { name: 'no credentials', status: 401 },
    { name: 'wrong password', user: 'inside', password: () => 'wrong', status: 401 },
    { name: 'unknown user', user: 'nobody', password: () => insidePassword, status: 401 },
    { name: 'address outside the ranges', user: 'outside', password: () => outsidePassword, status: 403 },
  ];

  it('has operations to check', () => {
    assert.ok(LEGACY_OPERATIONS.length > 0);
  });

  for (const operation of LEGACY_OPERATIONS) {
    const path = operation.path.replace(/\{[^}]+\}/g, 'some-id');
    it(`${operation.method.toUpperCase()} ${operation.path} (${operation.id})`, async () => {
      for (const namespace of NAMESPACES) {
        for (const testCase of cases) {
          const response = await call(`${h.url}/iserv/api/${namespace}${path}`, {
            method: operation.method.toUpperCase(),
            ...(testCase.user === undefined ? {} : { user: testCase.user, password: testCase.password?.() }),
            ...(operation.body?.kind === 'json'
              ? { headers: { 'content-type': 'application/json' }, body: '[]' }
              : {}),
          });
          assert.equal(response.status, testCase.status, `${namespace}: ${testCase.name}`);
          assert.deepEqual(Object.keys(response.body as object).sort(), ['code', 'message']);
          if (testCase.status === 401) assert.ok(response.headers.get('www-authenticate'));
        }
      }
    });
  }
});
