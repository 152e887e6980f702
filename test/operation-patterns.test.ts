// Operation patterns (src/lib/operation-patterns.ts), shared by migration.modes, deprecation
// headers, recording filters, replay --operations and compare rules: what they match, which one
// is the most specific, and their syntax.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { mostSpecific, OPERATION_PATTERN, patternMatches } from '../src/lib/operation-patterns.js';

describe('operation patterns', () => {
  it('match exact ids, id prefixes ending in .*, and everything with *', () => {
    assert.ok(patternMatches('user.get', 'user.get'));
    assert.ok(!patternMatches('user.get', 'user.getx'));
    assert.ok(patternMatches('user.*', 'user.link.groups.add'));
    assert.ok(!patternMatches('user.*', 'group.get'));
    assert.ok(!patternMatches('user.*', 'user'));
    assert.ok(!patternMatches('user.*', 'username.get'));
    assert.ok(patternMatches('*', 'sso.authenticate'));
    assert.ok(patternMatches('group.link.*', 'group.link.assignedFlags.add'));
  });

  it('pick the most specific: an exact id, then the longer prefix, then *', () => {
    const patterns = ['*', 'user.*', 'user.link.*', 'user.link.groups.add', 'group.*'];
    assert.equal(mostSpecific(patterns, 'user.link.groups.add'), 'user.link.groups.add');
    assert.equal(mostSpecific(patterns, 'user.link.roles.add'), 'user.link.*');
    assert.equal(mostSpecific(patterns, 'user.get'), 'user.*');
    assert.equal(mostSpecific(patterns, 'role.get'), '*');
    assert.equal(mostSpecific(['user.*'], 'role.get'), undefined);
  });

  it('property: an exact id beats every pattern, and the winner always matches', () => {
    const segment = fc.stringMatching(/^[a-z][a-zA-Z]{0,4}$/);
    const id = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));
    const pattern = fc.oneof(
      fc.constant('*'),
      id,
      id.map((p) => `${p}.*`),
    );
    fc.assert(
      fc.property(id, fc.array(pattern, { maxLength: 6 }), (target, patterns) => {
        assert.equal(mostSpecific([...patterns, target], target), target);
        const winner = mostSpecific(patterns, target);
        if (winner === undefined) assert.ok(patterns.every((p) => !patternMatches(p, target)));
        else assert.ok(patternMatches(winner, target));
        for (const p of patterns) assert.ok(OPERATION_PATTERN.test(p), p);
      }),
    );
  });

  it('have a syntax: *, an id, or an id prefix with .* (operation ids have capitals)', () => {
    for (const good of ['*', 'user.get', 'group.*', 'group.link.*', 'group.link.assignedFlags.add']) {
      assert.match(good, OPERATION_PATTERN);
    }
    for (const bad of ['', '*.list', 'user.*.add', 'user.', '.user', 'user get', 'user.**']) {
      assert.doesNotMatch(bad, OPERATION_PATTERN);
    }
  });
});
