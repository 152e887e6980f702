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
  segment: 'must not contain "/" or "\\" nor be "." or ".." (it could not stand in a path)',
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

/**
 * Whether a decoded path segment can be a legacy ID in a path: not a dot segment and without a
 * path separator, which a server that decodes it (`x%2F..%2F..`) could read as another resource.
 * The legacy routes match no such segment (404), so no such ID can name a path entity.
 */
export function isPathSegmentId(id: string): boolean {
  return id !== '.' && id !== '..' && !/[/\\]/.test(id);
}

/** The first reason `id` cannot be a legacy ID (one of {@link LEGACY_ID_MESSAGES}), or undefined. */
export function legacyIdProblem(id: string): string | undefined {
  if (id === '') return LEGACY_ID_MESSAGES.empty;
  if (!isPathSegmentId(id)) return LEGACY_ID_MESSAGES.segment;
  if (hasControlCharacter(id)) return LEGACY_ID_MESSAGES.control;
  if (hasLoneSurrogate(id)) return LEGACY_ID_MESSAGES.surrogate;
  if (!fitsLegacyIdBytes(id)) return LEGACY_ID_MESSAGES.tooLong;
  return undefined;
}
