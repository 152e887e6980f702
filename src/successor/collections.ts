import type { Logger } from '../lib/logger.js';
import { UpstreamError } from './errors.js';

/** Fetches one page (an absolute URL on the successor) and resolves with its parsed body. */
export type PageFetcher = (url: URL, signal: AbortSignal) => Promise<unknown>;

/** How collections are read, all defaults applied. */
export interface CollectionSettings {
  /** The successor's base URL: `next` links are only followed on its origin. */
  baseUrl: URL;
  /** Pages fetched at the same time when the total is known. */
  concurrency: number;
  /** Upper bound of pages per collection read, against servers that never stop. */
  maxPages: number;
  /** The query parameter with the page number (the mapping profile's `successor.paging.page`). */
  pageParam: string;
  /** Attribute path with the members' UUIDs (the kind's `uuidAttribute`): members are told apart by `@id` or it. */
  identity?: readonly string[];
  logger: Logger;
}

type Item = Record<string, unknown>;

type Page =
  | { format: 'array'; items: Item[] }
  | { format: 'hydra'; items: Item[]; total: number | undefined; next: string | undefined };

/**
 * Reads every page of a collection starting at `first` (which carries the page size): Hydra
 * with a known total fetches the remaining pages concurrently by `<pageParam>=N`; Hydra without a
 * total follows `next` links sequentially on the same origin only; plain arrays are paged until
 * an empty page or one shorter than the first. A server that returns the same page again, or
 * more than `maxPages` pages, fails with `bad_response` instead of looping.
 */
export async function readAllPages(
  first: URL,
  fetchPage: PageFetcher,
  settings: CollectionSettings,
  signal?: AbortSignal,
): Promise<Item[]> {
  // One internal signal for the whole read: when one concurrent page fails the others stop.
  const controller = new AbortController();
  const combined = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
  const read = (url: URL) => fetchPage(url, combined).then((body) => parsePage(body, url));
  try {
    const firstPage = await read(first);
    let pages: Item[][];
    if (firstPage.format === 'array') {
      pages = await readArrayPages(first, firstPage.items, read, settings);
    } else if (firstPage.total !== undefined) {
      pages = await readCountedPages(first, firstPage.items, firstPage.total, read, settings, controller);
    } else {
      pages = await followNextLinks(first, firstPage, read, settings);
    }
    return dedupe(pages.flat(), first, settings);
  } finally {
    controller.abort();
  }
}

async function readArrayPages(
  first: URL,
  firstItems: Item[],
  read: (url: URL) => Promise<Page>,
  settings: CollectionSettings,
): Promise<Item[][]> {
  const pages = [firstItems];
  if (firstItems.length === 0) return pages;
  let previous = signature(firstItems, settings.identity);
  // Plain arrays carry no metadata: a page shorter than the first one (or an empty one) is the
  // last. The first page may be short because the server caps the page size, so it proves nothing.
  for (let number = 2; ; number++) {
    if (number > settings.maxPages) throw tooManyPages(first, settings.maxPages);
    const url = pageUrl(first, number, settings.pageParam);
    const page = await read(url);
    if (page.format !== 'array') throw badPage(url, 'switched from a plain array to a Hydra collection');
    if (page.items.length === 0) return pages;
    const current = signature(page.items, settings.identity);
    if (current === previous) throw ignoresPage(url);
    previous = current;
    pages.push(page.items);
    if (page.items.length < firstItems.length) return pages;
  }
}

async function readCountedPages(
  first: URL,
  firstItems: Item[],
  total: number,
  read: (url: URL) => Promise<Page>,
  settings: CollectionSettings,
  controller: AbortController,
): Promise<Item[][]> {
  if (firstItems.length >= total) return [firstItems];
  if (firstItems.length === 0) throw badPage(first, `announces ${total} items but its first page is empty`);
  // The server's real page size, which may be smaller than the one asked for.
  const perPage = firstItems.length;
  const pageCount = Math.ceil(total / perPage);
  if (pageCount > settings.maxPages) throw tooManyPages(first, settings.maxPages);

  const pages: Item[][] = [firstItems];
  const firstSignature = signature(firstItems, settings.identity);
  let nextNumber = 2;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && nextNumber <= pageCount) {
      const number = nextNumber++;
      const url = pageUrl(first, number, settings.pageParam);
      try {
        const page = await read(url);
        if (page.format !== 'hydra') throw badPage(url, 'switched from a Hydra collection to a plain array');
        if (page.items.length > 0 && signature(page.items, settings.identity) === firstSignature)
          throw ignoresPage(url);
        pages[number - 1] = page.items;
      } catch (error) {
        // Keep the first failure; the abort stops the pages still running.
        failure ??= { error };
        controller.abort();
      }
    }
  };
  const workers = Array.from({ length: Math.min(settings.concurrency, pageCount - 1) }, worker);
  await Promise.all(workers);
  if (failure !== undefined) throw failure.error;
  return pages;
}

async function followNextLinks(
  first: URL,
  firstPage: Page & { format: 'hydra' },
  read: (url: URL) => Promise<Page>,
  settings: CollectionSettings,
): Promise<Item[][]> {
  const pages = [firstPage.items];
  const visited = new Set([first.href]);
  let previous = signature(firstPage.items, settings.identity);
  let current = first;
  let next = firstPage.next;
  while (next !== undefined) {
    let url: URL;
    try {
      url = new URL(next, current);
    } catch {
      throw badPage(current, `has an unusable next link ${JSON.stringify(next)}`);
    }
    if (url.origin !== settings.baseUrl.origin) {
      // Never send our token (or anything) to a host the configuration did not name.
      throw badPage(current, `links its next page to another origin (${url.origin}); refusing to follow it`);
    }
    if (visited.has(url.href))
      throw badPage(current, `links back to a page already read (${url.pathname}${url.search})`);
    if (visited.size >= settings.maxPages) throw tooManyPages(first, settings.maxPages);
    visited.add(url.href);
    const page = await read(url);
    if (page.format !== 'hydra') throw badPage(url, 'switched from a Hydra collection to a plain array');
    if (page.items.length > 0) {
      const currentSignature = signature(page.items, settings.identity);
      if (currentSignature === previous) throw ignoresPage(url);
      previous = currentSignature;
    }
    pages.push(page.items);
    current = url;
    next = page.next;
  }
  return pages;
}

/** Recognises a plain array or a Hydra collection (`hydra:`-prefixed or not). */
function parsePage(body: unknown, url: URL): Page {
  if (Array.isArray(body)) return { format: 'array', items: items(body, url) };
  if (typeof body !== 'object' || body === null)
    throw badPage(url, 'is neither a JSON array nor a Hydra collection');
  const record = body as Record<string, unknown>;
  const prefix = 'hydra:member' in record ? 'hydra:' : 'member' in record ? '' : undefined;
  if (prefix === undefined) throw badPage(url, 'is neither a JSON array nor a Hydra collection');
  const members = record[`${prefix}member`];
  if (!Array.isArray(members)) throw badPage(url, `has a ${prefix}member that is not an array`);
  const totalValue = record[`${prefix}totalItems`];
  let total: number | undefined;
  if (totalValue !== undefined) {
    if (typeof totalValue !== 'number' || !Number.isInteger(totalValue) || totalValue < 0) {
      throw badPage(url, `has an invalid ${prefix}totalItems`);
    }
    total = totalValue;
  }
  const view = record[`${prefix}view`];
  let next: string | undefined;
  if (typeof view === 'object' && view !== null) {
    const link = (view as Record<string, unknown>)[`${prefix}next`];
    if (typeof link === 'string' && link !== '') next = link;
  }
  return { format: 'hydra', items: items(members, url), total, next };
}

function items(values: unknown[], url: URL): Item[] {
  for (const value of values) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw badPage(url, 'contains a member that is not an object');
    }
  }
  return values as Item[];
}

/** The identity of an item: its JSON-LD `@id`, else the UUID at `path` (the caller's kind), when it has one. */
function identity(item: Item, path: readonly string[] | undefined): string | undefined {
  const iri = item['@id'];
  if (typeof iri === 'string') return `@id:${iri}`;
  if (path === undefined || path.length === 0) return undefined;
  let value: unknown = item;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Item)[key];
  }
  return typeof value === 'string' || typeof value === 'number' ? `${path.join('.')}:${value}` : undefined;
}

/** What a page contains, to notice a server that answers every page with the same items. */
function signature(page: Item[], path: readonly string[] | undefined): string {
  return page.map((item) => identity(item, path) ?? JSON.stringify(item)).join('\n');
}

/** Drops repeated entities (an offset pager shows an item twice when the collection changes while it is read). */
function dedupe(all: Item[], first: URL, settings: CollectionSettings): Item[] {
  const { logger } = settings;
  const seen = new Set<string>();
  const result: Item[] = [];
  for (const item of all) {
    const key = identity(item, settings.identity);
    if (key !== undefined) {
      if (seen.has(key)) continue;
      seen.add(key);
    }
    result.push(item);
  }
  if (result.length < all.length) {
    logger.debug(
      { successor: { path: first.pathname, dropped: all.length - result.length } },
      'duplicate collection items dropped',
    );
  }
  return result;
}

function pageUrl(first: URL, number: number, pageParam: string): URL {
  const url = new URL(first);
  url.searchParams.set(pageParam, String(number));
  return url;
}

function badPage(url: URL, what: string): UpstreamError {
  return new UpstreamError(
    'bad_response',
    `the successor's collection page GET ${url.pathname}${url.search} ${what}`,
    {
      source: 'api',
      method: 'GET',
      path: url.pathname,
    },
  );
}

function ignoresPage(url: URL): UpstreamError {
  return badPage(url, 'repeats the previous page: the successor seems to ignore the page parameter');
}

function tooManyPages(first: URL, maxPages: number): UpstreamError {
  return badPage(first, `needs more than ${maxPages} pages; raise pageSize or narrow the query`);
}
