import { type AppConfig, ConfigError } from '../config/load.js';

/** The deprecation headers of each operation, compiled once from `deprecation.operations`. */
export interface DeprecationHeaders {
  /** Sets the headers of `operation` (if it is deprecated) on an answer. */
  apply(operation: string, headers: Headers): void;
}

/**
 * Compiles `deprecation.operations` (operation id or `*` → deprecation, sunset, link) into
 * `Deprecation: @<epoch seconds>` (RFC 9745), `Sunset: <HTTP-date>` (RFC 8594) and `Link` with
 * `rel="deprecation"` (and `rel="sunset"` when a sunset is set). An exact id wins over `*`. An id
 * that names no operation is refused at start-up, so a typo cannot silently deprecate nothing.
 */
export function compileDeprecation(config: AppConfig, operationIds: readonly string[]): DeprecationHeaders {
  const known = new Set(operationIds);
  const compiled = new Map<string, [string, string][]>();
  for (const [id, entry] of Object.entries(config.deprecation.operations)) {
    if (id !== '*' && !known.has(id)) {
      throw new ConfigError(config.source ?? '(embedded defaults)', [
        {
          path: `deprecation.operations.${id}`,
          message: 'no legacy operation has this id (see docs/cli.md, usage)',
        },
      ]);
    }
    const headers: [string, string][] = [
      ['Deprecation', `@${Math.floor(Date.parse(entry.deprecation) / 1000)}`],
    ];
    if (entry.sunset !== undefined)
      headers.push(['Sunset', new Date(Date.parse(entry.sunset)).toUTCString()]);
    if (entry.link !== undefined) {
      const links = [`<${entry.link}>; rel="deprecation"`];
      if (entry.sunset !== undefined) links.push(`<${entry.link}>; rel="sunset"`);
      headers.push(['Link', links.join(', ')]);
    }
    compiled.set(id, headers);
  }
  const fallback = compiled.get('*');
  return {
    apply(operation, headers) {
      const found = compiled.get(operation) ?? (known.has(operation) ? fallback : undefined);
      if (!found) return;
      for (const [name, value] of found) {
        if (name === 'Link') headers.append(name, value);
        else headers.set(name, value);
      }
    },
  };
}
