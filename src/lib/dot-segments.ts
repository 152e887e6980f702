/**
 * A `.` or `..` path segment, also percent-encoded (`%2e`) or after a backslash: URL parsers
 * resolve all of them (WHATWG URLs take `\` for `/` in http(s) URLs), so a path holding one may
 * lead somewhere other than it reads.
 */
const DOT_SEGMENT = /(?:^|[/\\])(?:\.|%2e){1,2}(?=[/\\?#]|$)/i;

/** Whether `path` holds a `.` or `..` segment that a URL parser would resolve. */
export function hasDotSegment(path: string): boolean {
  return DOT_SEGMENT.test(path);
}
