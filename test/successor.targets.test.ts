import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { UpstreamError } from '../src/successor/errors.js';
import { querySearch, resolveTarget, type SuccessorQuery } from '../src/successor/targets.js';

const BASES = [
  { origin: 'http://127.0.0.1:8080', basePath: '/iserv/idm/api/v1' },
  { origin: 'https://school.example', basePath: '' },
  { origin: 'http://[::1]:8080', basePath: '/a' },
];

/** What every call target was before plain paths skipped the parse: the path and query parsed as one URL. */
function parsed(base: (typeof BASES)[number], path: string, query: SuccessorQuery | undefined) {
  const target = path.split('#')[0] ?? '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    for (const item of typeof value === 'string' ? [value] : value) params.append(key, item);
  }
  const text = params.toString();
  const search = text === '' ? '' : `${target.includes('?') ? '&' : '?'}${text}`;
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return new URL(`${target}${search}`);
  const absolute = target === base.basePath || target.startsWith(`${base.basePath}/`);
  const relative = target.startsWith('/') ? target : `/${target}`;
  return new URL(`${base.origin}${absolute ? target : `${base.basePath}${relative}`}${search}`);
}

/** The parts of a target the transport reads, or what resolving it threw. */
function outcome(resolve: () => { origin: string; pathname: string; search: string; href: string }) {
  try {
    const { origin, pathname, search, href } = resolve();
    return { origin, pathname, search, href };
  } catch (error) {
    return { threw: (error as Error).constructor.name };
  }
}

/** Path characters: the plain ones and every kind the URL parser treats specially. */
const pathChar = fc.constantFrom(
  ...'aZ09-._~!$&()*+,;=:@/'.split(''),
  "'",
  '.',
  '..',
  '/',
  '%',
  '%2e',
  '%2F',
  '?',
  '#',
  '\\',
  ' ',
  '"',
  '<',
  '^',
  '`',
  '{',
  '|',
  'ä',
  '\t',
  '\n',
  '\r',
  '\u0000',
  '%2E',
  '[',
  ']',
  '\u{1F600}',
  // The base paths, so that paths already below them are drawn too.
  '/iserv/idm/api/v1',
  '/iserv/idm/api/v1/',
  '/a/',
);
const pathText = fc.array(pathChar, { maxLength: 24 }).map((parts) => parts.join(''));
/** Text near the plain form (every character the encoding keeps, and its neighbours), and any text. */
const formText = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: fc.constantFrom(..."aZ09*-._,~!'()+ %/&=?#ä".split('')), maxLength }),
    fc.string({ unit: 'binary', maxLength }),
  );
const queryValue = fc.oneof(
  formText(12),
  fc.constantFrom('hexUuid,user,roles.role', 'a b', 'x+y', '*-._', ''),
);
const query: fc.Arbitrary<SuccessorQuery | undefined> = fc.option(
  fc.dictionary(
    fc.constantFrom('_attributes', 'user', 'key[]', 'a b', 'ä'),
    fc.oneof(queryValue, fc.array(queryValue, { maxLength: 3 }), fc.constant(undefined)),
  ),
  { nil: undefined },
);

describe('successor call targets', () => {
  it('are what parsing the path and query as one URL gives, whatever the path holds', () => {
    fc.assert(
      fc.property(fc.constantFrom(...BASES), pathText, fc.boolean(), query, (base, text, rooted, q) => {
        const path = rooted ? `/${text}` : text;
        const reference = outcome(() => {
          const url = parsed(base, path, q);
          if (url.origin !== base.origin) throw new UpstreamError('bad_response', 'other origin');
          if (url.pathname !== base.basePath && !url.pathname.startsWith(`${base.basePath}/`))
            throw new TypeError('leaves the base path');
          return url;
        });
        assert.deepEqual(
          outcome(() => resolveTarget(base, path, q)),
          reference,
        );
      }),
      { numRuns: 5000 },
    );
  });

  it('skip the parse for plain paths only', () => {
    const [base] = BASES;
    if (!base) throw new Error('no base');
    const query = { _attributes: 'hexUuid,user' };
    for (const path of ['users/abc', '/iserv/idm/api/v1/users/abc', 'groups/a:b@c'])
      assert.ok(!(resolveTarget(base, path, query) instanceof URL), path);
    for (const path of ['users/abc/..', 'users/%C3%A4', 'users/ä', 'users?x=1', 'users\\abc'])
      assert.ok(resolveTarget(base, path, query) instanceof URL, path);
    assert.equal(
      String(resolveTarget(base, 'users/abc', query)),
      resolveTarget(base, 'users/abc', query).href,
    );
  });

  it('refuse dot segments, also percent-encoded ones, that leave the base path', () => {
    const [base] = BASES;
    if (!base) throw new Error('no base');
    for (const path of ['../admin', 'users/../../x', '%2e%2e/x', '/iserv/idm/api/v1/..'])
      assert.throws(() => resolveTarget(base, path, undefined), TypeError, path);
    assert.equal(resolveTarget(base, 'users/./a/../b', undefined).pathname, '/iserv/idm/api/v1/users/b');
  });

  it('refuse a whole URL on another origin', () => {
    const [base] = BASES;
    if (!base) throw new Error('no base');
    assert.throws(
      () => resolveTarget(base, 'http://127.0.0.1:9999/iserv/idm/api/v1/users', undefined),
      (error: unknown) => error instanceof UpstreamError && error.code === 'bad_response',
    );
    const next = resolveTarget(base, 'http://127.0.0.1:8080/iserv/idm/api/v1/users?page=2', { n: '5' });
    assert.equal(next.href, 'http://127.0.0.1:8080/iserv/idm/api/v1/users?page=2&n=5');
  });

  it('encode queries as URLSearchParams does, for any text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(formText(8), formText(16)), {
          maxLength: 4,
        }),
        (pairs) => {
          const grouped = new Map<string, string[]>();
          for (const [key, value] of pairs) grouped.set(key, [...(grouped.get(key) ?? []), value]);
          // Own properties only, `__proto__` and `toString` included.
          const q: SuccessorQuery = Object.fromEntries(grouped);
          const expected = new URLSearchParams();
          for (const [key, values] of Object.entries(q))
            for (const value of values as string[]) expected.append(key, value);
          const text = expected.toString();
          assert.equal(querySearch(q, '?'), text === '' ? '' : `?${text}`);
        },
      ),
      { numRuns: 3000 },
    );
  });
});
