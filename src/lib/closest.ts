/**
 * Suggestions for a mistyped name: the candidates most like it, for messages that say what there
 * is instead (`…; closest: user.list`). Shared by the live mapping check and the checks of
 * operation ids in the configuration and compare rules.
 */

/** Up to three candidates most like `wanted` (edit distance), for "what it offers instead". */
export function closest(wanted: string, candidates: readonly string[]): string[] {
  return [...candidates]
    .map((candidate) => ({
      candidate,
      distance: editDistance(wanted.toLowerCase(), candidate.toLowerCase()),
    }))
    .sort((a, b) => a.distance - b.distance)
    .slice(0, 3)
    .map((c) => c.candidate);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] ?? 0;
      row[j] = Math.min((row[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] ?? 0;
}
