// Which legacy field a successor's violation names (legacyViolations): the field table's writable
// fields first, then the attribute a step's body fills from one legacy body field, else `body`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompiledOperation, CompiledStep } from '../src/mapping/compile.js';
import { legacyViolations } from '../src/mapping/fields.js';
import { loadProfile } from '../src/mapping/load.js';
import { compileJsonTemplate } from '../src/mapping/template.js';
import { UpstreamError } from '../src/successor/errors.js';
import { DEFAULT_PROFILE } from './user-helpers.js';

const profile = loadProfile(DEFAULT_PROFILE);

function refused(...paths: string[]): UpstreamError {
  return new UpstreamError('validation', 'refused', {
    violations: paths.map((path) => ({ path, message: `${path} is wrong` })),
  });
}

function operation(id: string): CompiledOperation {
  const found = profile.operations.get(id);
  assert.ok(found, id);
  return found;
}

describe('successor violations with legacy paths', () => {
  it('a writable field by its attribute, a list field with its index', () => {
    const answer = legacyViolations(operation('user.create'), refused('user', 'firstname', 'groups[2]'));
    assert.deepEqual(
      answer?.map((problem) => problem.path),
      ['body.username', 'body.firstname', 'body'],
    );
  });

  it('an attribute the step fills from a body field: the password operations', () => {
    for (const id of ['user.password.set', 'user.adminpassword.set']) {
      const answer = legacyViolations(operation(id), refused('password'));
      assert.deepEqual(answer, [{ path: 'body.password', message: 'password is wrong' }], id);
    }
  });

  it("a role's technical key, derived from its name with filters and text: the name", () => {
    const answer = legacyViolations(operation('role.create'), refused('role', 'name'));
    assert.deepEqual(
      answer?.map((problem) => problem.path),
      ['body.name', 'body.name'],
    );
  });

  it('an attribute filled from two fields, from no field, or no step writes at all: body', () => {
    const check = () => undefined;
    const step = {
      body: compileJsonTemplate(
        { both: '{body.a} {body.b}', fixed: 'literal', one: '{body.a|upper}' },
        check,
      ),
    } as CompiledStep;
    const synthetic = { resource: undefined, steps: [step] };
    assert.deepEqual(
      legacyViolations(synthetic, refused('both', 'fixed', 'one', 'unknown'))?.map((problem) => problem.path),
      ['body', 'body', 'body.a', 'body'],
    );
    assert.deepEqual(
      legacyViolations(undefined, refused('password'))?.map((problem) => problem.path),
      ['body'],
    );
  });

  it('no violations: undefined', () => {
    assert.equal(legacyViolations(operation('user.create'), refused()), undefined);
  });
});
