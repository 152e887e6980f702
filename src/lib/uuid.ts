import { randomUUID } from 'node:crypto';
import bs58 from 'bs58';

const DASHED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{16,22}$/;

/** Whether `value` is a UUID in the dashed form (any case). */
export function isDashedUuid(value: string): boolean {
  return DASHED.test(value);
}

/**
 * Normalises a UUID given dashed (any case) or base58 (as the IDM API also emits) to the
 * lower-case dashed form; returns undefined when `value` is neither. Base58 is the encoding of
 * the UUID's 16 bytes (bs58: each leading zero byte a `1`; a form padded to 22 characters with
 * `1`s, as Symfony's `toBase58()` writes, decodes the same), so it decodes to exactly 16 bytes: a
 * shorter word of the alphabet (`Mississippihappyday`, most base58 UUIDs cut short by two
 * characters or more) is no UUID, not one with zeros in front. A base58 UUID cut short by one
 * character may still decode to 16 bytes, another UUID: base58 has no check digit to tell.
 */
export function normalizeUuid(value: string): string | undefined {
  if (DASHED.test(value)) return value.toLowerCase();
  if (!BASE58.test(value)) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    return undefined;
  }
  // Padding `1`s beyond the 16 bytes decode to leading zero bytes.
  let start = 0;
  while (bytes.length - start > 16 && bytes[start] === 0) start += 1;
  if (bytes.length - start !== 16) return undefined;
  const hex = Buffer.from(bytes.subarray(start)).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Encodes a dashed UUID in base58, the IDM API's short form. */
export function uuidToBase58(dashed: string): string {
  return bs58.encode(Buffer.from(dashed.replaceAll('-', ''), 'hex'));
}

/** A new random (v4) UUID in dashed form. */
export function newUuid(): string {
  return randomUUID();
}
