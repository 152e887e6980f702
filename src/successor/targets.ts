import { hasDotSegment } from '../lib/dot-segments.js';
import { UpstreamError } from './errors.js';
import type { CallTarget } from './http.js';

/** Query parameters: arrays become repeated `key=value` pairs, the key used exactly as given (say `key[]` to get `key[]=`); undefined values are left out. */
export type SuccessorQuery = Record<string, string | readonly string[] | undefined>;

/** Where the configured API lives: `successor.baseUrl`'s origin and its path without a trailing slash. */
export interface ApiBase {
  origin: string;
  basePath: string;
}

/**
 * The target of a call to `path` (relative to the API base path, absolute on its host, or a
 * whole URL on its origin) with `query` added; a fragment is dropped. Refuses another origin
 * (UpstreamError `bad_response`: such a path came from the successor's own answer) and a path
 * that leaves the base path (TypeError). A path of plain characters without dot segments is what
 * the URL parser would make of it: it is used as it is, without a parse (item reads and writes go
 * this way); anything else is parsed.
 */
export function resolveTarget(base: ApiBase, path: string, query: SuccessorQuery | undefined): CallTarget {
  const { origin, basePath } = base;
  let url: URL;
  // A fragment is never sent; the query goes before where it was.
  const hashAt = path.indexOf('#');
  const target = hashAt === -1 ? path : path.slice(0, hashAt);
  // The query is serialized once and parsed with the path (appending to `searchParams` would
  // serialize the whole URL again for every parameter).
  const search = querySearch(query, target.includes('?') ? '&' : '?');
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
    url = new URL(`${target}${search}`);
    if (url.origin !== origin) {
      throw new UpstreamError(
        'bad_response',
        `refusing to call ${url.origin}, which is not the successor's origin ${origin}`,
        { source: 'api', path: url.pathname },
      );
    }
  } else {
    const absolute = target === basePath || target.startsWith(`${basePath}/`);
    const pathname = absolute ? target : `${basePath}${target.startsWith('/') ? '' : '/'}${target}`;
    // Below the base path by construction, and no dot segment can lead out of it.
    if (PLAIN_PATH.test(pathname) && !hasDotSegment(pathname))
      return new PlainTarget(origin, pathname, search);
    // One absolute string, parsed once (a base URL would be parsed again for every call); the
    // origin in front keeps the host whatever the path looks like (`//host/…` included).
    url = new URL(`${origin}${pathname}${search}`);
  }
  if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) {
    throw new TypeError(`successor path ${JSON.stringify(path)} leaves the API base path ${basePath}`);
  }
  return url;
}

/**
 * A path the URL parser leaves as it is: only characters outside its path percent-encode set, and
 * no `%`, `?`, `\` or `#` (which it would decode, split or turn around).
 */
const PLAIN_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;

/** A call target made of parts that need no parsing: the origin, a plain path and a serialized query. */
class PlainTarget implements CallTarget {
  constructor(
    readonly origin: string,
    readonly pathname: string,
    readonly search: string,
  ) {}

  get href(): string {
    return `${this.origin}${this.pathname}${this.search}`;
  }

  /** The whole URL, as a `URL` gives it. */
  toString(): string {
    return this.href;
  }
}

/** `query` as form-encoded parameters after `lead` (`?` or `&`), as `URLSearchParams` writes them; empty without any. */
export function querySearch(query: SuccessorQuery | undefined, lead: '?' | '&'): string {
  if (query === undefined) return '';
  let text = '';
  for (const key in query) {
    const value = query[key];
    if (value === undefined) continue;
    const name = formEncoded(key);
    if (typeof value === 'string') text += `&${name}=${formEncoded(value)}`;
    else for (const item of value) text += `&${name}=${formEncoded(item)}`;
  }
  return text === '' ? '' : `${lead}${text.slice(1)}`;
}

/** Characters the form encoding leaves as they are, and the comma of attribute lists. */
const FORM_PLAIN = /^[A-Za-z0-9*\-._,]*$/;

/**
 * One name or value form-encoded as `URLSearchParams` does it: the common ones (names, attribute
 * lists, plain IDs) directly, anything else by `URLSearchParams` itself.
 */
export function formEncoded(text: string): string {
  if (FORM_PLAIN.test(text)) return text.includes(',') ? text.replaceAll(',', '%2C') : text;
  return new URLSearchParams([['', text]]).toString().slice(1);
}
