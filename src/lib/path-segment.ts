/**
 * A path segment as a server reads it, percent-decoded (`%XX` a byte; `+` stays a plus); a
 * malformed escape is taken as written (as hono does).
 */
export function decodedSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
