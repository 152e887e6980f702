/**
 * Operation-id globs (`user.get`, `user.*`, `*`) as used by recording filters, compare rules
 * and per-operation modes. `*` stands for any run of characters, dots included, so `user.*`
 * covers `user.link.groups.add`; every other character matches itself.
 */

/** A pattern compiled once: test ids against it without re-parsing. */
export interface CompiledGlob {
  readonly pattern: string;
  test(id: string): boolean;
}

/** Compiles one operation-id glob. */
export function compileGlob(pattern: string): CompiledGlob {
  const parts = pattern.split('*');
  if (parts.length === 1) return { pattern, test: (id) => id === pattern };
  const regex = new RegExp(`^${parts.map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return { pattern, test: (id) => regex.test(id) };
}

/** Whether `id` matches `pattern`. */
export function matchesGlob(pattern: string, id: string): boolean {
  return compileGlob(pattern).test(id);
}

/** Whether `id` matches any of `patterns`. */
export function matchesAny(patterns: readonly string[], id: string): boolean {
  return patterns.some((pattern) => matchesGlob(pattern, id));
}

/**
 * Orders two patterns by specificity: an exact id beats any glob; among globs the one with more
 * literal characters wins, then the one with fewer `*`. Negative when `a` is more specific.
 */
export function compareSpecificity(a: string, b: string): number {
  const wildcards = (p: string) => p.split('*').length - 1;
  const literal = (p: string) => p.length - wildcards(p);
  const exactA = wildcards(a) === 0;
  const exactB = wildcards(b) === 0;
  if (exactA !== exactB) return exactA ? -1 : 1;
  return literal(b) - literal(a) || wildcards(a) - wildcards(b);
}

/**
 * The most specific of `patterns` that matches `id`, or undefined when none does. Ties (equally
 * specific patterns) go to the one listed first.
 */
export function mostSpecific(patterns: Iterable<string>, id: string): string | undefined {
  let best: string | undefined;
  for (const pattern of patterns) {
    if (!matchesGlob(pattern, id)) continue;
    if (best === undefined || compareSpecificity(pattern, best) < 0) best = pattern;
  }
  return best;
}
