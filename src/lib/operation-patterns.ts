import { closest } from './closest.js';

/**
 * Operation patterns of the configuration (`migration.modes`, `deprecation.operations`,
 * `migration.recording.operations`): an exact operation id (`user.list`), a glob that ends in
 * `.*` (`group.*`, `group.link.*`: every id below that prefix) or `*` (every operation).
 */

/** The syntax of a pattern: `*`, an operation id, or an operation id prefix followed by `.*`. */
export const OPERATION_PATTERN = /^(\*|[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)*(\.\*)?)$/;

/** What {@link OPERATION_PATTERN} asks for, for the message of a pattern that breaks it. */
export const OPERATION_PATTERN_RULE =
  'must be an operation id such as user.list, a glob that ends in .* such as group.* or group.link.*, or *';

/** Whether `pattern` covers the operation `id`. */
export function patternMatches(pattern: string, id: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return id.startsWith(pattern.slice(0, -1));
  return pattern === id;
}

/** How specific a pattern is: an exact id beats any glob, a longer glob beats a shorter one, `*` comes last. */
function specificity(pattern: string): number {
  if (pattern === '*') return 0;
  if (pattern.endsWith('.*')) return pattern.length;
  return Number.MAX_SAFE_INTEGER;
}

/** The most specific of `patterns` that covers `id`, or undefined when none does. */
export function mostSpecific(patterns: Iterable<string>, id: string): string | undefined {
  let best: string | undefined;
  for (const pattern of patterns) {
    if (!patternMatches(pattern, id)) continue;
    if (best === undefined || specificity(pattern) > specificity(best)) best = pattern;
  }
  return best;
}

/**
 * Problems of patterns that cover no operation (a typo would otherwise silently do nothing), by
 * JSON path, each naming the operation ids (or, for a glob, the globs) closest to what was written:
 * `no legacy operation is named "user.lsit"; closest: user.list, …`.
 */
export function unknownPatterns(
  patterns: Iterable<string>,
  ids: readonly string[],
  at: (pattern: string) => string,
): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  for (const pattern of patterns) {
    if (!ids.some((id) => patternMatches(pattern, id))) {
      const near = pattern === '*' ? [] : closest(pattern, pattern.endsWith('.*') ? globsOf(ids) : ids);
      problems.push({
        path: at(pattern),
        message: `no legacy operation is ${pattern.includes('*') ? 'matched by' : 'named'} "${pattern}"${near.length > 0 ? `; closest: ${near.join(', ')}` : ''}`,
      });
    }
  }
  return problems;
}

/** Every glob that covers some of `ids` (`user.*`, `user.link.*`, …), for suggestions. */
function globsOf(ids: readonly string[]): string[] {
  const globs = new Set<string>();
  for (const id of ids) {
    const parts = id.split('.');
    for (let n = 1; n < parts.length; n += 1) globs.add(`${parts.slice(0, n).join('.')}.*`);
  }
  return [...globs];
}
