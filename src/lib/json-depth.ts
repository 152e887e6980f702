/**
 * Whether a parsed JSON value nests arrays and objects more than `max` levels deep (`[]` and `{}`
 * are one level, `[[1]]` two, a string or number none). It walks without recursion and stops at
 * the first level past `max`, so a value of any depth is safe to ask about — unlike the
 * recursive walks (redaction, normalisation, comparison) that a value too deep would overflow.
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { node, depth } = item;
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const inner of Array.isArray(node) ? node : Object.values(node)) {
      if (inner !== null && typeof inner === 'object') stack.push({ node: inner, depth: depth + 1 });
    }
  }
  return false;
}
