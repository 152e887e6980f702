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
 * URL-encoded — the rule of src/lib/legacy-id.ts, which `ids import` applies too.
 */
export function legacyId(): z.ZodString {
  const { empty, tooLong } = LEGACY_ID_MESSAGES;
  // `max` is implied by the byte cap; it is stated for the OpenAPI document, and the byte check
  // runs only where `max` held and the ID is well-formed (each of those has its own message).
  return wellFormed(z.string().min(1, empty).max(LEGACY_ID_MAX_BYTES, tooLong)).refine(
    (id) => id.length > LEGACY_ID_MAX_BYTES || hasLoneSurrogate(id) || fitsLegacyIdBytes(id),
    tooLong,
  );
}
