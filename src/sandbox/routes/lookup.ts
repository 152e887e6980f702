import { renderEntity } from '../attributes.js';
import type { EntityRecord, GroupRecord, ResourceKind, UserRecord } from '../data.js';
import { ProblemError } from '../problems.js';
import { jsonResponse, renderContext, selectionOf } from './respond.js';
import { defineRoute, type RouteContext, type RouteDef } from './route.js';

/** Edit distance between two strings (insertions, deletions, substitutions). */
export function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The largest edit distance that still counts as a fuzzy match for a query of this length. */
function fuzzyBudget(query: string): number {
  return query.length < 4 ? 1 : 2;
}

/**
 * Sorts candidates into exact (a name equals the query), partial (a name contains it) and fuzzy
 * (a name is within a small edit distance); case-insensitive, each entity in one bucket only.
 */
export function classify<R extends EntityRecord>(
  candidates: readonly R[],
  names: (record: R) => string[],
  query: string,
): { exact: R[]; partial: R[]; fuzzy: R[] } {
  const q = query.trim().toLowerCase();
  const out = { exact: [] as R[], partial: [] as R[], fuzzy: [] as R[] };
  for (const record of candidates) {
    const values = names(record).map((n) => n.toLowerCase());
    if (values.some((n) => n === q)) out.exact.push(record);
    else if (values.some((n) => n.includes(q))) out.partial.push(record);
    else if (values.some((n) => levenshtein(n, q) <= fuzzyBudget(q))) out.fuzzy.push(record);
  }
  return out;
}

function lookup<R extends EntityRecord>(
  ctx: RouteContext<unknown>,
  kind: ResourceKind,
  candidates: readonly R[],
  names: (record: R) => string[],
): Response {
  const query = ctx.query.get('query');
  if (query === null || query.trim() === '') {
    throw new ProblemError(400, 'Query parameter "query" is required.');
  }
  const selection = selectionOf(ctx, kind);
  const render = renderContext(ctx);
  const buckets = classify(candidates, names, query);
  const list = (records: R[]) => records.map((r) => renderEntity(kind, r, selection, render));
  return jsonResponse(ctx, {
    exact: list(buckets.exact),
    partial: list(buckets.partial),
    fuzzy: list(buckets.fuzzy),
  });
}

const queryParam = [{ name: 'query', description: 'Text to look up', required: true }] as const;

const userNames = (u: UserRecord) => [u.user, u.firstname, u.lastname, `${u.firstname} ${u.lastname}`];
const groupNames = (g: GroupRecord) => [g.group, g.name];

/** Lookups: users and groups by name, in exact / partial / fuzzy buckets (soft-deleted ones left out). */
export const lookupRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/lookup/users',
    summary: 'Looks up users by account, first, last or full name',
    tag: 'Lookup',
    attributesOf: 'users',
    query: queryParam,
    response: { status: 200, body: 'lookup', kind: 'users' },
    handle: (ctx) =>
      lookup(
        ctx,
        'users',
        ctx.data.list('users').filter((u) => u.deleted === null),
        userNames,
      ),
  }),
  defineRoute({
    method: 'GET',
    path: '/lookup/groups',
    summary: 'Looks up groups by account or name',
    tag: 'Lookup',
    attributesOf: 'groups',
    query: queryParam,
    response: { status: 200, body: 'lookup', kind: 'groups' },
    handle: (ctx) =>
      lookup(
        ctx,
        'groups',
        ctx.data.list('groups').filter((g) => g.deleted === null),
        groupNames,
      ),
  }),
];
