import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uuidToBase58 } from '../src/lib/uuid.js';
import { iriToUuid, uuidToIri } from '../src/successor/ids.js';

// The pair the IDM API reference gives as an example.
const DASHED = 'd7dcc25b-0303-43b2-b350-e400338ea223';
const BASE58 = 'Tf2SqStTdCxSvcojmbemmL';

test('base58 and dashed forms of the reference UUID correspond', () => {
  assert.equal(uuidToBase58(DASHED), BASE58);
});

test('iriToUuid takes the last path segment, base58 or dashed, and emits dashed lower case', () => {
  assert.equal(iriToUuid(`/iserv/idm/api/v1/users/${BASE58}`), DASHED);
  assert.equal(iriToUuid(`/iserv/idm/api/v1/users/${DASHED.toUpperCase()}`), DASHED);
  assert.equal(iriToUuid(`https://school.example/iserv/idm/api/v1/groups/${DASHED}?x=1#frag`), DASHED);
  assert.equal(iriToUuid(`/iserv/idm/api/v1/groups/${BASE58}/`), DASHED);
  assert.equal(iriToUuid(BASE58), DASHED);
  assert.equal(iriToUuid('/iserv/idm/api/v1/users/alice'), undefined);
  assert.equal(iriToUuid('/iserv/idm/api/v1/users/%E0%A4%A'), undefined);
  assert.equal(iriToUuid(''), undefined);
});

test('uuidToIri builds a dashed IRI from either form', () => {
  assert.equal(uuidToIri('/iserv/idm/api/v1/users', BASE58), `/iserv/idm/api/v1/users/${DASHED}`);
  assert.equal(uuidToIri('/iserv/idm/api/v1/users/', DASHED), `/iserv/idm/api/v1/users/${DASHED}`);
  assert.throws(() => uuidToIri('/iserv/idm/api/v1/users', 'alice'), TypeError);
});
