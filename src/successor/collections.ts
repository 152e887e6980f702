import type { Logger } from '../lib/logger.js';
import { successorRoute } from '../observe/observer.js';
import { asStandingCollectionError, UpstreamError } from './errors.js';
import { type ApiBase, resolveTarget } from './targets.js';

/**
 * Fetches one page (an absolute URL on the successor); resolves, once the page has arrived, with
 * a function that parses its body. A page read ahead is parsed only when its turn comes.
 */
export type PageFetcher = (url: URL, signal: AbortSignal) => Promise<() => unknown>;

/** How collections are read, all defaults applied. */
export interface CollectionSettings {
  /** Where the configured API lives: `next` links are only followed within it (and on the first page's path). */
  apiBase: ApiBase;
  /** Pages fetched at the same time when the total is known. */
  concurrency: number;
  /** Upper bound of pages per collection read, against servers that never stop. */
  maxPages: number;
  /** The query parameter with the page number (the mapping profile's `successor.paging.page`). */
  pageParam: string;
  /** The query parameter with the page size (`successor.paging.itemsPerPage`). */
  itemsPerPageParam?: string;
  /** The page size the first page asked for, when known: a plain array longer than it is unpaginated. */
  pageSize?: number;
  /** Attribute path with the members' UUIDs (the kind's `uuidAttribute`): members are told apart by `@id` or it. */
  identity?: readonly string[];
  /** A collection that is always there: a 404 of its first page is `bad_response` (CollectionReadOptions.standing). */
  standing?: boolean;
  logger: Logger;
  /**
   * The collection routes (`successorRoute`: IDs as `{id}`, so the set stays bounded) whose total
   * that overstates was logged already: once per route and client (a successor's count that stays
   * too high would otherwise warn on every list read).
   */
  toldOverstated?: Set<string>;
}

type Item = Record<string, unknown>;

type HydraPage = { format: 'hydra'; items: Item[]; total: number | undefined; next: string | undefined };
type Page = { format: 'array'; items: Item[] } | HydraPage;

/**
 * A page's items as the generators here pass them on. V8 keeps a suspended generator's registers
 * as they are, with values the generator has already passed on (an awaited page, a call's
 * argument): a page held there stays alive while the next one is awaited, through the
 * young-generation collections of that wait, which copy it, promote it to the old generation and
 * grow the young generation (which the process then keeps). The generators touch pages only
 * inside parcels, the one that takes the items empties the parcel, and only plain functions (whose
 * frames end when they return) unpack and repack them.
 */
class Parcel<T> {
  #value: T | undefined;

  constructor(value: T) {
    this.#value = value;
  }

  /** The contents, once: the parcel is empty afterwards. */
  take(): T {
    const value = this.#value;
    if (value === undefined) throw new Error('a collection page was taken twice');
    this.#value = undefined;
    return value;
  }
}

/** A page read and recognised: its items in a parcel, and what paging needs to know of them. */
interface PageFacts {
  format: Page['format'];
  items: Parcel<Item[]>;
  count: number;
  /** What the page contains (see `signature`); '' for an empty page. */
  signature: string;
  /** A Hydra page's total (hydra:totalItems) and `next` link, when it has them. */
  total: number | undefined;
  next: string | undefined;
}

/** The facts of a page's parsed body; `identity` as in CollectionSettings. */
function pageFacts(body: unknown, url: URL, identity: readonly string[] | undefined): PageFacts {
  const page = parsePage(body, url);
  const hydra = page.format === 'hydra' ? page : undefined;
  return {
    format: page.format,
    items: new Parcel(page.items),
    count: page.items.length,
    signature: page.items.length > 0 ? signature(page.items, identity) : '',
    total: hydra?.total,
    next: hydra?.next,
  };
}

/**
 * Reads every page of a collection starting at `first` (which carries the page size): Hydra
 * with a known total fetches the remaining pages concurrently by `<pageParam>=N`; Hydra without a
 * total follows `next` links sequentially, on the first page's path only; plain arrays are paged until
 * an empty page or one shorter than the first, unless the server does not paginate them (see
 * `readArrayPages`). A server that returns the same page again, or
 * more than `maxPages` pages, fails with `bad_response` instead of looping.
 */
export async function readAllPages(
  first: URL,
  fetchPage: PageFetcher,
  settings: CollectionSettings,
  signal?: AbortSignal,
): Promise<Item[]> {
  const all: Item[] = [];
  // Every item is kept anyway, so every repeat is dropped, however far apart its copies are.
  for await (const page of pagesOf(first, fetchPage, settings, signal, new SeenKeys(Infinity))) {
    for (const item of page.take()) all.push(item);
  }
  return all;
}

/**
 * The keys of the items already passed on, to drop repeats. `window` is how many pages back a
 * repeat is looked for (the current page included); the keys of older pages are let go, so a
 * streamed read holds the keys of a few pages, not of the whole collection.
 */
class SeenKeys {
  #pages: Set<string>[] = [new Set()];

  constructor(readonly window: number) {}

  /** True when `key` was seen within the window (not remembering it). */
  has(key: string): boolean {
    for (const page of this.#pages) if (page.has(key)) return true;
    return false;
  }

  /** True when `key` was seen within the window; otherwise remembers it for the current page. */
  repeated(key: string): boolean {
    for (const page of this.#pages) if (page.has(key)) return true;
    this.#pages[this.#pages.length - 1]?.add(key);
    return false;
  }

  /** Starts the next page, forgetting the oldest beyond the window. */
  nextPage(): void {
    if (this.window === Infinity) return;
    this.#pages.push(new Set());
    if (this.#pages.length > this.window) this.#pages.shift();
  }
}

/**
 * How many pages back a streamed read looks for repeats: the current page and the one before.
 * An offset pager repeats an item when items are inserted before it between two page reads;
 * pages are read close together (several at once), so a repeat further back needs more than a
 * page's worth of inserts in that moment. Keeping the keys of every page instead would hold
 * memory in proportion to the collection (about 14 MB per 100,000 users).
 */
const STREAM_REPEAT_WINDOW = 2;

/**
 * The pages of a collection in order, as `readAllPages` reads them (same checks), each as soon as
 * it and the ones before it have arrived: with a known total, at most `concurrency` pages are
 * fetched ahead of the consumer, so memory stays bounded whatever the collection's size. An item
 * repeated from the same or the previous page is dropped (`STREAM_REPEAT_WINDOW`). Ending the
 * iteration early aborts the pages still running.
 */
export function streamAllPages(
  first: URL,
  fetchPage: PageFetcher,
  settings: CollectionSettings,
  signal?: AbortSignal,
): AsyncGenerator<Item[], void> {
  return mapPages(pagesOf(first, fetchPage, settings, signal, new SeenKeys(STREAM_REPEAT_WINDOW)), (page) =>
    page.take(),
  );
}

async function* pagesOf(
  first: URL,
  fetchPage: PageFetcher,
  settings: CollectionSettings,
  signal: AbortSignal | undefined,
  seen: SeenKeys,
): AsyncGenerator<Parcel<Item[]>, void, undefined> {
  // One internal signal for the whole read: when one concurrent page fails the others stop.
  const controller = new AbortController();
  // A listener removed at the end rather than AbortSignal.any, which keeps what it combines
  // reachable from a long-lived caller signal.
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted) controller.abort(signal.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const fetch = (url: URL) => fetchPage(url, controller.signal);
  const read = (url: URL) => fetch(url).then((body) => pageFacts(body(), url, settings.identity));
  let dropped = 0;
  // An offset pager shows an item twice when the collection changes while it is read: repeated
  // entities are dropped.
  const fresh = (page: Parcel<Item[]>): Parcel<Item[]> => {
    seen.nextPage();
    const result: Item[] = [];
    for (const item of page.take()) {
      const key = identity(item, settings.identity);
      if (key !== undefined && seen.repeated(key)) {
        dropped++;
        continue;
      }
      result.push(item);
    }
    return new Parcel(result);
  };
  // Read to the end, no page is still running, and the abort (which makes a DOMException, stack
  // and all) is spared: only an early end or a failure aborts.
  let complete = false;
  try {
    const firstPage = settings.standing
      ? await read(first).catch((error: unknown) => {
          throw asStandingCollectionError(error);
        })
      : await read(first);
    let pages: AsyncGenerator<Parcel<Item[]>, void, undefined>;
    if (firstPage.format === 'array') {
      pages = readArrayPages(first, firstPage, read, settings);
    } else if (firstPage.total !== undefined) {
      pages = readCountedPages(
        first,
        firstPage,
        firstPage.total,
        { fetch, read },
        settings,
        controller,
        (key) => seen.has(key),
      );
    } else {
      pages = followNextLinks(first, firstPage, read, settings);
    }
    yield* mapPages(pages, fresh);
    complete = true;
    if (dropped > 0) {
      settings.logger.debug(
        { successor: { path: first.pathname, dropped } },
        'duplicate collection items dropped',
      );
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (!complete) controller.abort();
  }
}

/**
 * `map` applied to each page of `pages`, in order. Not a generator (see Parcel): nothing of a page
 * (the one taken, nor what `map` made of it) is held once it is passed on, so it dies young. Like a
 * generator it is done after `return`, `throw` or a failure (of `pages` or of `map`), and closes
 * `pages` then, so that a reader stops the pages it reads ahead. Unlike a generator's, its calls
 * are not queued: a `next` still under way when `return` is called ends with `done`, whether its
 * page then arrives or fails.
 */
export function mapPages<T, U>(
  pages: AsyncIterator<T, void>,
  map: (page: T) => U | Promise<U>,
): AsyncGenerator<U, void> {
  const done: IteratorReturnResult<void> = { done: true, value: undefined };
  let finished = false;
  const close = async (): Promise<IteratorResult<U, void>> => {
    finished = true;
    await pages.return?.();
    return done;
  };
  const mapped: AsyncGenerator<U, void> = {
    async next() {
      if (finished) return done;
      try {
        const next = await pages.next();
        if (next.done || finished) {
          finished = true;
          return done;
        }
        const value = await map(next.value);
        return finished ? done : { done: false, value };
      } catch (error) {
        // After `return` or `throw`, a page that fails (its read stopped by the close) is nobody's.
        if (finished) return done;
        await close().catch(() => undefined);
        throw error;
      }
    },
    return: close,
    async throw(error) {
      await close();
      throw error;
    },
    [Symbol.asyncIterator]() {
      return mapped;
    },
  };
  return mapped;
}

/**
 * Takes the first page now (its failure is the caller's to handle), the others as they are asked
 * for. Closing the result closes `pages`, also before anything was taken from it (a HEAD answer,
 * a caller gone before the first chunk); the first page is let go once handed over (see mapPages).
 */
export async function primed<T>(pages: AsyncGenerator<T, void>): Promise<AsyncGenerator<T, void>> {
  let first: IteratorResult<T, void> | undefined = await pages.next();
  const primedPages: AsyncGenerator<T, void> = {
    next() {
      const taken = first;
      first = undefined;
      return taken === undefined ? pages.next() : Promise.resolve(taken);
    },
    return(value) {
      first = undefined;
      return pages.return(value);
    },
    throw(error) {
      first = undefined;
      return pages.throw(error);
    },
    [Symbol.asyncIterator]() {
      return primedPages;
    },
  };
  return primedPages;
}

async function* readArrayPages(
  first: URL,
  firstPage: PageFacts,
  read: (url: URL) => Promise<PageFacts>,
  settings: CollectionSettings,
): AsyncGenerator<Parcel<Item[]>, void, undefined> {
  const firstCount = firstPage.count;
  yield firstPage.items;
  if (firstCount === 0) return;
  // More than asked for: the server ignores itemsPerPage. If page 2 is empty or the same again,
  // it does not paginate at all (the reference leaves open whether real servers do) and page 1
  // was the whole collection; if page 2 differs, it pages with a size of its own.
  const asked = settings.pageSize;
  const larger = asked !== undefined && firstCount > asked;
  let previous = firstPage.signature;
  // Plain arrays carry no metadata: a page shorter than the first one (or an empty one) is the
  // last. The first page may be short because the server caps the page size, so it proves nothing;
  // the same page again is then an error: the server ignores the page number (a wrong
  // `successor.paging.page`) and may have more, which cannot be told from a server that does not
  // paginate a collection smaller than the page size, and a list cut short is worse than a 502.
  for (let number = 2; ; number++) {
    if (number > settings.maxPages) throw tooManyPages(first, settings.maxPages);
    const url = pageUrl(first, number, settings.pageParam);
    const page = await read(url);
    if (page.format !== 'array') throw badPage(url, 'switched from a plain array to a Hydra collection');
    if (page.count === 0) return;
    if (page.signature === previous) {
      if (number === 2 && larger) return;
      throw ignoresPage(url);
    }
    previous = page.signature;
    yield page.items;
    if (page.count < firstCount) return;
  }
}

/**
 * Pages by number, up to `concurrency` fetched ahead of the consumer. A page that arrives early
 * waits as bytes (outside the JavaScript heap) and is parsed and checked when its turn comes, so
 * the heap holds one parsed page at a time, not every page read ahead. A total counted before
 * items were added is too low: when the last counted page is full and links a next page, the
 * `next` links are followed from there (bounded by `maxPages`), so the list is not cut short.
 */
async function* readCountedPages(
  first: URL,
  firstPage: PageFacts,
  total: number,
  { fetch, read }: { fetch: (url: URL) => Promise<() => unknown>; read: (url: URL) => Promise<PageFacts> },
  settings: CollectionSettings,
  controller: AbortController,
  /** Whether an item of this identity was passed on already (of the pages the repeat check holds). */
  seen: (key: string) => boolean,
): AsyncGenerator<Parcel<Item[]>, void, undefined> {
  const firstCount = firstPage.count;
  if (firstCount >= total) {
    yield firstPage.items;
    // The first page is the last counted one, and as full as the server makes its pages.
    yield* nextPages(first, first, firstPage, read, settings, new VisitedPages(settings.pageParam, [first]));
    return;
  }
  if (firstCount === 0) throw badPage(first, `announces ${total} items but its first page is empty`);
  // The server's real page size, which may be smaller than the one asked for.
  const perPage = firstCount;
  const pageCount = Math.ceil(total / perPage);
  if (pageCount > settings.maxPages) throw tooManyPages(first, settings.maxPages);

  const firstSignature = firstPage.signature;
  const pageAt = countedPages(first, firstPage, settings);
  const running = new Map<number, { url: URL; body: Promise<() => unknown> }>();
  let failure: { error: unknown } | undefined;
  let nextNumber = 2;
  const start = (number: number) => {
    const url = pageAt(number);
    const body = fetch(url);
    // Keep the first failure (the earliest, not the lowest page number); the abort stops the
    // pages still running.
    body.catch((error: unknown) => {
      failure ??= { error };
      controller.abort();
    });
    running.set(number, { url, body });
  };
  yield firstPage.items;
  // The first empty page: the counted pages after it must be empty too. Items deleted while the
  // list is read empty its last pages; an empty page with items after it is a server that skipped
  // a page, and answering without it would drop its items from the list without a word. (More
  // than a page of deletions between the reads of two pages, which run side by side, looks the
  // same: a 502 then too, and the next request reads the list anew.)
  let emptyPage: URL | undefined;
  // Items the counted pages held (the first's included), for the warning of a total that overstates.
  let listed = firstCount;
  // The total of the page before, as it was when that page was read.
  let before = total;
  for (let number = 2; number <= pageCount; number++) {
    while (nextNumber <= pageCount && nextNumber < number + settings.concurrency) start(nextNumber++);
    let page = running.get(number);
    running.delete(number);
    if (!page) break;
    let body: (() => unknown) | undefined;
    try {
      body = await page.body;
    } catch (error) {
      throw failure?.error ?? error;
    }
    let parsed: PageFacts | undefined = checkedPage(page.url, body, firstSignature, settings.identity);
    const url = page.url;
    listed += parsed.count;
    if (parsed.count === 0) emptyPage ??= url;
    else if (emptyPage !== undefined)
      throw badPage(emptyPage, `is empty, but page ${number} after it is not (of ${total} items announced)`);
    // Nothing of this page is held while the next one is awaited: not its bytes, not its items
    // (they leave in a parcel, see Parcel), and its facts only when `next` links are followed from it.
    page = undefined;
    body = undefined;
    const last =
      number === pageCount && parsed.count >= perPage && parsed.next !== undefined ? parsed : undefined;
    const was = before;
    before = parsed.total ?? before;
    const items = parsed.items;
    parsed = undefined;
    // Deleted items shifted the ones after them back, past this page's start (see withShiftedItems).
    yield before < was
      ? await withShiftedItems(pageAt(number - 1), { perPage, was }, read, settings, items, seen)
      : items;
    if (last) {
      const counted = [first];
      for (let n = 2; n <= pageCount; n++) counted.push(pageAt(n));
      yield* nextPages(first, url, last, read, settings, new VisitedPages(settings.pageParam, counted));
    }
  }
  // Empty last pages are items deleted while the list was read (the later pages' totals say so);
  // a total that still overstates by more than a page, after the last page's, is a stale count,
  // which costs a call for every empty page it announces.
  if (emptyPage === undefined || before - listed <= perPage) return;
  const told = settings.toldOverstated;
  const route = successorRoute(first.pathname);
  if (!told?.has(route)) {
    told?.add(route);
    settings.logger.warn(
      { successor: { path: first.pathname, announced: before, listed, pages: pageCount } },
      `collection shorter than the ${before} items its pages announce: ${listed} items on ${pageCount} pages read; the successor's hydra:totalItems overstates, and every page it announces is read (told once per collection route)`,
    );
  }
}

/**
 * The URL of the counted page `n` (1 is `first`, read without a page number). The second page's
 * number is the one the first page's `next` link names, when it names one (a server that counts
 * from 0 links `page=1` there), else 2; the others follow it. Reading `page=2` as the second page
 * of a server that counts from 0 would skip its second page without a word.
 */
function countedPages(first: URL, firstPage: PageFacts, settings: CollectionSettings): (n: number) => URL {
  let second = 2;
  if (firstPage.next !== undefined) {
    try {
      second = pageNumber(new URL(firstPage.next, first), settings.pageParam) ?? 2;
    } catch {
      // An unusable link names no number; it is refused where it is followed.
    }
  }
  return (n) => (n === 1 ? first : pageUrl(first, n - 2 + second, settings.pageParam));
}

/**
 * The next page's items (`next`) after the collection shrank between the reads of the counted
 * page at `url` (of `perPage` items, whose total was `was`) and the next: items were deleted, and
 * an offset pager then shifts the items after them back, so the first items of the next page had
 * moved to the end of the page at `url` when the next page was read, and neither read held them.
 * That page is read again: what it holds after the last item already passed on (`seen`, by
 * identity) moved in from the next page, and goes before the next page's items (repeats among
 * them are dropped as any repeat is). Deletions behind the read position shift nothing: the page
 * read again holds what it held, and adds nothing. One that holds none of the items passed on moved by a page or
 * more: all of it is new when no more than a page was deleted since (the total says so); after
 * more, what moved further back is out of reach: a 502, and the next request reads the list anew.
 * So is a page whose items have no identity to tell them by. (Inserts and deletions that leave
 * the total as it was cannot be told from no change; see docs/mappings.md.)
 */
async function withShiftedItems(
  url: URL,
  { perPage, was }: { perPage: number; was: number },
  read: (url: URL) => Promise<PageFacts>,
  settings: CollectionSettings,
  next: Parcel<Item[]>,
  seen: (key: string) => boolean,
): Promise<Parcel<Item[]>> {
  const again = await read(url);
  const items = again.items.take();
  let lastSeen = -1;
  for (const [index, item] of items.entries()) {
    const key = identity(item, settings.identity);
    if (key === undefined)
      throw badPage(
        url,
        'lost items while the list was read, and its items have no @id to find them by: read the list again',
      );
    if (seen(key)) lastSeen = index;
  }
  if (lastSeen === -1 && items.length > 0 && was - (again.total ?? was) > perPage)
    throw badPage(
      url,
      'holds none of the items it held when it was read: more than a page of items were deleted while the list was read; read the list again',
    );
  return new Parcel([...items.slice(lastSeen + 1), ...next.take()]);
}

/** A page read by number, parsed and checked. */
function checkedPage(
  url: URL,
  body: () => unknown,
  firstSignature: string,
  identity: readonly string[] | undefined,
): PageFacts {
  const page = pageFacts(body(), url, identity);
  if (page.format !== 'hydra') throw badPage(url, 'switched from a Hydra collection to a plain array');
  if (page.count > 0 && page.signature === firstSignature) throw ignoresPage(url);
  return page;
}

async function* followNextLinks(
  first: URL,
  firstPage: PageFacts,
  read: (url: URL) => Promise<PageFacts>,
  settings: CollectionSettings,
): AsyncGenerator<Parcel<Item[]>, void, undefined> {
  yield firstPage.items;
  yield* nextPages(first, first, firstPage, read, settings, new VisitedPages(settings.pageParam, [first]));
}

/**
 * The pages read so far by `next` links, to tell a link back to one of them (a loop), which a
 * server may spell differently than it was first read: its parameters in another order (API
 * Platform writes its links from the parsed query) or some left out. A page is known by its path
 * and its parameters in order (`has`, `add`); a link to a lower page number (`pageParam`) than
 * the page it is on goes back, whatever else it says (`goesBack`). Nothing is assumed of the first
 * page's number (read without one, it may be 0 or 1), nor of links that keep one number (a cursor
 * next to a constant `page=1`): those are judged by their parameters.
 */
class VisitedPages {
  readonly #pages = new Set<string>();

  constructor(
    readonly pageParam: string,
    pages: readonly URL[],
  ) {
    for (const page of pages) this.add(page);
  }

  get size(): number {
    return this.#pages.size;
  }

  /** Whether a page of these path and parameters (in any order) was read. */
  has(url: URL): boolean {
    return this.#pages.has(pageKey(url));
  }

  /** Notes a page read. */
  add(url: URL): void {
    this.#pages.add(pageKey(url));
  }

  /** Whether `link` names a lower page number than `current`, the page it is on. */
  goesBack(current: URL, link: URL): boolean {
    const from = pageNumber(current, this.pageParam);
    const to = pageNumber(link, this.pageParam);
    return from !== undefined && to !== undefined && to < from;
  }
}

/** A page's path and query parameters sorted (by name, then value). */
function pageKey(url: URL): string {
  const params = [...url.searchParams].sort(([a, x], [b, y]) =>
    a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0,
  );
  return `${url.pathname}?${new URLSearchParams(params)}`;
}

/** The page number a URL names in `pageParam` (`02` is 2), undefined when it names none that is a number. */
function pageNumber(url: URL, pageParam: string): number | undefined {
  const value = url.searchParams.get(pageParam);
  return value !== null && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
}

/**
 * The pages after `from` (already read and passed on) by their `next` links, one after the other,
 * on the first page's path only. `visited`: the URLs of the pages read so far (a link back to one
 * is a loop); with them, at most `maxPages` pages.
 */
async function* nextPages(
  first: URL,
  from: URL,
  fromPage: PageFacts,
  read: (url: URL) => Promise<PageFacts>,
  settings: CollectionSettings,
  visited: VisitedPages,
): AsyncGenerator<Parcel<Item[]>, void, undefined> {
  let previous = fromPage.signature;
  let current = from;
  let next = fromPage.next;
  while (next !== undefined) {
    const url = nextPageUrl(first, current, next, settings);
    if (visited.has(url) || visited.goesBack(current, url))
      throw badPage(current, `links back to a page already read (${url.pathname}${url.search})`);
    if (visited.size >= settings.maxPages) throw tooManyPages(first, settings.maxPages);
    visited.add(url);
    const page = await read(url);
    if (page.format !== 'hydra') throw badPage(url, 'switched from a Hydra collection to a plain array');
    if (page.count > 0) {
      if (page.signature === previous) throw ignoresPage(url);
      previous = page.signature;
    }
    yield page.items;
    current = url;
    next = page.next;
  }
}

/**
 * Where a `next` link of `current` leads, checked as every successor call is (resolveTarget: the
 * successor's origin, below the API base path) and then to be the first page's path with the first
 * page's query (see `droppedParameter`): only the page number and size, and parameters it adds (a
 * cursor), may differ. Our token (or anything) never goes to a host or path the configuration did
 * not name, and another collection's members never join this one.
 */
function nextPageUrl(first: URL, current: URL, next: string, settings: CollectionSettings): URL {
  let url: URL;
  try {
    url = new URL(next, current);
  } catch {
    throw badPage(current, `has an unusable next link ${JSON.stringify(next)}`);
  }
  try {
    url = new URL(resolveTarget(settings.apiBase, url.href, undefined).href);
  } catch (error) {
    if (error instanceof UpstreamError)
      throw badPage(current, `links its next page to another origin (${url.origin}); refusing to follow it`);
    // Outside the API base path: refused below like any other path.
  }
  if (url.pathname !== first.pathname)
    throw badPage(
      current,
      `links its next page to another path (${url.pathname}, not ${first.pathname}); refusing to follow it`,
    );
  const dropped = droppedParameter(first, url, settings);
  if (dropped !== undefined)
    throw badPage(
      current,
      `links its next page to another query (without the first page's ${dropped}); refusing to follow it`,
    );
  return url;
}

/**
 * A parameter of the first page's query (a filter, the attributes asked for) that `link` leaves
 * out or changes, as `name=value`; the page number and size are the server's to set. A link
 * without a filter reads another collection (soft-deleted users among the active ones), and one
 * back to the first page in another spelling would read it again.
 */
function droppedParameter(first: URL, link: URL, settings: CollectionSettings): string | undefined {
  for (const name of new Set(first.searchParams.keys())) {
    if (name === settings.pageParam || name === settings.itemsPerPageParam) continue;
    const wanted = first.searchParams.getAll(name).sort();
    const given = link.searchParams.getAll(name).sort();
    if (wanted.length !== given.length || wanted.some((value, i) => value !== given[i]))
      return `${name}=${wanted.join(',')}`;
  }
  return undefined;
}

/**
 * Recognises a plain array or a Hydra collection. Each Hydra key is read with or without the
 * `hydra:` prefix on its own: both spell the same JSON-LD term, and a server may mix them (API
 * Platform 4.0 left it on some keys with `hydra_prefix: false` until a later fix), so a `next`
 * link or a total in the other spelling is not overlooked (which would end the list early).
 */
function parsePage(body: unknown, url: URL): Page {
  if (Array.isArray(body)) return { format: 'array', items: items(body, url) };
  if (typeof body !== 'object' || body === null)
    throw badPage(url, 'is neither a JSON array nor a Hydra collection');
  const record = body as Record<string, unknown>;
  const member = hydraTerm(record, 'member');
  if (member === undefined) throw badPage(url, 'is neither a JSON array nor a Hydra collection');
  const members = member.value;
  if (!Array.isArray(members)) throw badPage(url, `has a ${member.key} that is not an array`);
  const totalValue = hydraTerm(record, 'totalItems');
  let total: number | undefined;
  if (totalValue !== undefined) {
    const { value } = totalValue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      throw badPage(url, `has an invalid ${totalValue.key}`);
    }
    total = value;
  }
  const view = hydraTerm(record, 'view')?.value;
  let next: string | undefined;
  if (typeof view === 'object' && view !== null) {
    const link = hydraTerm(view as Record<string, unknown>, 'next')?.value;
    if (typeof link === 'string' && link !== '') next = link;
  }
  return { format: 'hydra', items: items(members, url), total, next };
}

/** The value of Hydra term `name` in `record`, `hydra:`-prefixed or not (the prefixed one first), and its key. */
function hydraTerm(
  record: Record<string, unknown>,
  name: string,
): { key: string; value: unknown } | undefined {
  const prefixed = `hydra:${name}`;
  if (record[prefixed] !== undefined) return { key: prefixed, value: record[prefixed] };
  if (record[name] !== undefined) return { key: name, value: record[name] };
  return undefined;
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
  return badPage(
    url,
    'repeats the previous page: the successor seems to ignore the page parameter (check successor.paging.page in the mapping profile), or does not paginate a collection smaller than successor.pageSize',
  );
}

function tooManyPages(first: URL, maxPages: number): UpstreamError {
  return badPage(first, `needs more than ${maxPages} pages; raise pageSize or narrow the query`);
}
