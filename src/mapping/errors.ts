import type { UpstreamError } from '../successor/errors.js';

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

/**
 * Why a translation failed. The engine knows nothing of HTTP: the HTTP layer maps each code to a
 * legacy status in one place (src/http/errors.ts), and a comparison can tell outcomes apart.
 * - `not_found`: the path entity does not exist;
 * - `invalid_input`: the legacy input cannot be translated (wrong types, unwritable fields);
 * - `unknown_ids`: IDs in the body name nothing; nothing was written;
 * - `partial_failure`: the successor failed after some writes of the call went through;
 * - `unanswered`: every write of the call went through, then its answer failed (reading the
 *   result, assigning its legacy ID); `cause` says why;
 * - `upstream`: the successor failed before anything was written;
 * - `refused`: the path entity's state forbids the operation (`refuseWhen`, e.g. a deleted user); nothing was written;
 * - `profile_error`: the mapping profile cannot serve this operation (an operator's fix).
 */
export type TranslationErrorCode =
  | 'not_found'
  | 'invalid_input'
  | 'unknown_ids'
  | 'partial_failure'
  | 'unanswered'
  | 'refused'
  | 'upstream'
  | 'profile_error';

/** A problem with one part of the input, e.g. `{path: "body.3", message: "no group with ID \"x\""}`. */
export interface InputProblem {
  path: string;
  message: string;
}

/** The error type of the translation engine; `message` is written for the caller and the operator. */
export class TranslationError extends Error {
  override readonly name = 'TranslationError';
  constructor(
    readonly code: TranslationErrorCode,
    message: string,
    readonly details: {
      /** Per-input problems (`invalid_input`, `unknown_ids`; per body ID for `partial_failure`). */
      problems?: InputProblem[];
      /** The successor failure behind `upstream` and `partial_failure`. */
      upstream?: UpstreamError;
      /**
       * The successor's refusals of values (`upstream`, `partial_failure`), their paths in legacy
       * terms (`body.username`; `body` where the field tables cannot tell), never the successor's attribute names.
       */
      violations?: InputProblem[];
      /**
       * `partial_failure`: the body ID whose entity the successor no longer had (it answered 404 to
       * the write naming it alone): the failure is the caller's unknown ID, not an unknown path entity.
       */
      goneItem?: string;
      /** `partial_failure`: the successor failure that stopped the rollback, for the operator's log. */
      rollbackFailure?: UpstreamError;
      /** `partial_failure`: the writes that went through, those that did not, and those whose outcome is unknown. */
      applied?: string[];
      /** `unanswered`: the failure of the answer (a successor or store error). */
      cause?: unknown;
      notApplied?: string[];
      unknown?: string[];
    } = {},
  ) {
    const cause = details.upstream ?? details.cause;
    super(message, cause === undefined ? undefined : { cause });
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
