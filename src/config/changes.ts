/**
 * The keys, as dotted paths down to `depth` levels (`logging.level`, `server.port`), whose values
 * differ between two configurations: what an operator changed in the file since start-up. Key
 * order does not count; the values are compared, never returned (they may be secrets).
 */
export function changedKeys(before: unknown, after: unknown, depth = 2, prefix = ''): string[] {
  if (depth > 0 && isRecord(before) && isRecord(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((key) =>
      changedKeys(before[key], after[key], depth - 1, prefix === '' ? key : `${prefix}.${key}`),
    );
  }
  return canonical(before) === canonical(after) ? [] : [prefix];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON with every object's keys sorted; `undefined` as itself. */
function canonical(value: unknown): string {
  return (
    JSON.stringify(value, (_key, inner: unknown) =>
      isRecord(inner)
        ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : 1)))
        : inner,
    ) ?? 'undefined'
  );
}
