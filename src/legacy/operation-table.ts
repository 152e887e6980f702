import { isPathSegmentId } from '../lib/legacy-id.js';
import { decodedSegment } from '../lib/path-segment.js';
import type { LegacyOperation } from './operation.js';

/** A request matched to a legacy operation, with its path parameters decoded. */
export interface MatchedOperation {
  operation: LegacyOperation;
  params: Record<string, string>;
}

/** What the operation table says about a request path. */
export type OperationMatch =
  | { kind: 'operation'; matched: MatchedOperation }
  /** A known path asked with another method: the methods it has (HEAD wherever GET is). */
  | { kind: 'method'; allowed: string[] }
  /**
   * No operation's path. `withoutSlash`: the same path without its trailing slash(es), when that
   * one is an operation's (with this method or another), for the 404 to point the caller to it.
   */
  | { kind: 'none'; withoutSlash?: string };

interface Entry {
  operation: LegacyOperation;
  method: string;
  /** Path segments below the base path; `null` is a parameter, named in `names`. */
  segments: (string | null)[];
  names: string[];
}

/**
 * Every legacy operation under every namespace (`/Service/Core/…`, `/IServ/Core/…`), compiled
 * once: `match` tells, before authentication, which operation a request is for, so that every
 * step after it (auth, limits, dispatch, log, metrics, usage) can name it.
 */
export class OperationTable {
  /** The entries by their number of segments, in table order: a path is compared with its own length's only. */
  readonly #byLength = new Map<number, Entry[]>();
  readonly #prefix: string;

  constructor(
    readonly operations: readonly LegacyOperation[],
    options: { basePath: string; namespaces: readonly string[] },
  ) {
    this.#prefix = options.basePath;
    for (const namespace of options.namespaces) {
      for (const operation of operations) {
        const names: string[] = [];
        const segments = `/${namespace}${operation.path}`
          .split('/')
          .slice(1)
          .map((segment) => {
            const param = /^\{([A-Za-z0-9_]+)\}$/.exec(segment);
            if (!param?.[1]) return segment;
            names.push(param[1]);
            return null;
          });
        const entry: Entry = { operation, method: operation.method.toUpperCase(), segments, names };
        const sameLength = this.#byLength.get(segments.length);
        if (sameLength) sameLength.push(entry);
        else this.#byLength.set(segments.length, [entry]);
      }
    }
  }

  /** The operation of a request (HEAD is matched as GET); parameters are percent-decoded. */
  match(method: string, path: string): OperationMatch {
    if (!path.startsWith(`${this.#prefix}/`)) return { kind: 'none' };
    const parts = path.slice(this.#prefix.length + 1).split('/');
    const wanted = method === 'HEAD' ? 'GET' : method;
    // Made only for a path asked with a method it lacks (every request is matched).
    let allowed: Set<string> | undefined;
    for (const entry of this.#byLength.get(parts.length) ?? []) {
      const params = matchSegments(entry, parts);
      if (!params) continue;
      if (entry.method === wanted)
        return { kind: 'operation', matched: { operation: entry.operation, params } };
      allowed ??= new Set();
      allowed.add(entry.method);
      if (entry.method === 'GET') allowed.add('HEAD');
    }
    if (allowed) return { kind: 'method', allowed: [...allowed] };
    return { kind: 'none', withoutSlash: this.#withoutSlash(method, path) };
  }

  /**
   * `path` without its trailing slashes when it has some and is then an operation's path (asked
   * with `method` or another): a 404's hint, not a match, as the seed's paths have no trailing slash.
   */
  #withoutSlash(method: string, path: string): string | undefined {
    // Counted from the end (a pattern `\/+$` backtracks over every run of slashes in the path).
    let end = path.length;
    while (end > 0 && path[end - 1] === '/') end--;
    if (end === path.length || end <= this.#prefix.length) return undefined;
    const trimmed = path.slice(0, end);
    return this.match(method, trimmed).kind === 'none' ? undefined : trimmed;
  }
}

/** The parameters of `parts` when they match `entry` (of the same length), else undefined. */
function matchSegments(entry: Entry, parts: readonly string[]): Record<string, string> | undefined {
  // The fixed segments first: most entries differ there, and then no parameter is decoded.
  for (let i = 0; i < parts.length; i++) {
    const expected = entry.segments[i];
    if (expected !== null && expected !== parts[i]) return undefined;
  }
  const params: Record<string, string> = {};
  let name = 0;
  for (let i = 0; i < parts.length; i++) {
    const expected = entry.segments[i];
    const part = parts[i] ?? '';
    if (expected === null) {
      const value = part === '' ? '' : decodedSegment(part);
      // No legacy ID holds a path separator or is a dot segment: such a value (`x%2F..%2F..`)
      // could name another resource on a server that decodes it, so it matches nothing (404).
      if (value === '' || !isPathSegmentId(value)) return undefined;
      params[entry.names[name++] ?? ''] = value;
    }
  }
  return params;
}
