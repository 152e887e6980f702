import { redactLeaves, redactPath, redactQuery, redactValue, setMember } from '../lib/redact.js';
import type { CompareRules, Normalise, ResolvedRule } from './compare-rules.js';
import { formatPath, generalisePath, matchesAnyPath, type PathKey } from './json-path.js';
import {
  NO_SECRET_BODIES,
  type RecordedExchange,
  redactedRequestBody,
  type SecretBodies,
} from './recording.js';
import type { CompareReport, Difference, OperationReport, Sample } from './report.js';

/** The outcome of comparing two answers to the same request. */
export type Comparison = { match: true } | { match: false; differences: Difference[]; paths: string[] };

/** What the two sides answered: status and parsed body. */
export interface Answer {
  status: number;
  body: unknown;
}

// Keys whose values are legacy IDs, and keys whose values are lists of legacy IDs
// (`idsCaseInsensitive`).
const ID_KEYS = new Set(['_id', 'createdBy', 'deletedBy', 'owner']);
const ID_LIST_KEYS = new Set(['roles', 'groups', 'privileges', 'users', 'flags']);
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/i;
const MISSING = Symbol('missing');

/** Applies the normalisation switches to a body (a copy; the input is not changed). */
export function normaliseBody(value: unknown, normalise: Normalise): unknown {
  const walk = (node: unknown, key: PathKey | undefined, parentKey: PathKey | undefined): unknown => {
    if (typeof node === 'string') {
      let text = node;
      if (normalise.trimTrailingWhitespace) text = text.trimEnd();
      if (DATE_TIME.test(text)) {
        if (normalise.dateTimesToUtc) {
          const time = exactInstant(text);
          if (time !== undefined) text = time.toISOString();
        }
        if (normalise.datesToDay) text = text.slice(0, 10);
      }
      const isId =
        (typeof key === 'string' && ID_KEYS.has(key)) ||
        (typeof key === 'number' && typeof parentKey === 'string' && ID_LIST_KEYS.has(parentKey));
      if (normalise.idsCaseInsensitive && isId) text = text.toLowerCase();
      return text;
    }
    if (Array.isArray(node)) return node.map((item, index) => walk(item, index, key));
    if (node !== null && typeof node === 'object') {
      const out: Record<string, unknown> = {};
      for (const [name, inner] of Object.entries(node)) setMember(out, name, walk(inner, name, key));
      return out;
    }
    return node;
  };
  return walk(value, undefined, undefined);
}

/**
 * The instant a date-time (DATE_TIME) names, when every part of it is real (a day its month has,
 * hours below 24, minutes and seconds below 60) and Date holds it exactly (no digits past the
 * milliseconds but zeros); else undefined, and it is compared as written. Date rolls `02-30` over
 * to 1 March and `24:00` to the next day, and cuts microseconds: two answers that differ would
 * have compared the same.
 */
function exactInstant(text: string): Date | undefined {
  const parts = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?/i.exec(text);
  if (!parts) return undefined;
  const [year = 0, month = 0, day, hours, minutes, seconds] = parts
    .slice(1, 7)
    .map((part) => (part === undefined ? 0 : Number(part)));
  if ((parts[7] ?? '').replace(/0+$/, '').length > 3) return undefined;
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hours ?? 0, minutes, seconds);
  const real =
    wall.getUTCFullYear() === year &&
    wall.getUTCMonth() === month - 1 &&
    wall.getUTCDate() === day &&
    wall.getUTCHours() === hours &&
    wall.getUTCMinutes() === minutes &&
    wall.getUTCSeconds() === seconds;
  const time = new Date(text);
  return real && !Number.isNaN(time.getTime()) ? time : undefined;
}

/** JSON with object keys sorted: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, inner]) => inner !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// Unordered arrays: entities with distinct `_id`s are paired by it (so one changed field shows at
// the same element); any other array as a multiset (see `unmatched`).
/** The items by their `_id` when every one is an object with a distinct string `_id`; else undefined. */
function entityIds(items: unknown[]): Map<string, unknown> | undefined {
  const byId = new Map<string, unknown>();
  for (const item of items) {
    const id = isPlainObject(item) ? item._id : undefined;
    if (typeof id !== 'string' || byId.has(id)) return undefined;
    byId.set(id, item);
  }
  return byId;
}

/** An item of an unordered array: its index in its answer and its comparable form. */
interface Keyed {
  item: unknown;
  index: number;
  key: string;
}

/**
 * The items of each side that the other has no equal of (by `key`, each equal item matching one),
 * aligned for pairing: the same index on both sides is a pair. Items with the same `_id` pair
 * first (in sorted order), then what is left of every group, by `_id` and then `key`; the longer
 * side's last items are unpaired.
 */
function unmatched(xs: Keyed[], ys: Keyed[]): [Keyed[], Keyed[]] {
  const waiting = new Map<string, { items: Keyed[]; taken: number }>();
  for (const y of ys) {
    const same = waiting.get(y.key);
    if (same) same.items.push(y);
    else waiting.set(y.key, { items: [y], taken: 0 });
  }
  const leftX: Keyed[] = [];
  for (const x of xs) {
    const equal = waiting.get(x.key);
    if (equal && equal.taken < equal.items.length) equal.taken += 1;
    else leftX.push(x);
  }
  const leftY = [...waiting.values()].flatMap(({ items, taken }) => items.slice(taken));
  const byId = (items: Keyed[]) => {
    const groups = new Map<string, Keyed[]>();
    for (const item of items.sort(inPairingOrder)) {
      const group = groups.get(idOf(item));
      if (group) group.push(item);
      else groups.set(idOf(item), [item]);
    }
    return groups;
  };
  const [groupsX, groupsY] = [byId(leftX), byId(leftY)];
  // Item by item, never spread into a call: a list of 200,000 unmatched items overflowed the stack.
  const [pairedX, pairedY, restX, restY]: Keyed[][] = [[], [], [], []];
  for (const [id, group] of groupsX) {
    const other = groupsY.get(id) ?? [];
    for (const [i, item] of group.entries()) (i < other.length ? pairedX : restX).push(item);
    for (const [i, item] of other.entries()) (i < group.length ? pairedY : restY).push(item);
  }
  for (const [id, group] of groupsY) if (!groupsX.has(id)) for (const item of group) restY.push(item);
  return [pairedX.concat(restX.sort(inPairingOrder)), pairedY.concat(restY.sort(inPairingOrder))];
}

/** An unordered item's group for pairing: its `_id`, or none. */
function idOf({ item }: Keyed): string {
  return isPlainObject(item) && typeof item._id === 'string' ? `0${item._id}` : '1';
}

/** By `_id` (items without one last), then by comparable form. */
function inPairingOrder(a: Keyed, b: Keyed): number {
  const [ia, ib] = [idOf(a), idOf(b)];
  return ia < ib ? -1 : ia > ib ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Compares two answers under one operation's rule: status first, then the normalised bodies,
 * redacted by key name, and with every value redacted when the answer is a secret wherever it
 * sits (`secretAnswer`: a password reset's), so that only their shapes are compared and no
 * difference shows a password.
 */
export function compareAnswers(a: Answer, b: Answer, rule: ResolvedRule, secretAnswer = false): Comparison {
  if (a.status !== b.status) {
    return { match: false, differences: [{ path: 'status', a: a.status, b: b.status }], paths: ['status'] };
  }
  const differences: Difference[] = [];
  const paths = new Set<string>();
  const redact = secretAnswer ? (body: unknown) => redactLeaves(redactValue(body)) : redactValue;
  const left = normaliseBody(redact(a.body ?? null), rule.normalise);
  const right = normaliseBody(redact(b.body ?? null), rule.normalise);
  const differ = (keys: PathKey[], x: unknown, y: unknown) => {
    const difference: Difference = { path: formatPath(keys) };
    if (x !== MISSING) difference.a = x;
    if (y !== MISSING) difference.b = y;
    differences.push(difference);
    paths.add(generalisePath(keys));
  };
  const walk = (keys: PathKey[], x: unknown, y: unknown) => {
    if (matchesAnyPath(rule.ignore, keys)) return;
    if (Array.isArray(x) && Array.isArray(y)) {
      const unordered = rule.unorderedArrays === true || matchesAnyPath(rule.unorderedArrays, keys);
      // Entities with legacy IDs are paired by `_id`: one extra or missing entity is one
      // difference, not a shift of every entity after it. A difference is reported at the
      // entity's index in A's answer, where a reader finds it; an entity only B has comes after
      // A's, in B's order, as an extra item of an ordered array does.
      const xIds = unordered ? entityIds(x) : undefined;
      const yIds = xIds ? entityIds(y) : undefined;
      if (xIds && yIds) {
        let index = 0;
        for (const [id, item] of xIds) walk([...keys, index++], item, yIds.has(id) ? yIds.get(id) : MISSING);
        for (const [id, item] of yIds) if (!xIds.has(id)) walk([...keys, index++], MISSING, item);
        return;
      }
      if (unordered) {
        // As multisets: an item of A that B has too (equal but for what is ignored) is matched
        // and left; the rest are paired in sorted order (by `_id`, then by their JSON), so one odd
        // item is one difference, not a shift of the items after it. Reported at the item's index
        // in A's answer, B's unmatched items after A's, as entities paired by `_id` are.
        const [xs, ys] = unmatched(
          x.map((item, index) => ({ item, index, key: comparable([...keys, index], item) })),
          y.map((item, index) => ({ item, index, key: comparable([...keys, index], item) })),
        );
        let extra = x.length;
        for (let i = 0; i < Math.max(xs.length, ys.length); i += 1) {
          const left = xs[i];
          const right = ys[i];
          walk(
            [...keys, left ? left.index : extra++],
            left ? left.item : MISSING,
            right ? right.item : MISSING,
          );
        }
        return;
      }
      for (let i = 0; i < Math.max(x.length, y.length); i += 1) {
        walk([...keys, i], i < x.length ? x[i] : MISSING, i < y.length ? y[i] : MISSING);
      }
      return;
    }
    if (isPlainObject(x) && isPlainObject(y)) {
      const names = new Set([...Object.keys(x), ...Object.keys(y)]);
      for (const name of names) {
        walk(
          [...keys, name],
          Object.hasOwn(x, name) ? x[name] : MISSING,
          Object.hasOwn(y, name) ? y[name] : MISSING,
        );
      }
      return;
    }
    if (x === y) return;
    if (x !== MISSING && y !== MISSING && canonicalJson(x) === canonicalJson(y)) return;
    differ(keys, x, y);
  };
  /** A value as the comparison sees it: canonical JSON without what `ignore` names, unordered arrays sorted. */
  const comparable = (keys: PathKey[], value: unknown): string => {
    if (Array.isArray(value)) {
      const items = value.map((item, index) => comparable([...keys, index], item));
      const unordered = rule.unorderedArrays === true || matchesAnyPath(rule.unorderedArrays, keys);
      return `[${(unordered ? items.sort() : items).join(',')}]`;
    }
    if (isPlainObject(value)) {
      const names = Object.keys(value)
        .sort()
        .filter((name) => !matchesAnyPath(rule.ignore, [...keys, name]));
      return `{${names.map((name) => `${JSON.stringify(name)}:${comparable([...keys, name], value[name])}`).join(',')}}`;
    }
    return canonicalJson(value);
  };
  walk([], left, right);
  return differences.length === 0 ? { match: true } : { match: false, differences, paths: [...paths] };
}

/**
 * Compares two recorded exchanges of the same request under `rules`; undefined when they cannot
 * be compared: the same status, and a side's body was recorded as null only because it was too
 * large or too deep to keep (`responseBodyOmitted`), so two such nulls say nothing of the answers.
 * A different status is a difference whatever the bodies.
 */
export function compareExchanges(
  a: RecordedExchange,
  b: RecordedExchange,
  rules: CompareRules,
  secrets: SecretBodies = NO_SECRET_BODIES,
): Comparison | undefined {
  const omitted = a.responseBodyOmitted !== undefined || b.responseBodyOmitted !== undefined;
  if (omitted && a.status === b.status) return undefined;
  return compareAnswers(
    { status: a.status, body: a.responseBody },
    { status: b.status, body: b.responseBody },
    rules.forOperation(a.operation),
    secrets.answers.has(a.operation),
  );
}

/** Two exchanges of the same request, one from each recording. */
export interface ExchangePair {
  a: RecordedExchange;
  b: RecordedExchange;
}

/**
 * Pairs the exchanges of two recordings: by request id first, then the rest in order within
 * (operation, method, path). An id pairs two exchanges only when their operation, method and path
 * agree too: a caller may send one `X-Request-Id` for a whole batch run, which the proxy keeps.
 * What stays alone is returned as `onlyA`/`onlyB`.
 */
export function pairExchanges(
  as: readonly RecordedExchange[],
  bs: readonly RecordedExchange[],
): { pairs: ExchangePair[]; onlyA: RecordedExchange[]; onlyB: RecordedExchange[] } {
  // Paths as a recording writes them now (redactPath): one recorded before a credential in a path
  // was redacted still pairs with its replay, which is written redacted.
  const keyOf = (e: RecordedExchange) => JSON.stringify([e.operation, e.method, redactPath(e.path)]);
  const idKeyOf = (e: RecordedExchange) =>
    JSON.stringify([e.requestId, e.operation, e.method, redactPath(e.path)]);
  const byId = new Map<string, number[]>();
  bs.forEach((b, index) => {
    const list = byId.get(idKeyOf(b));
    if (list) list.push(index);
    else byId.set(idKeyOf(b), [index]);
  });
  const usedB = new Set<number>();
  const pairs: ExchangePair[] = [];
  const restA: RecordedExchange[] = [];
  for (const a of as) {
    const index = byId.get(idKeyOf(a))?.shift();
    const b = index === undefined ? undefined : bs[index];
    if (index !== undefined && b !== undefined) {
      usedB.add(index);
      pairs.push({ a, b });
    } else restA.push(a);
  }
  const queues = new Map<string, RecordedExchange[]>();
  bs.forEach((b, index) => {
    if (usedB.has(index)) return;
    const queue = queues.get(keyOf(b));
    if (queue) queue.push(b);
    else queues.set(keyOf(b), [b]);
  });
  const onlyA: RecordedExchange[] = [];
  for (const a of restA) {
    const b = queues.get(keyOf(a))?.shift();
    if (b) pairs.push({ a, b });
    else onlyA.push(a);
  }
  return { pairs, onlyA, onlyB: [...queues.values()].flat() };
}

/**
 * A sample of a request whose answers differed, redacted as a recording line is: its path and
 * query (a token in `?token=…`), its body, and the values in the differences (already redacted by
 * {@link compareAnswers}); at most `differencesPerSample` differences, the rest counted.
 */
export function sampleOf(
  request: Pick<RecordedExchange, 'requestId' | 'operation' | 'method' | 'path' | 'query' | 'requestBody'>,
  status: Sample['status'],
  comparison: Extract<Comparison, { match: false }>,
  differencesPerSample: number,
  secrets: SecretBodies,
): Sample {
  return {
    requestId: request.requestId,
    method: request.method,
    path: redactPath(request.path),
    query: redactQuery(request.query),
    requestBody: redactedRequestBody({ ...request, requestBody: request.requestBody ?? null }, secrets),
    status,
    differences: comparison.differences.slice(0, differencesPerSample),
    moreDifferences: Math.max(0, comparison.differences.length - differencesPerSample),
  };
}

/** Limits of a report. */
export interface ReportLimits {
  /** Differing paths listed per operation (default 10). */
  paths?: number;
  /** Sample differences kept per operation (default 5). */
  samples?: number;
  /** Differences listed per sample (default 20). */
  differencesPerSample?: number;
}

interface Tally {
  pairs: number;
  matched: number;
  onlyA: number;
  onlyB: number;
  errors: number;
  skipped: number;
  paths: Map<string, number>;
  samples: Sample[];
}

/**
 * Accumulates comparisons into a report, one request at a time (compare runs it over two
 * recordings; the shadow mode feeds it as answers come in).
 */
export class ReportBuilder {
  private readonly tallies = new Map<string, Tally>();
  private readonly limits: Required<ReportLimits>;
  private readonly withShadowCounts: boolean;
  private readonly secrets: SecretBodies;

  constructor(
    limits: ReportLimits = {},
    options: {
      shadow?: boolean;
      /** Operations whose request body a sample keeps only as `"[redacted]"` (`compare` passes the password operations). */
      secrets?: SecretBodies;
    } = {},
  ) {
    this.limits = { paths: 10, samples: 5, differencesPerSample: 20, ...limits };
    this.withShadowCounts = options.shadow ?? false;
    this.secrets = options.secrets ?? NO_SECRET_BODIES;
  }

  private tally(operation: string): Tally {
    let tally = this.tallies.get(operation);
    if (!tally) {
      tally = {
        pairs: 0,
        matched: 0,
        onlyA: 0,
        onlyB: 0,
        errors: 0,
        skipped: 0,
        paths: new Map(),
        samples: [],
      };
      this.tallies.set(operation, tally);
    }
    return tally;
  }

  /** Counts one compared request (`a` is the request whose answer side A gave). */
  add(a: RecordedExchange, bStatus: number, comparison: Comparison): void {
    const tally = this.tally(a.operation);
    tally.pairs += 1;
    if (comparison.match) {
      tally.matched += 1;
      return;
    }
    for (const path of comparison.paths) tally.paths.set(path, (tally.paths.get(path) ?? 0) + 1);
    if (tally.samples.length < this.limits.samples) {
      tally.samples.push(
        sampleOf(a, { a: a.status, b: bStatus }, comparison, this.limits.differencesPerSample, this.secrets),
      );
    }
  }

  /** Counts a request only one side answered. */
  addUnpaired(operation: string, side: 'a' | 'b'): void {
    const tally = this.tally(operation);
    if (side === 'a') tally.onlyA += 1;
    else tally.onlyB += 1;
  }

  /** Counts a request that could not be compared (shadow: translation failed or timed out). */
  addError(operation: string): void {
    this.tally(operation).errors += 1;
  }

  /**
   * Counts a request left uncompared: in compare a pair whose answer was recorded without its
   * body (too large or too deep); in shadow mode one not sampled, a write, or over the bounds.
   */
  addSkipped(operation: string): void {
    this.tally(operation).skipped += 1;
  }

  /** The report so far. */
  report(): CompareReport {
    const operations: OperationReport[] = [...this.tallies.entries()]
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([operation, t]) => ({
        operation,
        ...this.counts(t),
        paths: [...t.paths.entries()]
          .sort(([p, m], [q, n]) => n - m || (p < q ? -1 : p > q ? 1 : 0))
          .slice(0, this.limits.paths)
          .map(([path, count]) => ({ path, count })),
        samples: t.samples,
      }));
    const sum = (pick: (t: Tally) => number) => [...this.tallies.values()].reduce((s, t) => s + pick(t), 0);
    const totals = this.counts({
      pairs: sum((t) => t.pairs),
      matched: sum((t) => t.matched),
      onlyA: sum((t) => t.onlyA),
      onlyB: sum((t) => t.onlyB),
      errors: sum((t) => t.errors),
      skipped: sum((t) => t.skipped),
      paths: new Map(),
      samples: [],
    });
    return { operations, totals };
  }

  private counts(t: Tally) {
    return {
      pairs: t.pairs,
      matched: t.matched,
      mismatched: t.pairs - t.matched,
      rate: t.pairs === 0 ? null : t.matched / t.pairs,
      onlyA: t.onlyA,
      onlyB: t.onlyB,
      ...(this.withShadowCounts ? { errors: t.errors } : {}),
      skipped: t.skipped,
    };
  }
}

/** Compares two recordings: pairs their exchanges and builds the per-operation report. */
export function compareRecordings(
  as: readonly RecordedExchange[],
  bs: readonly RecordedExchange[],
  rules: CompareRules,
  limits: ReportLimits = {},
  /**
   * Operations whose request body a sample keeps only as `"[redacted]"`, and whose answers are
   * compared by shape only: the password operations.
   */
  secrets: SecretBodies = NO_SECRET_BODIES,
): CompareReport {
  const builder = new ReportBuilder(limits, { secrets });
  const { pairs, onlyA, onlyB } = pairExchanges(as, bs);
  for (const { a, b } of pairs) {
    const comparison = compareExchanges(a, b, rules, secrets);
    // Not a match, not a mismatch: neither counts in the rate.
    if (comparison === undefined) builder.addSkipped(a.operation);
    else builder.add(a, b.status, comparison);
  }
  for (const a of onlyA) builder.addUnpaired(a.operation, 'a');
  for (const b of onlyB) builder.addUnpaired(b.operation, 'b');
  return builder.report();
}
