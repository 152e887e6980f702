// The compare engine and its rules: JSON path syntax, the rules file (validation, default plus
// the most specific operation entry), normalisation, unordered arrays, pairing of two
// recordings, the per-operation report — with properties (an exchange always matches itself;
// ignore rules never add mismatches; normalisation never adds mismatches).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LEGACY_OPERATIONS } from '../src/legacy/operations.js';
import { REDACTED } from '../src/lib/redact.js';
import {
  compareAnswers,
  compareExchanges,
  compareRecordings,
  normaliseBody,
  pairExchanges,
  ReportBuilder,
} from '../src/migration/compare.js';
import {
  CompareRulesError,
  EXACT_RULES,
  loadCompareRules,
  parseCompareRules,
  type ResolvedRule,
} from '../src/migration/compare-rules.js';
import { renderHtmlReport } from '../src/migration/html-report.js';
import { compilePath, formatPath, generalisePath, JsonPathError } from '../src/migration/json-path.js';
import { MAX_BODY_DEPTH, type RecordedExchange } from '../src/migration/recording.js';
import { compareReportSchema } from '../src/migration/report.js';
import { formatRate, reportTable } from '../src/migration/report-text.js';
import { runCliCaptured, spawnCli } from './cli-helpers.js';
import { tempDir } from './temp-dir.js';

function exchange(over: Partial<RecordedExchange> = {}): RecordedExchange {
  return {
    time: '2026-03-02T08:00:00.000Z',
    requestId: 'req-1',
    apiUser: 'untis',
    operation: 'user.get',
    mode: 'replay',
    method: 'GET',
    path: '/Service/Core/Entity/User/ada.l',
    query: '',
    requestBody: null,
    status: 200,
    responseBody: null,
    durationMs: 1,
    ...over,
  };
}

const exact: ResolvedRule = EXACT_RULES.forOperation('x');
const rule = (file: unknown, operation = 'user.get') =>
  parseCompareRules(file, 'rules.json').forOperation(operation);
const paths = (a: unknown, b: unknown, r: ResolvedRule = exact) => {
  const result = compareAnswers({ status: 200, body: a }, { status: 200, body: b }, r);
  return result.match ? [] : result.differences.map((d) => d.path);
};

describe('compared data that holds a secret-like word', () => {
  it('is compared, not redacted away: Tokens=3 and Tokens=5 differ', () => {
    // Redacted on both sides, they compared equal (and shadow mode counted the pair matched).
    assert.deepEqual(paths({ auxInfo: 'Tokens=3 per student' }, { auxInfo: 'Tokens=5 per student' }), [
      '$.auxInfo',
    ]);
    assert.deepEqual(paths({ auxInfo: 'Secretary=Mrs Smith' }, { auxInfo: 'Secretary=Mr Smith' }), [
      '$.auxInfo',
    ]);
  });
});

describe('JSON paths', () => {
  it('matches members, indices, wildcards and any depth', () => {
    const m = (p: string, keys: (string | number)[]) => compilePath(p).matches(keys);
    assert.ok(m('$', []));
    assert.ok(m('$.lastlogin', ['lastlogin']));
    assert.ok(!m('$.lastlogin', ['x', 'lastlogin']));
    assert.ok(m('$[*].lastlogin', [3, 'lastlogin']));
    assert.ok(!m('$[*].lastlogin', ['a', 'lastlogin']));
    assert.ok(m('$.errors[*].message', ['errors', 0, 'message']));
    assert.ok(m('$.errors[1].message', ['errors', 1, 'message']));
    assert.ok(!m('$.errors[1].message', ['errors', 0, 'message']));
    assert.ok(m('$.*.x', ['any', 'x']));
    assert.ok(m('$..lastlogin', ['lastlogin']));
    assert.ok(m('$..lastlogin', [4, 'deep', 'lastlogin']));
    assert.ok(m('$..[*]', ['roles', 2]));
    assert.ok(m('$["odd key"].x', ['odd key', 'x']));
    assert.ok(m('$.a-b', ['a-b']));
  });

  it('property: matches as trying every way to spread the .. over the keys does', () => {
    // The definition, by backtracking (exponential in the number of ..): each `..` takes zero or more keys.
    type Token = { descend: boolean; test: (key: string | number) => boolean; text: string };
    const tokens: Token[] = [
      { descend: false, test: (k) => k === 'a', text: '.a' },
      { descend: false, test: (k) => typeof k === 'string', text: '.*' },
      { descend: false, test: (k) => k === 0, text: '[0]' },
      { descend: false, test: (k) => typeof k === 'number', text: '[*]' },
      { descend: true, test: (k) => k === 'a', text: '..a' },
      { descend: true, test: (k) => typeof k === 'number', text: '..[*]' },
      { descend: true, test: (k) => typeof k === 'string', text: '..*' },
    ];
    const defined = (ts: readonly Token[], keys: readonly (string | number)[]): boolean => {
      const [t, ...rest] = ts;
      if (t === undefined) return keys.length === 0;
      const from = t.descend ? keys.map((_, skip) => skip) : [0];
      return from.some((skip) => {
        const key = keys[skip];
        return key !== undefined && t.test(key) && defined(rest, keys.slice(skip + 1));
      });
    };
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...tokens), { maxLength: 6 }),
        fc.array(fc.constantFrom<string | number>('a', 'b', 0, 1), { maxLength: 8 }),
        (ts, keys) => {
          const source = `$${ts.map((t) => t.text).join('')}`;
          assert.equal(
            compilePath(source).matches(keys),
            defined(ts, keys),
            `${source} ${JSON.stringify(keys)}`,
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('matches in time polynomial in the number of .. (a rule file cannot stall compare)', () => {
    // 12 `..a` then `..z` against a 27-level body: trying every way to spread the .. over the
    // levels took seconds and doubled with every level; the whole comparison now takes a blink.
    const r = rule({ default: { ignore: [`$${'..a'.repeat(12)}..z`] } });
    let body: unknown = 1;
    for (let i = 0; i < 27; i += 1) body = { a: body };
    const started = performance.now();
    assert.deepEqual(compareAnswers({ status: 200, body }, { status: 200, body: structuredClone(body) }, r), {
      match: true,
    });
    assert.ok(!compilePath(`$${'..a'.repeat(12)}..z`).matches(Array.from({ length: 27 }, () => 'a')));
    assert.ok(
      compilePath(`$${'..a'.repeat(12)}..z`).matches([...Array.from({ length: 27 }, () => 'a'), 'z']),
    );
    const took = performance.now() - started;
    assert.ok(took < 250, `${took.toFixed(0)} ms`);
  });

  it('rejects bad syntax with the position', () => {
    for (const bad of ['lastlogin', '$.', '$[x]', '$..', '$["open', '$ .a']) {
      assert.throws(() => compilePath(bad), JsonPathError, bad);
    }
  });

  it('formats concrete paths and generalises indices', () => {
    assert.equal(formatPath([]), '$');
    assert.equal(formatPath([12, 'firstname']), '$[12].firstname');
    assert.equal(formatPath(['odd key', 0]), '$["odd key"][0]');
    assert.equal(generalisePath(['users', 3, 'roles', 0]), '$.users[*].roles[*]');
    // A direction control is escaped as JSON.stringify escapes a line break: printed raw, it
    // reorders the terminal line of the report it is on. The path still reads back.
    assert.equal(formatPath(['\u202eabc', 'x\u2028y']), '$["\\u202eabc"]["x\\u2028y"]');
    assert.equal(
      formatPath(['g\u061ch']),
      '$["g\\u061ch"]',
      'the Arabic letter mark is a direction control too',
    );
    assert.equal(compilePath(formatPath(['\u202eabc'])).source, '$["\\u202eabc"]');
  });

  it('property: a formatted path matches itself and its generalisation matches it', () => {
    const key = fc.oneof(fc.nat({ max: 20 }), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(key, { maxLength: 5 }), (keys) => {
        assert.ok(compilePath(formatPath(keys)).matches(keys));
        assert.ok(compilePath(generalisePath(keys)).matches(keys));
      }),
    );
  });
});

describe('compare rules', () => {
  it('the shipped default rules load', () => {
    const rules = loadCompareRules();
    assert.ok(rules.forOperation('user.get').ignore.some((p) => p.source === '$..lastlogin'));
    assert.equal(rules.forOperation('user.list').unorderedArrays === true, false);
  });

  it('an operation gets the default plus its most specific entry', () => {
    const rules = parseCompareRules(
      {
        default: { ignore: ['$.a'], unorderedArrays: ['$.x'], normalise: { trimTrailingWhitespace: true } },
        operations: {
          '*': { ignore: ['$.star'] },
          'user.*': { ignore: ['$.b'], normalise: { trimTrailingWhitespace: false, datesToDay: true } },
          'user.get': { ignore: ['$.c'], unorderedArrays: true },
        },
      },
      'rules.json',
    );
    const get = rules.forOperation('user.get');
    assert.deepEqual(
      get.ignore.map((p) => p.source),
      ['$.a', '$.c'],
    );
    assert.equal(get.unorderedArrays, true);
    const list = rules.forOperation('user.list');
    assert.deepEqual(
      list.ignore.map((p) => p.source),
      ['$.a', '$.b'],
    );
    assert.deepEqual(list.normalise, {
      idsCaseInsensitive: false,
      datesToDay: true,
      dateTimesToUtc: false,
      trimTrailingWhitespace: false,
    });
    assert.deepEqual(
      rules.forOperation('group.get').ignore.map((p) => p.source),
      ['$.a', '$.star'],
    );
  });

  it('names every problem of an invalid file with its JSON path', () => {
    const error = (() => {
      try {
        parseCompareRules(
          {
            default: { ignore: ['lastlogin'], normalise: { lowercase: true } },
            operations: { 'user.get': { unorderedArrays: 'yes' }, '*.list': {} },
            extra: 1,
          },
          'rules.json',
        );
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(error instanceof CompareRulesError);
    assert.match(error.message, /rules\.json \$\.default\.ignore\[0\]: must start with \$/);
    assert.match(error.message, /rules\.json \$\.default\.normalise: .*lowercase/);
    assert.match(error.message, /rules\.json \$\.operations\.user\.get\.unorderedArrays/);
    assert.match(error.message, /extra/);
    assert.match(
      error.message,
      /rules\.json \$\.operations\.\*\.list: must be an operation id such as user\.list/,
    );
  });

  it('refuses an operation entry that names or matches no legacy operation, naming the closest ones', () => {
    const ids = LEGACY_OPERATIONS.map((operation) => operation.id);
    const file = {
      operations: { 'user.lsit': { ignore: ['$.x'] }, 'grup.*': {}, 'user.list': {}, 'group.*': {}, '*': {} },
    };
    assert.throws(
      () => parseCompareRules(file, 'rules.json', ids),
      (error: unknown) =>
        error instanceof CompareRulesError &&
        error.message ===
          [
            'rules.json $.operations.user.lsit: no legacy operation is named "user.lsit"; closest: user.list, user.get, user.create',
            'rules.json $.operations.grup.*: no legacy operation is matched by "grup.*"; closest: group.*, user.*, role.*',
          ].join('\n'),
    );
    // Without the ids (this folder cannot import the routes) the names are not checked.
    assert.ok(parseCompareRules(file, 'rules.json'));
    assert.ok(loadCompareRules(undefined, ids), 'the shipped rules name only real operations');
  });

  it('compare --rules refuses a rules file naming an unknown operation (exit 2)', async () => {
    const dir = tempDir('rules');
    const rules = path.join(dir, 'typo.json');
    writeFileSync(rules, JSON.stringify({ operations: { 'user.lsit': { unorderedArrays: ['$'] } } }));
    const a = path.join(dir, 'a.ndjson');
    writeFileSync(a, `${JSON.stringify(exchange())}\n`);
    const run = await runCliCaptured(['compare', a, a, '--rules', rules]);
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      `error: ${rules} $.operations.user.lsit: no legacy operation is named "user.lsit"; closest: user.list, user.get, user.create\n`,
    );
    assert.equal(run.stdout, '');
  });

  it('a missing or broken file is a CompareRulesError', () => {
    const dir = tempDir('rules');
    assert.throws(() => loadCompareRules(path.join(dir, 'none.json')), /cannot read .*ENOENT/);
    writeFileSync(path.join(dir, 'bad.json'), '{');
    assert.throws(() => loadCompareRules(path.join(dir, 'bad.json')), /bad\.json: not valid JSON/);
    // Windows-1252: its `ü` was read as U+FFFD, a path that matched nothing.
    writeFileSync(
      path.join(dir, 'latin1.json'),
      Buffer.from('{"default": {"ignore": ["$.m\u00fcller"]}}', 'latin1'),
    );
    assert.throws(
      () => loadCompareRules(path.join(dir, 'latin1.json')),
      /latin1\.json: the file is not UTF-8 \(line 1 holds other bytes/,
    );
    // Parsed into an object, a "__proto__" entry was dropped: accepted, and applied to nothing.
    writeFileSync(path.join(dir, 'proto.json'), '{"operations": {"__proto__": {"ignore": ["$.username"]}}}');
    assert.throws(
      () =>
        loadCompareRules(
          path.join(dir, 'proto.json'),
          LEGACY_OPERATIONS.map((operation) => operation.id),
        ),
      /proto\.json: the key "__proto__" in \$\.operations names nothing/,
    );
  });
});

describe('compare', () => {
  it('reports a different status alone, and differing values with both sides', () => {
    const result = compareAnswers(
      { status: 200, body: { a: 1 } },
      { status: 404, body: { code: 404 } },
      exact,
    );
    assert.deepEqual(result, {
      match: false,
      differences: [{ path: 'status', a: 200, b: 404 }],
      paths: ['status'],
    });
    const values = compareAnswers(
      { status: 200, body: { a: 1, list: [1, 2], gone: true } },
      { status: 200, body: { a: 2, list: [1, 2, 3], extra: null } },
      exact,
    );
    assert.deepEqual(values, {
      match: false,
      differences: [
        { path: '$.a', a: 1, b: 2 },
        { path: '$.list[2]', b: 3 },
        { path: '$.gone', a: true },
        { path: '$.extra', b: null },
      ],
      paths: ['$.a', '$.list[*]', '$.gone', '$.extra'],
    });
  });

  it('compares a member named __proto__ as any other member, also after normalisation', () => {
    // Dropped by the copies (redaction, normalisation): two different values compared equal.
    const a = JSON.parse('{"__proto__":{"admin":true},"x":1}');
    const b = JSON.parse('{"__proto__":{"admin":false},"x":1}');
    assert.deepEqual(paths(a, b), ['$.__proto__.admin']);
    assert.deepEqual(paths(JSON.parse('{"__proto__":1}'), {}), ['$.__proto__']);
    const all = {
      idsCaseInsensitive: true,
      datesToDay: true,
      dateTimesToUtc: true,
      trimTrailingWhitespace: true,
    };
    const normalised = normaliseBody(a, all);
    assert.equal(JSON.stringify(normalised), '{"__proto__":{"admin":true},"x":1}');
    assert.equal(Object.getPrototypeOf(normalised), Object.prototype);
  });

  it('never shows a secret in a difference', () => {
    const result = compareAnswers(
      { status: 200, body: { password: 'TempA-123', note: 'Bearer abc.def' } },
      { status: 200, body: { password: 'TempB-456', note: 'plain' } },
      exact,
    );
    assert.ok(!JSON.stringify(result).includes('TempA-123'));
    assert.ok(!JSON.stringify(result).includes('abc.def'));
    assert.deepEqual(result.match ? [] : result.differences, [{ path: '$.note', a: REDACTED, b: 'plain' }]);
  });

  it('tells names that begin with Basic or Bearer apart: they are data, not credentials', () => {
    const different = compareAnswers(
      { status: 200, body: { name: 'Basic English', description: 'Bearer Foundation' } },
      { status: 200, body: { name: 'Basic Maths', description: 'Bearer Trust' } },
      exact,
    );
    assert.deepEqual(different.match ? [] : different.differences, [
      { path: '$.name', a: 'Basic English', b: 'Basic Maths' },
      { path: '$.description', a: 'Bearer Foundation', b: 'Bearer Trust' },
    ]);
    // Credentials stay redacted, also inside a sentence.
    const basic = `Basic ${Buffer.from('untis:S3cret-pw').toString('base64')}`;
    const secret = compareAnswers(
      { status: 200, body: { message: `refused: ${basic}`, note: 'Bearer abcdefghijklmnopqrstuvwxyz' } },
      { status: 200, body: { message: 'refused', note: 'plain' } },
      exact,
    );
    assert.ok(!JSON.stringify(secret).includes(basic.slice(6)));
    assert.ok(!JSON.stringify(secret).includes('abcdefghijklmnopqrstuvwxyz'));
    assert.deepEqual(secret.match ? [] : secret.differences, [
      { path: '$.message', a: `refused: ${REDACTED}`, b: 'refused' },
      { path: '$.note', a: REDACTED, b: 'plain' },
    ]);
  });

  it('ignores the paths its rule names', () => {
    const r = rule({ default: { ignore: ['$..lastlogin', '$.errors[*].message'] } });
    assert.deepEqual(
      paths(
        [{ lastlogin: '2026-01-01T00:00:00Z', errors: [{ message: 'a' }] }, { x: 1 }],
        [{ lastlogin: null, errors: [{ message: 'b' }] }, { x: 1 }],
        r,
      ),
      ['$[0].errors[0].message'],
      '$[0].errors is not $.errors',
    );
    assert.deepEqual(
      paths(
        { lastlogin: 'x', errors: [{ message: 'a', path: 'p' }] },
        { errors: [{ message: 'b', path: 'q' }] },
        r,
      ),
      ['$.errors[0].path'],
    );
  });

  it('compares unordered arrays as multisets; objects with _id line up by it', () => {
    const r = rule({ default: { unorderedArrays: ['$..roles', '$'] } });
    assert.deepEqual(paths({ roles: ['b', 'a'], other: [1, 2] }, { roles: ['a', 'b'], other: [2, 1] }, r), [
      '$.other[0]',
      '$.other[1]',
    ]);
    assert.deepEqual(
      paths(
        [
          { _id: 'b', name: 'B' },
          { _id: 'a', name: 'A' },
        ],
        [
          { _id: 'a', name: 'A' },
          { _id: 'b', name: 'Bee' },
        ],
        r,
      ),
      ['$[0].name'],
      "at b's index in A, not in the sorted ids",
    );
    // One extra entity is one difference, not a shift of every entity after it.
    assert.deepEqual(
      paths(
        [{ _id: 'a' }, { _id: 'b', name: 'B' }, { _id: 'c', name: 'C' }],
        [{ _id: 'a' }, { _id: 'c', name: 'C' }],
        r,
      ),
      ['$[1]'],
    );
    assert.deepEqual(paths([1, 1, 2], [1, 2, 2], rule({ default: { unorderedArrays: true } })).length, 1);
  });

  it("reports a difference in a list paired by _id at the item's index in A's answer", () => {
    // The index was the item's place among the sorted ids: the first user, zoe, was `$[2]`.
    const r = rule({ default: { unorderedArrays: ['$', '$[*].members'] } });
    const a = [
      { _id: 'zoe', firstname: 'Zoe' },
      { _id: 'ada', firstname: 'Ada' },
      { _id: 'max', firstname: 'Max', members: [{ _id: 'y', n: 1 }, { _id: 'x' }] },
    ];
    const b = [
      { _id: 'ada', firstname: 'Ada' },
      { _id: 'max', firstname: 'Max', members: [{ _id: 'x' }, { _id: 'y', n: 2 }] },
      { _id: 'zoe', firstname: 'Zoë' },
    ];
    const result = compareAnswers({ status: 200, body: a }, { status: 200, body: b }, r);
    assert.deepEqual(result.match ? [] : result.differences, [
      { path: '$[0].firstname', a: 'Zoe', b: 'Zoë' },
      { path: '$[2].members[0].n', a: 1, b: 2 },
    ]);
    // An item only A has stays at its index; one only B has comes after A's items, in B's order.
    assert.deepEqual(
      paths([{ _id: 'zoe' }, { _id: 'ada' }], [{ _id: 'new2' }, { _id: 'ada' }, { _id: 'new1' }], r),
      ['$[0]', '$[2]', '$[3]'],
    );
    const extra = compareAnswers(
      { status: 200, body: [{ _id: 'zoe' }] },
      { status: 200, body: [{ _id: 'new' }, { _id: 'zoe' }] },
      r,
    );
    assert.deepEqual(extra.match ? [] : extra.differences, [{ path: '$[1]', b: { _id: 'new' } }]);
  });

  it("reports a difference in an unordered list without _ids (or with repeated ones) at the item's index in A's answer", () => {
    const r = rule({ default: { unorderedArrays: ['$.flags', '$.members'] } });
    // Items without _id were reported at their place in the sorted order: 'zeta' at $.flags[2].
    const flags = compareAnswers(
      { status: 200, body: { flags: ['zeta', 'alpha', 'beta'] } },
      { status: 200, body: { flags: ['beta', 'alpha', 'zet'] } },
      r,
    );
    assert.deepEqual(
      flags.match ? [] : flags.differences.map((difference) => difference.path),
      ['$.flags[0]'],
      JSON.stringify(flags),
    );
    // The same entities twice (a successor that repeats one), in another order: the same answer.
    // Sorted by _id alone, equal ids kept their order and were compared crosswise.
    const twice = [
      { _id: 'ada', seen: 1 },
      { _id: 'ada', seen: 2 },
    ];
    const repeated = compareAnswers(
      { status: 200, body: { members: twice } },
      { status: 200, body: { members: [...twice].reverse() } },
      r,
    );
    assert.equal(repeated.match, true, JSON.stringify(repeated));
    // As multisets: the items both have are matched, and one odd item is one difference (paired
    // by sorted position, ROLE_C was reported as differing, and every item after an odd one).
    const roles = compareAnswers(
      { status: 200, body: { flags: ['ROLE_C', 'ROLE_B', 'ROLE_A'] } },
      { status: 200, body: { flags: ['ROLE_A', 'ROLE_C', 'ROLE_X'] } },
      r,
    );
    assert.deepEqual(roles.match ? [] : roles.differences, [
      { path: '$.flags[1]', a: 'ROLE_B', b: 'ROLE_X' },
    ]);
    // Repeated _ids told apart by an ignored field only: the same answer.
    const ignoring = rule({ default: { unorderedArrays: ['$.members'], ignore: ['$..seen'] } });
    const seenA = [
      { _id: 'ada', seen: '2026', v: 1 },
      { _id: 'ada', seen: '2025', v: 2 },
    ];
    const seenB = [
      { _id: 'ada', seen: '2024', v: 1 },
      { _id: 'ada', seen: '2027', v: 2 },
    ];
    // Left over after the equal items, items of one _id pair with each other first: b's odd item
    // is b's difference, and a is missing (they were paired across ids by sorted position).
    const grouped = compareAnswers(
      {
        status: 200,
        body: {
          members: [
            { _id: 'a', v: 1 },
            { _id: 'b', v: 1 },
            { _id: 'b', v: 2 },
          ],
        },
      },
      {
        status: 200,
        body: {
          members: [
            { _id: 'b', v: 3 },
            { _id: 'b', v: 2 },
          ],
        },
      },
      r,
    );
    assert.deepEqual(grouped.match ? [] : grouped.differences, [
      { path: '$.members[1].v', a: 1, b: 3 },
      { path: '$.members[0]', a: { _id: 'a', v: 1 } },
    ]);
    // A long list with nothing in common: it overflowed the stack (RangeError) while pairing.
    const many = 200_000;
    const disjoint = compareAnswers(
      { status: 200, body: { flags: Array.from({ length: many }, (_, i) => `a${i}`) } },
      { status: 200, body: { flags: Array.from({ length: many }, (_, i) => `b${i}`) } },
      r,
    );
    assert.equal(disjoint.match ? 0 : disjoint.differences.length, many);
    const ignored = compareAnswers(
      { status: 200, body: { members: seenA } },
      { status: 200, body: { members: seenB } },
      ignoring,
    );
    assert.equal(ignored.match, true, JSON.stringify(ignored));
  });

  it('normalises IDs, date-times and trailing whitespace only when asked', () => {
    const a = {
      _id: 'Ada.L',
      roles: ['ROLE_ADMIN'],
      username: 'Ada.L',
      lastlogin: '2026-03-02T09:14:00+01:00',
      firstname: 'Ada  ',
    };
    const b = {
      _id: 'ada.l',
      roles: ['role_admin'],
      username: 'ada.l',
      lastlogin: '2026-03-02T08:14:00.000Z',
      firstname: 'Ada',
    };
    assert.deepEqual(paths(a, b), ['$._id', '$.roles[0]', '$.username', '$.lastlogin', '$.firstname']);
    const all = rule({
      default: {
        normalise: { idsCaseInsensitive: true, dateTimesToUtc: true, trimTrailingWhitespace: true },
      },
    });
    // username is not an ID field: its case still counts.
    assert.deepEqual(paths(a, b, all), ['$.username']);
    const day = rule({ default: { normalise: { datesToDay: true, dateTimesToUtc: true } } });
    assert.deepEqual(paths({ t: '2026-03-02T09:14:00+01:00' }, { t: '2026-03-02T23:59:59Z' }, day), []);
    assert.deepEqual(paths({ t: '2026-03-02T09:14:00+01:00' }, { t: '2026-03-03T00:00:00Z' }, day), ['$.t']);
  });

  it('compares a date-time that names no real instant, or one finer than milliseconds, as written', () => {
    const utc = rule({ default: { normalise: { dateTimesToUtc: true } } });
    // Date rolls these over (30 February is 1 March, 24:00 the next day) or cuts them to milliseconds.
    assert.deepEqual(paths({ t: '2024-02-30T00:00:00Z' }, { t: '2024-03-01T00:00:00Z' }, utc), ['$.t']);
    assert.deepEqual(paths({ t: '2024-08-01T24:00:00Z' }, { t: '2024-08-02T00:00:00Z' }, utc), ['$.t']);
    assert.deepEqual(paths({ t: '2024-08-01T10:00:00.000001Z' }, { t: '2024-08-01T10:00:00Z' }, utc), [
      '$.t',
    ]);
    // Real ones are still one instant in two offsets, trailing zeros of a fraction included.
    assert.deepEqual(
      paths({ t: '2024-02-29T01:00:00.500000+01:00' }, { t: '2024-02-29T00:00:00.5Z' }, utc),
      [],
    );
    assert.deepEqual(paths({ t: '2026-03-02T09:14+01:00' }, { t: '2026-03-02T08:14:00Z' }, utc), []);
  });

  const json = fc.jsonValue({ maxDepth: 3 });
  const rulesFile = fc.record({
    ignore: fc.array(fc.constantFrom('$.a', '$[*]', '$..b', '$.*.c', '$[0]'), { maxLength: 3 }),
    unorderedArrays: fc.oneof(fc.boolean(), fc.array(fc.constantFrom('$', '$..a', '$[*]'), { maxLength: 2 })),
    normalise: fc.record({
      idsCaseInsensitive: fc.boolean(),
      datesToDay: fc.boolean(),
      dateTimesToUtc: fc.boolean(),
      trimTrailingWhitespace: fc.boolean(),
    }),
  });

  it('property: an answer always matches itself, under any rules', () => {
    fc.assert(
      fc.property(json, fc.nat({ max: 599 }), rulesFile, (body, status, file) => {
        const r = rule({ default: file });
        assert.deepEqual(compareAnswers({ status, body }, { status, body: structuredClone(body) }, r), {
          match: true,
        });
      }),
    );
  });

  it('property: ignore rules and normalisation never add mismatches', () => {
    fc.assert(
      fc.property(json, json, rulesFile, (a, b, file) => {
        const plain = rule({ default: { unorderedArrays: file.unorderedArrays } });
        const withRules = rule({ default: file });
        const before = compareAnswers({ status: 200, body: a }, { status: 200, body: b }, plain);
        const after = compareAnswers({ status: 200, body: a }, { status: 200, body: b }, withRules);
        if (before.match) assert.equal(after.match, true);
        if (!after.match && !before.match) {
          const ignored = rule({ default: { ignore: file.ignore, unorderedArrays: file.unorderedArrays } });
          const onlyIgnore = compareAnswers({ status: 200, body: a }, { status: 200, body: b }, ignored);
          const kept = new Set(before.differences.map((d) => d.path));
          for (const d of onlyIgnore.match ? [] : onlyIgnore.differences) assert.ok(kept.has(d.path), d.path);
        }
      }),
    );
  });
});

describe('pairing and the report', () => {
  it('pairs by request id first, then by order within operation, method and path', () => {
    const as = [
      exchange({ requestId: 'x1' }),
      exchange({ requestId: 'a-only-id', path: '/p' }),
      exchange({ requestId: 'a-2nd', path: '/p' }),
      exchange({ requestId: 'lonely-a', operation: 'group.get', path: '/g' }),
    ];
    const bs = [
      exchange({ requestId: 'b-first', path: '/p' }),
      exchange({ requestId: 'x1' }),
      exchange({ requestId: 'b-second', path: '/p' }),
      exchange({ requestId: 'lonely-b', operation: 'role.get', path: '/r' }),
    ];
    const { pairs, onlyA, onlyB } = pairExchanges(as, bs);
    assert.deepEqual(
      pairs.map(({ a, b }) => [a.requestId, b.requestId]),
      [
        ['x1', 'x1'],
        ['a-only-id', 'b-first'],
        ['a-2nd', 'b-second'],
      ],
    );
    assert.deepEqual(
      onlyA.map((e) => e.requestId),
      ['lonely-a'],
    );
    assert.deepEqual(
      onlyB.map((e) => e.requestId),
      ['lonely-b'],
    );
  });

  it('pairs by a request id only within operation, method and path: a batch run may send one id for every request', () => {
    // The proxy keeps the caller's X-Request-Id; `replay --operations user.*` replayed only the user read.
    const id = 'nightly-sync-2026-03-02';
    const as = [
      exchange({ requestId: id, operation: 'group.get', path: '/Service/Core/Entity/Group/staff' }),
      exchange({ requestId: id, responseBody: { _id: 'ada.l' } }),
    ];
    const bs = [exchange({ requestId: id, responseBody: { _id: 'ada.l' } })];
    const { pairs, onlyA, onlyB } = pairExchanges(as, bs);
    assert.deepEqual(
      pairs.map(({ a, b }) => [a.operation, b.operation]),
      [['user.get', 'user.get']],
    );
    assert.deepEqual(
      onlyA.map((e) => e.operation),
      ['group.get'],
    );
    assert.deepEqual(onlyB, []);
    const report = compareRecordings(as, bs, EXACT_RULES);
    assert.deepEqual(
      report.operations.map((o) => [o.operation, o.pairs, o.matched, o.onlyA]),
      [
        ['group.get', 0, 0, 1],
        ['user.get', 1, 1, 0],
      ],
    );
  });

  it('property: every exchange ends up in exactly one pair or unpaired, pairs share operation, method and path', () => {
    const ex = fc
      .record({
        requestId: fc.constantFrom('r1', 'r2', 'r3', 'r4', 'r5'),
        operation: fc.constantFrom('user.get', 'group.get'),
        path: fc.constantFrom('/a', '/b'),
      })
      .map((over) => exchange(over));
    fc.assert(
      fc.property(fc.array(ex, { maxLength: 12 }), fc.array(ex, { maxLength: 12 }), (as, bs) => {
        const { pairs, onlyA, onlyB } = pairExchanges(as, bs);
        assert.equal(pairs.length + onlyA.length, as.length);
        assert.equal(pairs.length + onlyB.length, bs.length);
        assert.equal(new Set([...pairs.map((p) => p.a), ...onlyA]).size, as.length);
        assert.equal(new Set([...pairs.map((p) => p.b), ...onlyB]).size, bs.length);
        for (const { a, b } of pairs) {
          assert.deepEqual([a.operation, a.method, a.path], [b.operation, b.method, b.path]);
        }
      }),
    );
  });

  it('counts per operation, ranks differing paths and keeps samples with their request', () => {
    const as: RecordedExchange[] = [];
    const bs: RecordedExchange[] = [];
    for (let i = 0; i < 10; i += 1) {
      const id = `u${i}`;
      as.push(exchange({ requestId: id, responseBody: { firstname: 'A', lastname: 'L', _id: id } }));
      bs.push(
        exchange({
          requestId: id,
          responseBody: { firstname: i < 4 ? 'B' : 'A', lastname: i < 1 ? 'M' : 'L', _id: id },
        }),
      );
    }
    as.push(exchange({ requestId: 'l', operation: 'user.list', responseBody: [] }));
    bs.push(exchange({ requestId: 'l', operation: 'user.list', responseBody: [] }));
    bs.push(exchange({ requestId: 'extra', operation: 'user.list', responseBody: [] }));
    const report = compareRecordings(as, bs, EXACT_RULES, { samples: 2 });
    compareReportSchema.parse(report);
    const get = report.operations.find((o) => o.operation === 'user.get');
    assert.ok(get);
    assert.equal(get.pairs, 10);
    assert.equal(get.matched, 6);
    assert.equal(get.mismatched, 4);
    assert.equal(get.rate, 0.6);
    assert.deepEqual(get.paths, [
      { path: '$.firstname', count: 4 },
      { path: '$.lastname', count: 1 },
    ]);
    assert.equal(get.samples.length, 2);
    assert.deepEqual(get.samples[0], {
      requestId: 'u0',
      method: 'GET',
      path: '/Service/Core/Entity/User/ada.l',
      query: '',
      requestBody: null,
      status: { a: 200, b: 200 },
      differences: [
        { path: '$.firstname', a: 'A', b: 'B' },
        { path: '$.lastname', a: 'L', b: 'M' },
      ],
      moreDifferences: 0,
    });
    const list = report.operations.find((o) => o.operation === 'user.list');
    assert.deepEqual(
      { pairs: list?.pairs, matched: list?.matched, rate: list?.rate, onlyB: list?.onlyB },
      { pairs: 1, matched: 1, rate: 1, onlyB: 1 },
    );
    assert.deepEqual(report.totals, {
      pairs: 11,
      matched: 7,
      mismatched: 4,
      rate: 7 / 11,
      onlyA: 0,
      onlyB: 1,
      skipped: 0,
    });
  });

  it('redacts the path, query and body of a sample as a recording line is, in --json and HTML alike', async () => {
    const request = {
      path: '/Service/Core/Entity/User/ada.l;token=SsoToken-path',
      query: 'token=SsoToken-4d2e&x=1',
      requestBody: { password: 'Pw-in-body', name: 'ada.l' },
    };
    const report = compareRecordings(
      [exchange({ ...request, responseBody: { a: 1 } })],
      [exchange({ ...request, responseBody: { a: 2 } })],
      EXACT_RULES,
    );
    const sample = report.operations[0]?.samples[0];
    assert.deepEqual(
      { path: sample?.path, query: sample?.query, requestBody: sample?.requestBody },
      {
        path: `/Service/Core/Entity/User/ada.l;token=${REDACTED}`,
        query: `token=${REDACTED}&x=1`,
        requestBody: { password: REDACTED, name: 'ada.l' },
      },
    );
    const page = await renderHtmlReport(report, { a: 'A', b: 'B', rules: 'exact', generatedAt: new Date(0) });
    for (const secret of ['SsoToken-path', 'SsoToken-4d2e', 'Pw-in-body']) {
      assert.ok(!JSON.stringify(report).includes(secret), secret);
      assert.ok(!page.includes(secret), secret);
    }
    // A credential pasted into the path, percent-encoded: the segment goes whole.
    const pasted = { path: '/Service/Core/Entity/User/Bearer%20eyJhbGciOiJIUzI1NiJ9.e30.PathSig-9' };
    const pastedReport = compareRecordings(
      [exchange({ ...pasted, responseBody: { a: 1 } })],
      [exchange({ ...pasted, responseBody: { a: 2 } })],
      EXACT_RULES,
    );
    assert.equal(pastedReport.operations[0]?.samples[0]?.path, `/Service/Core/Entity/User/${REDACTED}`);
    // A recording made before such paths were redacted pairs with its replay, written redacted.
    const replayed = compareRecordings(
      [exchange({ ...pasted, responseBody: { a: 1 } })],
      [exchange({ path: `/Service/Core/Entity/User/${REDACTED}`, responseBody: { a: 1 } })],
      EXACT_RULES,
    );
    assert.deepEqual(
      replayed.operations.map(({ pairs, matched, onlyA, onlyB }) => ({ pairs, matched, onlyA, onlyB })),
      [{ pairs: 1, matched: 1, onlyA: 0, onlyB: 0 }],
    );
  });

  it('does not compare answers recorded without their body (too large, too deep): skipped, in no rate', () => {
    // Both sides `null` because the answer was over 8 MiB: compare counted it as matched.
    const large = { responseBody: null, responseBodyOmitted: 'too-large' as const };
    const as = [
      exchange({ requestId: 'big', operation: 'user.list', ...large }),
      exchange({
        requestId: 'deep',
        operation: 'user.list',
        responseBody: null,
        responseBodyOmitted: 'too-deep',
      }),
      exchange({ requestId: 'one-side', operation: 'user.list', ...large }),
      exchange({ requestId: 'status', operation: 'user.list', ...large }),
      // A 204: no body on either side, legitimately; it matches.
      exchange({ requestId: 'empty', operation: 'user.delete', method: 'DELETE', status: 204 }),
    ];
    const bs = [
      exchange({ requestId: 'big', operation: 'user.list', ...large }),
      exchange({ requestId: 'deep', operation: 'user.list', ...large }),
      exchange({ requestId: 'one-side', operation: 'user.list', responseBody: [] }),
      exchange({ requestId: 'status', operation: 'user.list', status: 502, responseBody: { code: 502 } }),
      exchange({ requestId: 'empty', operation: 'user.delete', method: 'DELETE', status: 204 }),
    ];
    assert.equal(
      compareExchanges(as[0] as RecordedExchange, bs[0] as RecordedExchange, EXACT_RULES),
      undefined,
    );
    const report = compareReportSchema.parse(compareRecordings(as, bs, EXACT_RULES));
    assert.deepEqual(
      report.operations.map((o) => [o.operation, o.pairs, o.matched, o.mismatched, o.rate, o.skipped]),
      [
        ['user.delete', 1, 1, 0, 1, 0],
        // A different status is a difference whatever the bodies.
        ['user.list', 1, 0, 1, 0, 3],
      ],
    );
    assert.deepEqual(report.operations[1]?.paths, [{ path: 'status', count: 1 }]);
    assert.deepEqual(report.totals, {
      pairs: 2,
      matched: 1,
      mismatched: 1,
      rate: 0.5,
      onlyA: 0,
      onlyB: 0,
      skipped: 3,
    });
    // Only skipped pairs: no rate at all, not 100 %.
    const onlyLarge = compareRecordings(
      [as[0] as RecordedExchange],
      [bs[0] as RecordedExchange],
      EXACT_RULES,
    );
    assert.deepEqual([onlyLarge.totals.pairs, onlyLarge.totals.rate, onlyLarge.totals.skipped], [0, null, 1]);
    assert.equal(
      reportTable(onlyLarge),
      [
        'OPERATION  PAIRS  MATCHED  MISMATCHED  RATE  ONLY A  ONLY B  SKIPPED',
        'user.list      0        0           0     –       0       0        1',
        'TOTAL          0        0           0     –       0       0        1',
      ].join('\n'),
    );
  });

  it('a shadow report also counts errors and skipped requests', () => {
    const builder = new ReportBuilder({}, { shadow: true });
    builder.addError('user.get');
    builder.addSkipped('user.create');
    const report = compareReportSchema.parse(builder.report());
    assert.deepEqual(report.totals, {
      pairs: 0,
      matched: 0,
      mismatched: 0,
      rate: null,
      onlyA: 0,
      onlyB: 0,
      errors: 1,
      skipped: 1,
    });
  });

  it('the default rules accept the harmless differences between the old server and the translation', () => {
    const rules = loadCompareRules();
    const oldList = [
      { username: 'Ada.L', _id: 'Ada.L', lastlogin: '2026-03-02T09:14:00+01:00', roles: ['b', 'a'] },
      { username: 'bo', _id: 'bo', lastlogin: null, roles: [] },
    ];
    const newList = [
      { username: 'bo', _id: 'bo', lastlogin: null, roles: [] },
      { username: 'Ada.L', _id: 'Ada.L', lastlogin: '2026-03-05T10:00:00Z', roles: ['a', 'b'] },
    ];
    const report = compareRecordings(
      [
        exchange({ requestId: '1', operation: 'user.list', responseBody: oldList }),
        exchange({
          requestId: '2',
          operation: 'user.get',
          status: 404,
          responseBody: { code: 404, message: 'Not found' },
        }),
        exchange({
          requestId: '3',
          operation: 'sso.authenticate',
          responseBody: { username: 'bo', token: 't1', return_to: 'https://old.example/sso?token=t1' },
        }),
      ],
      [
        exchange({ requestId: '1', operation: 'user.list', responseBody: newList }),
        exchange({
          requestId: '2',
          operation: 'user.get',
          status: 404,
          responseBody: { code: 404, message: 'No such user: x' },
        }),
        exchange({
          requestId: '3',
          operation: 'sso.authenticate',
          responseBody: {
            username: 'bo',
            token: 't2',
            return_to: 'https://proxy.example/sso/continue?token=t2',
          },
        }),
      ],
      rules,
    );
    assert.deepEqual(report.totals.matched, 3, JSON.stringify(report.operations, null, 1));
    // An ID in another case is not harmless: integrations compare IDs exactly.
    const cased = compareRecordings(
      [exchange({ responseBody: { _id: 'Ada.L', firstname: 'Ada ' } })],
      [exchange({ responseBody: { _id: 'ada.l', firstname: 'Ada' } })],
      rules,
    );
    assert.deepEqual(cased.operations[0]?.paths, [{ path: '$._id', count: 1 }]);
  });
});

describe('compare on the command line', () => {
  /** A recording line whose answer nests `depth` arrays (as text: no printer recurses into it). */
  const nestedLine = (requestId: string, depth: number) =>
    JSON.stringify(exchange({ requestId, responseBody: null })).replace(
      '"responseBody":null',
      `"responseBody":${'['.repeat(depth)}${']'.repeat(depth)}`,
    );

  it(`lists a line nested deeper than ${MAX_BODY_DEPTH} levels as a bad line and compares the rest`, async () => {
    const dir = tempDir('compare');
    const a = path.join(dir, 'a.ndjson');
    const b = path.join(dir, 'b.ndjson');
    const lines = [
      JSON.stringify(exchange({ requestId: 'good' })),
      nestedLine('limit', MAX_BODY_DEPTH),
      nestedLine('deeper', MAX_BODY_DEPTH + 1),
      nestedLine('overflow', 100_000),
    ];
    writeFileSync(a, `${lines.join('\n')}\n`);
    writeFileSync(b, `${lines.slice(0, 2).join('\n')}\n`);
    const run = await runCliCaptured(['compare', a, b, '--exact', '--json']);
    assert.equal(
      run.stderr,
      [3, 4]
        .map((line) => `${a}:${line}: responseBody: nested deeper than ${MAX_BODY_DEPTH} levels\n`)
        .join(''),
    );
    const report = compareReportSchema.parse(JSON.parse(run.stdout));
    assert.deepEqual(
      { pairs: report.totals.pairs, matched: report.totals.matched, onlyA: report.totals.onlyA },
      { pairs: 2, matched: 2, onlyA: 0 },
    );
    assert.equal(run.code, 1, 'a line left out is no pass');
  });
});

describe('compare on the command line: a reader that goes away', () => {
  it('ends with its exit code and no EPIPE stack trace when stdout closes early (| head)', async () => {
    const dir = tempDir('compare');
    const a = path.join(dir, 'a.ndjson');
    const b = path.join(dir, 'b.ndjson');
    // Differing answers with long values: a report of about 1 MB, far past a pipe's buffer.
    const line = (value: string) =>
      Array.from({ length: 4 }, (_, i) =>
        JSON.stringify(exchange({ requestId: `r${i}`, responseBody: { firstname: value.repeat(1 + i) } })),
      ).join('\n');
    writeFileSync(a, `${line('a'.repeat(100_000))}\n`);
    writeFileSync(b, `${line('b'.repeat(100_000))}\n`);
    const cli = spawnCli(['compare', a, b, '--json']);
    await cli.waitFor('stdout', /./);
    cli.child.stdout.destroy();
    const exit = await cli.exited;
    assert.doesNotMatch(cli.stderr(), /EPIPE|Error|\n\s+at /, cli.stderr());
    assert.deepEqual(exit, { code: 1, signal: null }, 'the exit code of a report with mismatches');
  });
});

describe('compare on the command line: forged lines', () => {
  it('refuses a line whose operation or method holds control characters: no forged row, no ANSI escape', async () => {
    const dir = tempDir('compare-forged');
    const a = path.join(dir, 'a.ndjson');
    const b = path.join(dir, 'b.ndjson');
    const forged = [
      exchange({ requestId: 'row', operation: 'user.get  1  1  0  100.0 %\nTOTAL' }),
      exchange({ requestId: 'ansi', operation: '\u001b[2J\u001b[Huser.get' }),
      exchange({ requestId: 'method', method: 'GET\u001b[31m' }),
    ];
    const good = exchange({ requestId: 'good' });
    writeFileSync(a, `${[good, ...forged].map((line) => JSON.stringify(line)).join('\n')}\n`);
    writeFileSync(b, `${[good, ...forged].map((line) => JSON.stringify(line)).join('\n')}\n`);
    const run = await runCliCaptured(['compare', a, b, '--exact']);
    assert.equal(
      run.stderr,
      [a, b]
        .flatMap((file) => [
          `${file}:2: operation: must not contain control characters\n`,
          `${file}:3: operation: must not contain control characters\n`,
          `${file}:4: method: must not contain control characters\n`,
        ])
        .join(''),
    );
    assert.ok(!run.stdout.includes('\u001b'), 'no escape reaches the terminal');
    // The one good pair matches, but lines were left out: no pass (it exited 0).
    assert.equal(run.code, 1);
    assert.deepEqual(
      run.stdout
        .trimEnd()
        .split('\n')
        .map((line) => line.split(' ')[0]),
      ['OPERATION', 'user.get', 'TOTAL'],
    );
  });
});

describe('compare on the command line: a member name with a direction control', () => {
  it('prints its path escaped, not raw', async () => {
    const dir = tempDir('compare-bidi');
    const a = path.join(dir, 'a.ndjson');
    const b = path.join(dir, 'b.ndjson');
    writeFileSync(a, `${JSON.stringify(exchange({ requestId: 'r', responseBody: { '\u202eabc': 1 } }))}\n`);
    writeFileSync(b, `${JSON.stringify(exchange({ requestId: 'r', responseBody: { '\u202eabc': 2 } }))}\n`);
    const run = await runCliCaptured(['compare', a, b, '--exact']);
    assert.equal(run.code, 1);
    assert.ok(!run.stdout.includes('\u202e'), run.stdout);
    assert.match(run.stdout, /\$\["\\u202eabc"\]/);
  });
});

describe('compare on the command line: answers recorded without their body', () => {
  it('counts them as skipped in the text, JSON and HTML reports, and exits 1, not 0', async () => {
    const dir = tempDir('compare-omitted');
    const a = path.join(dir, 'a.ndjson');
    const b = path.join(dir, 'b.ndjson');
    const html = path.join(dir, 'report.html');
    const lines = [
      exchange({
        requestId: 'big',
        operation: 'user.list',
        responseBody: null,
        responseBodyOmitted: 'too-large',
      }),
      exchange({ requestId: 'ok', responseBody: { _id: 'ada.l' } }),
    ];
    writeFileSync(a, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    writeFileSync(b, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const text = await runCliCaptured(['compare', a, b, '--exact', '--html', html]);
    assert.equal(text.code, 1, 'a pair not compared is no pass');
    assert.match(text.stdout, /^OPERATION +PAIRS +MATCHED +MISMATCHED +RATE +ONLY A +ONLY B +SKIPPED$/m);
    assert.match(text.stdout, /^user\.list +0 +0 +0 +– +0 +0 +1$/m);
    assert.match(text.stdout, /^TOTAL +1 +1 +0 +100\.0 % +0 +0 +1$/m);
    const page = readFileSync(html, 'utf8');
    assert.match(page, /<th class="num">Skipped<\/th><\/tr>/);
    assert.match(page, /<tr data-operation="user\.list">[\s\S]*?<td class="num">1<\/td>\s*<\/tr>/);
    assert.match(
      page,
      /<strong>100\.0 %<\/strong> of 1 paired requests match: .*; 0 only in A, 0 only in B; 1 not compared\./,
    );
    const json = await runCliCaptured(['compare', a, b, '--exact', '--json']);
    assert.equal(json.code, 1);
    const report = compareReportSchema.parse(JSON.parse(json.stdout));
    assert.deepEqual(
      { pairs: report.totals.pairs, matched: report.totals.matched, skipped: report.totals.skipped },
      { pairs: 1, matched: 1, skipped: 1 },
    );
  });
});

describe('report as text', () => {
  it('aligns a table with TOTAL, lists frequent paths, and adds ERRORS/SKIPPED for shadow reports', () => {
    const builder = new ReportBuilder({}, { shadow: true });
    builder.add(exchange({ operation: 'user.get' }), 200, {
      match: false,
      differences: [],
      paths: ['$.firstname'],
    });
    builder.add(exchange({ operation: 'user.get' }), 200, { match: true });
    builder.addError('group.get');
    builder.addSkipped('user.create');
    assert.equal(
      reportTable(builder.report()),
      [
        'OPERATION    PAIRS  MATCHED  MISMATCHED    RATE  ONLY A  ONLY B  ERRORS  SKIPPED',
        'group.get        0        0           0       –       0       0       1        0',
        'user.create      0        0           0       –       0       0       0        1',
        'user.get         2        1           1  50.0 %       0       0       0        0',
        'TOTAL            2        1           1  50.0 %       0       0       1        1',
        '',
        'user.get: most frequent differing paths',
        '      1  $.firstname',
      ].join('\n'),
    );
    assert.doesNotMatch(reportTable(new ReportBuilder().report()), /ERRORS/);
  });

  it('rounds a match rate down: 100.0 % only when every pair matched', () => {
    // Rounded to nearest, 9,999 of 10,000 read "100.0 %" while one request still differed.
    assert.equal(formatRate(9999 / 10_000), '99.9 %');
    assert.equal(formatRate(0.99999999), '99.9 %');
    assert.equal(formatRate(2 / 3), '66.6 %');
    assert.equal(formatRate(7 / 11), '63.6 %');
    assert.equal(formatRate(0.29), '29.0 %');
    assert.equal(formatRate(1), '100.0 %');
    assert.equal(formatRate(0), '0.0 %');
    assert.equal(formatRate(null), '–');
    // The text table of compare and of shadow report alike.
    for (const shadow of [false, true]) {
      const builder = new ReportBuilder({}, { shadow });
      const mismatch = { match: false as const, differences: [], paths: ['$.firstname'] };
      builder.add(exchange(), 200, mismatch);
      for (let i = 0; i < 9999; i += 1) builder.add(exchange(), 200, { match: true });
      const table = reportTable(builder.report());
      assert.match(table, /^user\.get +10000 +9999 +1 +99\.9 %/m);
      assert.match(table, /^TOTAL +10000 +9999 +1 +99\.9 %/m);
      assert.doesNotMatch(table, /100\.0/);
    }
  });
});

describe('report as HTML', () => {
  it('adds Errors and Skipped columns for shadow reports only', async () => {
    const meta = { a: 'legacy', b: 'translation', rules: 'default', generatedAt: new Date(0) };
    const shadow = new ReportBuilder({}, { shadow: true });
    shadow.addError('user.get');
    const page = await renderHtmlReport(shadow.report(), { ...meta, title: 'Shadow <report>' });
    assert.match(page, /<th class="num">Errors<\/th><th class="num">Skipped<\/th>/);
    assert.match(page, /<td class="num">1<\/td><td class="num">0<\/td>/);
    assert.match(page, /<title>Shadow &lt;report&gt;<\/title>/);
    assert.doesNotMatch(await renderHtmlReport(new ReportBuilder().report(), meta), /Errors/);
  });

  it('rounds a match rate down in the figures and the bar: full only when every pair matched', async () => {
    const builder = new ReportBuilder();
    builder.add(exchange(), 200, { match: false, differences: [], paths: ['$.firstname'] });
    for (let i = 0; i < 9999; i += 1) builder.add(exchange(), 200, { match: true });
    const page = await renderHtmlReport(builder.report(), {
      a: 'A',
      b: 'B',
      rules: 'exact',
      generatedAt: new Date(0),
    });
    assert.match(page, /<td class="num">99\.9 %<\/td>/);
    assert.match(page, /<strong>99\.9 %<\/strong> of 10000 paired requests match/);
    assert.match(page, /aria-label="99\.9 % matched"><div class="ok" style="width: 99\.9%">/);
    assert.doesNotMatch(page, /100\.0/);
  });
});
