import type { AppConfig } from '../config/load.js';
import { mostSpecific } from '../lib/operation-patterns.js';

/** The headers of an operation that is not deprecated. */
const NONE: readonly (readonly [string, string])[] = [];

/** The deprecation headers of each operation, compiled once from `deprecation.operations`. */
export interface DeprecationHeaders {
  /**
   * The headers of `operation`'s answers (none unless it is deprecated). They are defaults of the
   * answer: one that sets such a header itself (none of the legacy operations does) keeps its own.
   */
  headersOf(operation: string): readonly (readonly [name: string, value: string])[];
}

/**
 * Compiles `deprecation.operations` (operation id, glob or `*` → deprecation, sunset, link) into
 * `Deprecation: @<epoch seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594) and `Link` with
 * `rel="deprecation"` (and `rel="sunset"` when a sunset is set), for each legacy operation once:
 * the most specific pattern wins (an exact id over `group.*` over `*`).
 */
export function compileDeprecation(config: AppConfig, operationIds: readonly string[]): DeprecationHeaders {
  const patterns = new Map<string, [string, string][]>();
  for (const [pattern, entry] of Object.entries(config.deprecation.operations)) {
    const headers: [string, string][] = [
      ['Deprecation', `@${Math.floor(Date.parse(entry.deprecation) / 1000)}`],
    ];
    if (entry.sunset !== undefined)
      headers.push(['Sunset', new Date(Date.parse(entry.sunset)).toUTCString()]);
    if (entry.link !== undefined) {
      // As a URI reference (RFC 8288): percent-encoded, so a `>`, a space or a `ü` of the page's
      // address neither ends the reference nor reaches the header as raw bytes.
      const link = new URL(entry.link).href;
      const links = [`<${link}>; rel="deprecation"`];
      if (entry.sunset !== undefined) links.push(`<${link}>; rel="sunset"`);
      headers.push(['Link', links.join(', ')]);
    }
    patterns.set(pattern, headers);
  }
  const compiled = new Map<string, [string, string][]>();
  for (const id of operationIds) {
    const pattern = mostSpecific(patterns.keys(), id);
    const headers = pattern === undefined ? undefined : patterns.get(pattern);
    if (headers) compiled.set(id, headers);
  }
  return {
    headersOf: (operation) => compiled.get(operation) ?? NONE,
  };
}
