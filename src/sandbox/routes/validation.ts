import { unprocessable, type Violation } from '../problems.js';

/** Collects 422 violations of one request and throws them together. */
export class Violations {
  readonly list: Violation[] = [];

  /** Records one violation. */
  add(propertyPath: string, message: string): void {
    this.list.push({ propertyPath, message });
  }

  /** Throws a 422 problem when anything was recorded. */
  throwIfAny(): void {
    if (this.list.length > 0) unprocessable(this.list);
  }

  /** Throws the 422 problem; for branches where a violation is known to be recorded. */
  fail(): never {
    return unprocessable(this.list);
  }
}

/** Account names of users and groups, as the server creates them. */
export const ACCOUNT_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;
const ACCOUNT_MAX = 64;

/** Minimum password length the sandbox enforces. */
export const PASSWORD_MIN_LENGTH = 8;

/**
 * A text property that must be present and non-blank: returns it, or records "should not be
 * blank" (absent, null and "" alike, as Symfony's NotBlank does).
 */
export function requiredText(
  v: Violations,
  field: string,
  value: string | null | undefined,
): string | undefined {
  if (value === undefined || value === null || value.trim() === '') {
    v.add(field, 'This value should not be blank.');
    return undefined;
  }
  return value;
}

/**
 * Records a violation when `value` is not a valid account name. `derived`: the account was derived
 * from the name in `field` (a group's), so the violation says so: the name itself may be short
 * enough (33 `ä` give 66 characters of account).
 */
export function checkAccount(v: Violations, field: string, value: string, derived = false): void {
  const subject = derived ? 'The account derived from this value' : 'This value';
  if (value.length > ACCOUNT_MAX) {
    const length = derived ? ` (${value.length} characters)` : '';
    v.add(field, `${subject} is too long${length}. It should have ${ACCOUNT_MAX} characters or less.`);
  } else if (!ACCOUNT_PATTERN.test(value)) {
    v.add(field, `${subject} is not a valid account name: use lower-case letters, digits, ".", "_" and "-".`);
  }
}

/** Role names as the server creates them: `ROLE_` and upper case, digits, "_". */
const ROLE_PATTERN = /^ROLE_[A-Z0-9_]+$/;

/** Records a violation when `value` is not a role name (`ROLE_SOMETHING`); true when it is one. */
export function checkRoleName(v: Violations, field: string, value: string): boolean {
  if (ROLE_PATTERN.test(value)) return true;
  // A key made from a display name of no Latin letters or digits (`日本`) is `ROLE_` alone.
  if (value === 'ROLE_') v.add(field, 'A role name needs letters or digits after ROLE_.');
  else v.add(field, 'A role name looks like ROLE_SOMETHING (upper case, digits, "_").');
  return false;
}

/** Records a violation when `value` is not a plausible e-mail address. */
export function checkEmail(v: Violations, field: string, value: string | null | undefined): void {
  if (value === null || value === undefined || value === '') return;
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value)) v.add(field, 'This value is not a valid email address.');
}

/** Records a violation when a password is too short. */
export function checkPassword(v: Violations, field: string, value: string | undefined): value is string {
  if (value === undefined || value.length < PASSWORD_MIN_LENGTH) {
    v.add(
      field,
      value === undefined
        ? 'This value should not be blank.'
        : `This value is too short. It should have ${PASSWORD_MIN_LENGTH} characters or more.`,
    );
    return false;
  }
  return true;
}

/** A name as two names are compared: composed (NFC), lower case. */
export function sameName(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

/**
 * A group account derived from its name: lower case, German umlauts transliterated (composed
 * first: a decomposed `u` and U+0308 is an `ü` too), accents dropped, spaces to dots, then only
 * `[a-z0-9._-]` kept.
 */
export function accountFromName(name: string): string {
  return name
    .normalize('NFC')
    .trim()
    .toLowerCase()
    .replaceAll('ä', 'ae')
    .replaceAll('ö', 'oe')
    .replaceAll('ü', 'ue')
    .replaceAll('ß', 'ss')
    .normalize('NFKD')
    .replace(/\s+/g, '.')
    .replace(/[^a-z0-9._-]/g, '')
    .replace(/^[._-]+/, '');
}
