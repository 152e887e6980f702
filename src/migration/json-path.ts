import { jsonQuoted } from '../lib/quote.js';

/**
 * The small JSON path syntax of compare rules and reports:
 *
 * - `$` the whole body; `.name` a member; `["any key"]` a member whose name is not a plain word;
 * - `[3]` one array element; `[*]` any element; `.*` any member;
 * - `..name` (or `..*`, `..[*]`) the member at any depth below.
 *
 * Examples: `$.lastlogin`, `$[*].lastlogin`, `$.errors[*].message`, `$..lastlogin`.
 * Reported paths are concrete (`$[12].firstname`); {@link generalisePath} turns indices into `[*]`.
 */

/** One step of a concrete location: a member name or an array index. */
export type PathKey = string | number;

type Segment =
  | { kind: 'member'; name: string }
  | { kind: 'anyMember' }
  | { kind: 'index'; index: number }
  | { kind: 'anyIndex' }
  | { kind: 'descend' };

/** A path pattern parsed once. */
export interface CompiledPath {
  readonly source: string;
  matches(keys: readonly PathKey[]): boolean;
}

/** A path pattern that is not valid syntax. */
export class JsonPathError extends Error {
  override readonly name = 'JsonPathError';
}

const WORD = /^[A-Za-z_$][\w$-]*/;

/** Parses a path pattern; throws {@link JsonPathError} with the position of the problem. */
export function compilePath(source: string): CompiledPath {
  if (!source.startsWith('$')) throw new JsonPathError(`must start with $: ${source}`);
  const segments: Segment[] = [];
  let rest = source.slice(1);
  const fail = (why: string): never => {
    throw new JsonPathError(`${why} at "${rest}" in ${source}`);
  };
  while (rest.length > 0) {
    if (rest.startsWith('..')) {
      segments.push({ kind: 'descend' });
      rest = rest.slice(2);
      if (rest.startsWith('[')) continue;
      rest = `.${rest}`;
      if (rest === '.') fail('a member must follow ..');
    }
    if (rest.startsWith('.*')) {
      segments.push({ kind: 'anyMember' });
      rest = rest.slice(2);
    } else if (rest.startsWith('.')) {
      const word = WORD.exec(rest.slice(1));
      if (!word) fail('expected a member name');
      const name = word?.[0] ?? '';
      segments.push({ kind: 'member', name });
      rest = rest.slice(1 + name.length);
    } else if (rest.startsWith('[*]')) {
      segments.push({ kind: 'anyIndex' });
      rest = rest.slice(3);
    } else if (rest.startsWith('["')) {
      const end = /^\["(?:[^"\\]|\\.)*"\]/.exec(rest);
      if (!end) fail('unterminated ["…"]');
      const text = end?.[0] ?? '';
      segments.push({ kind: 'member', name: JSON.parse(text.slice(1, -1)) as string });
      rest = rest.slice(text.length);
    } else if (rest.startsWith('[')) {
      const index = /^\[(\d+)\]/.exec(rest);
      if (!index) fail('expected [N], [*] or ["name"]');
      segments.push({ kind: 'index', index: Number(index?.[1]) });
      rest = rest.slice(index?.[0].length ?? 0);
    } else {
      fail('expected . or [');
    }
  }
  return { source, matches: (keys) => matchSegments(segments, keys) };
}

/**
 * Whether `segments` match the whole of `keys`. Walks the segments once, keeping the set of
 * positions in `keys` they can have reached (`..` reaches its position and every one after it):
 * segments × keys steps. Trying each way of spreading the `..`s over the keys in turn took time
 * exponential in their number (`$..a..a…..z` against a deep body: seconds, doubling per level).
 */
function matchSegments(segments: readonly Segment[], keys: readonly PathKey[]): boolean {
  // reached[j]: the segments so far can match keys[0 … j-1].
  let reached = Array.from({ length: keys.length + 1 }, (_, j) => j === 0);
  for (const segment of segments) {
    const next = reached.map(() => false);
    if (segment.kind === 'descend') {
      let any = false;
      for (let j = 0; j < reached.length; j += 1) {
        any ||= reached[j] === true;
        next[j] = any;
      }
    } else {
      keys.forEach((key, j) => {
        if (reached[j] === true && keyMatches(segment, key)) next[j + 1] = true;
      });
    }
    if (!next.includes(true)) return false;
    reached = next;
  }
  return reached[keys.length] === true;
}

function keyMatches(segment: Exclude<Segment, { kind: 'descend' }>, key: PathKey): boolean {
  switch (segment.kind) {
    case 'member':
      return key === segment.name;
    case 'anyMember':
      return typeof key === 'string';
    case 'index':
      return key === segment.index;
    case 'anyIndex':
      return typeof key === 'number';
  }
}

/** Whether any of `paths` matches the location `keys`. */
export function matchesAnyPath(paths: readonly CompiledPath[], keys: readonly PathKey[]): boolean {
  return paths.some((path) => path.matches(keys));
}

/** Renders a concrete location, e.g. `$.errors[0].message`. */
export function formatPath(keys: readonly PathKey[]): string {
  let out = '$';
  for (const key of keys) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (WORD.exec(key)?.[0] === key) out += `.${key}`;
    else out += `[${jsonQuoted(key)}]`;
  }
  return out;
}

/** The location with every array index as `[*]`, for counting paths across requests. */
export function generalisePath(keys: readonly PathKey[]): string {
  return formatPath(keys.map((key) => (typeof key === 'number' ? -1 : key))).replace(/\[-1\]/g, '[*]');
}
