import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeUuid, uuidToBase58 } from '../src/lib/uuid.js';
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

test('a base58 UUID decodes to its 16 bytes: padded with 1s as Symfony writes it too, and never from a word too short', () => {
  // `Mississippihappyday` and most base58 UUIDs cut short were taken for UUIDs with zeros in
  // front; Symfony's form, padded to 22 characters, was refused when it decoded to 17 bytes.
  for (const uuid of [
    '01ffffff-ffff-4fff-bfff-ffffffffffff',
    '00000000-0000-0000-0000-000000000001',
    'b937d751-3482-56ca-9672-45c1d32c11a2',
  ]) {
    const short = uuidToBase58(uuid);
    assert.equal(normalizeUuid(short), uuid);
    assert.equal(normalizeUuid(short.padStart(22, '1')), uuid);
  }
  assert.equal(normalizeUuid('Mississippihappyday'), undefined);
  assert.equal(normalizeUuid(uuidToBase58('b937d751-3482-56ca-9672-45c1d32c11a2').slice(0, 20)), undefined);
});
