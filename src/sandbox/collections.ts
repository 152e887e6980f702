import { ProblemError } from './problems.js';
import { API_BASE } from './resources.js';

/** Output format chosen from `Accept`: JSON-LD/Hydra or plain JSON. */
export type Format = 'jsonld' | 'json';

/** Content types of the two formats. */
export const CONTENT_TYPES: Record<Format, string> = {
  jsonld: 'application/ld+json; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

/**
 * Picks the format from an Accept header like API Platform: `application/ld+json` and
 * `application/json` by quality then order; wildcards and a missing header mean JSON-LD (the
 * framework's default format); anything else is 406.
 */
export function negotiate(accept: string | null | undefined): Format {
  if (!accept || accept.trim() === '') return 'jsonld';
  let best: { format: Format; q: number } | undefined;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (!Number.isFinite(q) || q <= 0) continue;
    const format: Format | undefined =
      type === 'application/ld+json'
        ? 'jsonld'
        : type === 'application/json'
          ? 'json'
          : type === '*/*' || type === 'application/*'
            ? 'jsonld'
            : undefined;
    if (format && (!best || q > best.q)) best = { format, q };
  }
  if (!best) {
    throw new ProblemError(
      406,
      `None of the requested media types is available: ${accept}. Use application/ld+json or application/json.`,
    );
  }
  return best.format;
}

/** The page a collection request asks for. */
export interface PageRequest {
  page: number;
  itemsPerPage: number;
}

function positiveInt(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  // Beyond 2^53 - 1 a number loses digits: the `hydra:view` links would name another page
  // (`page=1e%2B26`, `page=Infinity`), which a client following them gets a 400 for.
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new ProblemError(
      400,
      `Query parameter "${name}" must be a positive integer up to ${Number.MAX_SAFE_INTEGER}, "${raw}" given.`,
    );
  }
  return Number(raw);
}

/**
 * Reads `page` (1-based) and `itemsPerPage`; values above `maxPageSize` are clamped to it, as
 * API Platform's `maximum_items_per_page` does; zero, negative or non-numeric values are 400.
 */
export function pageRequest(query: URLSearchParams, pageSize: number, maxPageSize: number): PageRequest {
  const page = positiveInt(query, 'page') ?? 1;
  const itemsPerPage = Math.min(positiveInt(query, 'itemsPerPage') ?? pageSize, maxPageSize);
  return { page, itemsPerPage };
}

/** The slice of `items` a page request selects. */
export function pageOf<T>(items: readonly T[], request: PageRequest): T[] {
  const start = (request.page - 1) * request.itemsPerPage;
  return items.slice(start, start + request.itemsPerPage);
}

export interface CollectionPage {
  /** Request path of the collection, e.g. `/iserv/idm/api/v1/users` or `…/groups/{id}/members`. */
  path: string;
  query: URLSearchParams;
  /** JSON-LD type of the members, e.g. `User`. */
  memberType: string;
  members: unknown[];
  totalItems: number;
  request: PageRequest;
  format: Format;
  /** `hydra:` prefixed keys (API Platform 3) or bare ones (API Platform 4). */
  hydraPrefix: boolean;
}

function pageUrl(path: string, query: URLSearchParams, page: number): string {
  const params = new URLSearchParams(query);
  params.set('page', String(page));
  return `${path}?${params.toString()}`;
}

/**
 * Renders a collection page: a plain array for JSON (no metadata at all, so clients page until
 * a short page), or a Hydra collection with `totalItems` and a `view` with first/last/next/
 * previous links (relative, like API Platform) for JSON-LD.
 */
export function collectionBody(page: CollectionPage): unknown {
  if (page.format === 'json') return page.members;
  const key = (name: string) => (page.hydraPrefix ? `hydra:${name}` : name);
  const lastPage = Math.max(1, Math.ceil(page.totalItems / page.request.itemsPerPage));
  const current = page.request.page;
  const view: Record<string, unknown> = {
    '@id': pageUrl(page.path, page.query, current),
    '@type': key('PartialCollectionView'),
    [key('first')]: pageUrl(page.path, page.query, 1),
    [key('last')]: pageUrl(page.path, page.query, lastPage),
  };
  if (current > 1) view[key('previous')] = pageUrl(page.path, page.query, Math.min(current - 1, lastPage));
  if (current < lastPage) view[key('next')] = pageUrl(page.path, page.query, current + 1);
  return {
    '@context': `${API_BASE}/contexts/${page.memberType}`,
    '@id': page.path,
    '@type': key('Collection'),
    [key('totalItems')]: page.totalItems,
    [key('member')]: page.members,
    [key('view')]: view,
  };
}
