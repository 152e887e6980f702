/**
 * What a legacy ID may be, for every place that takes one: the legacy routes' schemas
 * (src/legacy/limits.ts) and the ID table import (src/mapping/id-import.ts), which must refuse
 * the IDs no legacy call could address. docs/mappings.md "Input limits" describes the rule.
 */

/** Longest legacy ID, in bytes of its URL-encoded form (what goes into a successor URL). */
export const LEGACY_ID_MAX_BYTES = 255;

/** Why a legacy ID is refused, worded for the field it came in. */
export const LEGACY_ID_MESSAGES = {
  empty: 'an ID must not be empty',
  tooLong: `must be at most ${LEGACY_ID_MAX_BYTES} bytes URL-encoded`,
  control: 'must not contain control characters',
  surrogate: 'must not contain unpaired UTF-16 surrogates',
} as const;

// In a `u` regex a paired surrogate is one code point, so \p{Cs} matches only unpaired ones.
const CONTROL = /\p{Cc}/u;
const LONE_SURROGATE = /\p{Cs}/u;

/** Whether `text` holds a control character (C0, DEL, C1), which no name or ID may hold. */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

/** Whether `text` holds an unpaired UTF-16 surrogate (strict JSON decoders refuse it). */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/**
 * Whether a well-formed `id` fits {@link LEGACY_ID_MAX_BYTES} URL-encoded. Every UTF-16 code unit
 * encodes to at least one byte, so a longer string never fits and is not encoded at all.
 */
export function fitsLegacyIdBytes(id: string): boolean {
  return id.length <= LEGACY_ID_MAX_BYTES && encodeURIComponent(id).length <= LEGACY_ID_MAX_BYTES;
}

/** The first reason `id` cannot be a legacy ID (one of {@link LEGACY_ID_MESSAGES}), or undefined. */
export function legacyIdProblem(id: string): string | undefined {
  if (id === '') return LEGACY_ID_MESSAGES.empty;
  if (hasControlCharacter(id)) return LEGACY_ID_MESSAGES.control;
  if (hasLoneSurrogate(id)) return LEGACY_ID_MESSAGES.surrogate;
  if (!fitsLegacyIdBytes(id)) return LEGACY_ID_MESSAGES.tooLong;
  return undefined;
}
