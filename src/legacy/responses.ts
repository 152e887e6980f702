// zod-openapi's `z`, so the schema carries its component name and is documented once as a $ref.
import { z } from '@hono/zod-openapi';
import type { OperationResponses } from './operation.js';

/** The legacy error body (SPEC 3), for the documented error responses of operations. */
export const legacyErrorSchema = z
  .object({
    code: z.int().describe('The HTTP status code'),
    message: z.string().describe('What went wrong, for a person'),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('Every problem found in the request'),
  })
  .describe('Every error response of the legacy API')
  .openapi('Error');

const ERRORS = {
  400: 'Invalid request: malformed JSON, wrong types, unknown fields, unknown IDs in the body',
  404: 'No entity with this ID',
  502: 'The successor IDM failed or refused the proxy',
  503: "Unavailable for now: no access token could be obtained from the successor IDM, the successor IDM refuses more requests for now (too many requests), or the proxy's store is unavailable (Retry-After where known)",
  504: 'The successor IDM did not answer in time',
} as const;

/**
 * A documented error status, with the common description or with one of the operation's own. A
 * 403 has no common one: what an operation may refuse depends on its kind ({@link forbidden}).
 */
type DocumentedError =
  | keyof typeof ERRORS
  | readonly [status: keyof typeof ERRORS | 403, description: string];

/**
 * The 403 of a write on an entity the successor protects (seed 7: "may not be deleted / updated"),
 * worded for the operation: `forbidden(GROUP_TAG, 'deleted')`, the kind named by its OpenAPI tag.
 * `untilRestored`: the operation also refuses a soft-deleted user until it is restored (the user's
 * update, link changes and password operations); deleting a deleted user again is no change, and a
 * soft-deleted group or role takes its writes, so no other operation says so.
 */
export function forbidden(
  tag: string,
  action: 'deleted' | 'updated' | 'changed',
  options: { untilRestored?: boolean } = {},
): DocumentedError {
  const entity = tag.toLowerCase();
  return [
    403,
    options.untilRestored
      ? `The ${entity} may not be ${action}: the successor protects it, or it is soft-deleted (restore it first)`
      : `The ${entity} may not be ${action} (the successor protects it)`,
  ];
}

/**
 * The documented error responses of an operation, e.g. `errorResponses(400, 404)`, or with a
 * description of its own where the common one does not fit, `errorResponses([400, 'Unknown user …'])`;
 * 502–504 always.
 */
export function errorResponses(...statuses: DocumentedError[]): OperationResponses {
  const out: OperationResponses = {};
  for (const documented of [...statuses, 502, 503, 504] as const) {
    const [status, description] =
      typeof documented === 'number' ? [documented, ERRORS[documented]] : documented;
    out[status] = { description, schema: legacyErrorSchema };
  }
  return out;
}
