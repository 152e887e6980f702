import { z } from 'zod';

/**
 * The report of a comparison, shared by `idm-compat compare` (two recordings) and the shadow
 * mode (`idm-compat shadow report`, the migration dashboard). Both count `skipped`: requests not
 * compared (compare: an answer recorded without its body; shadow: not sampled, a write, over the
 * bounds); the shadow mode also counts `errors` (the translation failed or timed out).
 */

/** One difference: where, and the (redacted) value on each side; a side without the value omits it. */
export const differenceSchema = z.object({
  path: z.string().describe('`status`, or a JSON path into the body such as $.users[2]'),
  a: z.unknown().optional(),
  b: z.unknown().optional(),
});

/** A difference between two answers. */
export type Difference = z.infer<typeof differenceSchema>;

/** A request whose two answers differed, with the differences (redacted). */
export const sampleSchema = z.object({
  requestId: z.string(),
  method: z.string(),
  path: z.string(),
  query: z.string(),
  requestBody: z.unknown(),
  status: z.object({ a: z.int(), b: z.int() }),
  differences: z.array(differenceSchema),
  /** Differences left out of `differences` to keep the sample short. */
  moreDifferences: z.int().min(0),
});

/** A sample difference. */
export type Sample = z.infer<typeof sampleSchema>;

const counts = {
  pairs: z.int().min(0).describe('Requests answered by both sides and compared (matched + mismatched)'),
  matched: z.int().min(0),
  mismatched: z.int().min(0),
  rate: z.number().min(0).max(1).nullable().describe('matched / pairs; null without pairs'),
  onlyA: z.int().min(0).describe('Requests only in A (compare) — unpaired'),
  onlyB: z.int().min(0).describe('Requests only in B (compare) — unpaired'),
  errors: z.int().min(0).optional().describe('Shadow: comparisons that could not be made'),
  skipped: z
    .int()
    .min(0)
    .optional()
    .describe(
      'Requests not compared, in no rate. Compare: pairs with an answer recorded without its body (too large, too deep); shadow: not sampled, writes, over the bounds',
    ),
};

/** The figures of one operation. */
export const operationReportSchema = z.object({
  operation: z.string(),
  ...counts,
  paths: z
    .array(z.object({ path: z.string(), count: z.int().min(1) }))
    .describe('Most frequent differing paths (indices as [*]), counted once per request'),
  samples: z.array(sampleSchema),
});

/** The figures of one operation. */
export type OperationReport = z.infer<typeof operationReportSchema>;

/** A whole report: per operation (sorted by id) and the totals. */
export const compareReportSchema = z.object({
  operations: z.array(operationReportSchema),
  totals: z.object(counts),
});

/** A whole report. */
export type CompareReport = z.infer<typeof compareReportSchema>;
