import type { CompiledField, CompiledValues } from './compile.js';

/** A legacy value the mapping cannot write; `message` is for the legacy caller. */
export class WriteValueError extends Error {}

/**
 * A date or date-time as the successor may write it: `YYYY-MM-DD`, optionally `T` (or a space)
 * and `hh:mm`, optional seconds and fraction, optional offset (`Z`, `+01:00`, `+0100`, `+01` as
 * PostgreSQL writes whole hours).
 */
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * A successor date or date-time as its parts (offset normalised to `+hh:mm`, none meaning UTC), or
 * undefined when it is none: another text format (`25.12.2024`, `… CET`), an impossible date or
 * time, a number outside what a four-digit year can hold, or another type. Numbers are Unix
 * timestamps, in seconds below 1e11, else in milliseconds.
 */
function dateTimeParts(value: unknown): { date: string; time: string; offset: string } | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return undefined;
    const ms = value < 1e11 ? value * 1000 : value;
    const date = new Date(ms);
    // Outside ±8.64e15 ms the date is invalid; beyond year 9999 (or before 0) it has no YYYY form.
    if (Number.isNaN(date.getTime())) return undefined;
    const iso = date.toISOString();
    if (!/^\d{4}-/.test(iso)) return undefined;
    return { date: iso.slice(0, 10), time: iso.slice(11, 19), offset: '+00:00' };
  }
  if (typeof value !== 'string') return undefined;
  const match = ISO_DATE_TIME.exec(value);
  if (!match) return undefined;
  const [, year, month, day, hour = '00', minute = '00', second = '00', zone] = match;
  if (!isCalendarDate(Number(year), Number(month), Number(day))) return undefined;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  let offset = '+00:00';
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    offset = zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3) || '00'}`;
    if (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4, 6)) > 59) return undefined;
  }
  return { date: `${year}-${month}-${day}`, time: `${hour}:${minute}:${second}`, offset };
}

/** Days of each month of a common year; February has 29 in a leap year. */
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether the day exists (Gregorian calendar, as `Date` has it): by arithmetic, not a `Date`
 * object, since a list reads three dates per user.
 */
function isCalendarDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : (MONTH_DAYS[month - 1] ?? 0));
}

/**
 * Successor value → legacy date `YYYY-MM-DD`, taken in the offset the successor wrote it in;
 * null for a missing value, undefined for one that is no date (see `readValue`).
 */
export function toLegacyDate(value: unknown): string | null | undefined {
  if (value === null || value === undefined || value === '') return null;
  return dateTimeParts(value)?.date;
}

/**
 * Successor value → legacy date-time, ISO 8601 with a numeric offset (`2026-01-01T08:00:00+00:00`);
 * null for a missing value, undefined for one that is no date-time (see `readValue`).
 */
export function toLegacyDateTime(value: unknown): string | null | undefined {
  if (value === null || value === undefined || value === '') return null;
  const parts = dateTimeParts(value);
  return parts && `${parts.date}T${parts.time}${parts.offset}`;
}

/** Successor value → legacy boolean; null stays null. */
export function toLegacyBoolean(value: unknown): boolean | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string') return !['', '0', 'false', 'no', 'off'].includes(value.toLowerCase());
  if (Array.isArray(value)) return value.length > 0;
  return true;
}

/**
 * Successor value → legacy string; null stays null, a number or boolean is its text; undefined
 * for an object or a list, which is no text (see `readValue`).
 */
export function toLegacyString(value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** Told about a successor value a field's format cannot render (it is rendered as null). */
export type UnusableValue = (field: CompiledField, value: unknown) => void;

/**
 * Applies a field's value table and format to a successor value. A value that is not what the
 * format renders (a date in another format, a timestamp out of range, an object for a string)
 * reads as null, so the field's default applies, and `unusable` is told: never a failure, never
 * the raw value.
 */
export function readValue(field: CompiledField, value: unknown, unusable?: UnusableValue): unknown {
  if (field.values) return readThroughValues(field.values, value);
  switch (field.format) {
    case 'date':
    case 'date-time': {
      const legacy = field.format === 'date' ? toLegacyDate(value) : toLegacyDateTime(value);
      if (legacy !== undefined) return legacy;
      unusable?.(field, value);
      return null;
    }
    case 'boolean':
      return toLegacyBoolean(value);
    case 'string': {
      const legacy = toLegacyString(value);
      if (legacy !== undefined) return legacy;
      unusable?.(field, value);
      return null;
    }
    case undefined:
      return value === undefined ? null : value;
  }
}

/** Successor value → legacy value through a value table; unknown values become the table's fallback. */
export function readThroughValues(table: CompiledValues, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
    return table.fallback;
  return table.toLegacy.get(value) ?? table.fallback;
}

/** Legacy value → successor value (value table, then format); throws WriteValueError when it cannot be written. */
export function writeValue(field: CompiledField, value: unknown): unknown {
  if (value === null) return null;
  if (field.values) {
    const mapped = typeof value === 'string' ? field.values.toSuccessor.get(value) : undefined;
    if (mapped === undefined) {
      throw new WriteValueError(
        `must be one of ${field.values.legacyValues.map((v) => JSON.stringify(v)).join(', ')}`,
      );
    }
    return mapped;
  }
  switch (field.format) {
    case 'boolean':
      if (typeof value !== 'boolean') throw new WriteValueError('must be a boolean');
      return value;
    case 'date':
      if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value))
        throw new WriteValueError('must be a date YYYY-MM-DD');
      return value;
    case 'date-time':
      if (typeof value !== 'string' || Number.isNaN(Date.parse(value)))
        throw new WriteValueError('must be an ISO 8601 date-time');
      return value;
    case 'string':
      if (typeof value !== 'string') throw new WriteValueError('must be a string');
      return value;
    case undefined:
      return value;
  }
}
