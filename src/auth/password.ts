import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * scrypt cost: N = 2^15, r = 8, p = 1 (32 MiB, ~50 ms on one core). The passwords are generated
 * with 192 bits of entropy, so the KDF is defence in depth, not what stops guessing; the cost is
 * stored with each hash, so it can be raised later without invalidating existing users.
 */
const DEFAULT_PARAMS = { log2N: 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
/** Generated passwords: 24 random bytes = 192 bits, 32 base64url characters. */
const PASSWORD_BYTES = 24;

interface ScryptParams {
  log2N: number;
  r: number;
  p: number;
}

/** A new random API-user password (192 bits of entropy, base64url). */
export function generatePassword(): string {
  return randomBytes(PASSWORD_BYTES).toString('base64url');
}

/** Hashes a password with scrypt and a fresh salt: `scrypt$log2N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await derive(password, salt, KEY_LENGTH, params);
  return [
    'scrypt',
    params.log2N,
    params.r,
    params.p,
    salt.toString('base64url'),
    key.toString('base64url'),
  ].join('$');
}

/** Checks a password against a stored hash in constant time; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseHash(stored);
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed.key.length, parsed.params);
  return timingSafeEqual(key, parsed.key);
}

function parseHash(stored: string): { params: ScryptParams; salt: Buffer; key: Buffer } | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [log2N, r, p] = parts.slice(1, 4).map(Number);
  const salt = Buffer.from(parts[4] ?? '', 'base64url');
  const key = Buffer.from(parts[5] ?? '', 'base64url');
  if (
    log2N === undefined ||
    r === undefined ||
    p === undefined ||
    !Number.isInteger(log2N) ||
    log2N < 10 ||
    log2N > 20 ||
    !Number.isInteger(r) ||
    r < 1 ||
    !Number.isInteger(p) ||
    p < 1 ||
    salt.length < 8 ||
    key.length < 16
  ) {
    return undefined;
  }
  return { params: { log2N, r, p }, salt, key };
}

function derive(password: string, salt: Buffer, length: number, params: ScryptParams): Promise<Buffer> {
  const N = 2 ** params.log2N;
  const options: ScryptOptions = { N, r: params.r, p: params.p, maxmem: 256 * N * params.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, options, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}
