import { z } from 'zod';
import {
  fitsLegacyIdBytes,
  hasControlCharacter,
  hasLoneSurrogate,
  LEGACY_ID_MAX_BYTES,
  LEGACY_ID_MESSAGES,
} from '../lib/legacy-id.js';

/**
 * The input bounds of the legacy surface, checked by the operations' zod schemas before any
 * successor call and shown in the OpenAPI document (`maxLength`). docs/mappings.md lists them.
 */

/** Account names (user `username`, group `account`) and the names they are derived from: the successor's account limit. */
export const ACCOUNT_MAX = 64;

/**
 * Role names. The default profile derives the role key (the legacy ID) as ROLE_ + the name
 * transliterated, at most five ASCII characters per UTF-16 code unit (㎯ → RADS2): 5 + 5 × 50
 * stays within {@link LEGACY_ID_MAX_BYTES}.
 */
export const ROLE_NAME_MAX = 50;

/** Other writable text fields: the usual column length where the successor documents none. */
export const TEXT_MAX = 255;

/** Refuses control characters (C0, DEL, C1) and unpaired UTF-16 surrogates, which no name may hold. */
export function wellFormed(schema: z.ZodString): z.ZodString {
  return schema
    .refine((value) => !hasControlCharacter(value), LEGACY_ID_MESSAGES.control)
    .refine((value) => !hasLoneSurrogate(value), LEGACY_ID_MESSAGES.surrogate);
}

/**
 * A writable legacy text field: at most `max` UTF-16 code units (an emoji counts two), well-formed,
 * and non-empty unless `empty` allows it.
 */
export function legacyText(max: number, options: { empty?: boolean } = {}): z.ZodString {
  const text = options.empty ? z.string() : z.string().min(1, 'must not be empty');
  return wellFormed(text.max(max, `must be at most ${max} characters`));
}

/**
 * A legacy ID (path or body): non-empty, well-formed, at most {@link LEGACY_ID_MAX_BYTES} bytes
 * URL-encoded — the rule of src/lib/legacy-id.ts, which `ids import` applies too. `what` starts
 * its description (`Legacy user ID`), which states the byte limit: the OpenAPI document gets no
 * `maxLength`, which counts characters and so claimed 255 `ä` (1530 bytes encoded) would do.
 */
export function legacyId(what: string): z.ZodString {
  const { empty, tooLong } = LEGACY_ID_MESSAGES;
  // The byte count after the well-formedness checks (an unpaired surrogate cannot be encoded, and
  // has its own message): the order of the path's own checks, which costs least on every request.
  return wellFormed(z.string().min(1, empty))
    .refine(
      (value) => value.length <= LEGACY_ID_MAX_BYTES && (hasLoneSurrogate(value) || fitsLegacyIdBytes(value)),
      tooLong,
    )
    .describe(
      `${what}: at most ${LEGACY_ID_MAX_BYTES} bytes URL-encoded, as encodeURIComponent encodes it: an ASCII letter or digit or one of \`-_.!~*'()\` is one byte, \`ä\` six (42 at most), without control characters`,
    );
}
