/** One problem in a mapping profile: the file, the JSON path inside it and what is wrong. */
export interface MappingProblem {
  file: string;
  /** JSON path like `$.fields.status.values`. */
  path: string;
  message: string;
}

/** A mapping profile that cannot be used; the message lists every problem with file, JSON path and reason. */
export class MappingError extends Error {
  override readonly name = 'MappingError';
  constructor(
    readonly profile: string,
    readonly problems: MappingProblem[],
  ) {
    super(
      `invalid mapping profile ${profile}:\n${problems.map((p) => `  ${p.file} ${p.path}: ${p.message}`).join('\n')}`,
    );
  }
}

/** Renders a path of keys and indexes as a JSON path: `['fields', 'status']` → `$.fields.status`. */
export function jsonPath(segments: readonly (string | number)[]): string {
  let out = '$';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment)) out += `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}
