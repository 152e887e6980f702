import type { CompiledField, CompiledValues } from './compile.js';

/** A legacy value the mapping cannot write; `message` is for the legacy caller. */
export class WriteValueError extends Error {}

const DATE_PREFIX = /^(\d{4}-\d{2}-\d{2})/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** Successor value → legacy date `YYYY-MM-DD`, taken in the offset the successor wrote it in. */
export function toLegacyDate(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value === 'string') {
    const match = DATE_PREFIX.exec(value);
    if (match?.[1]) return match[1];
  }
  const ms = toMillis(value);
  return ms === undefined ? String(value) : new Date(ms).toISOString().slice(0, 10);
}

/** Successor value → legacy date-time, ISO 8601 with a numeric offset (`2026-01-01T08:00:00+00:00`). */
export function toLegacyDateTime(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value === 'string') {
    const match = DATE_TIME.exec(value);
    if (match) {
      const [, date, hm, seconds, , zone] = match;
      const offset =
        zone === undefined || zone.toUpperCase() === 'Z'
          ? '+00:00'
          : zone.includes(':')
            ? zone
            : `${zone.slice(0, 3)}:${zone.slice(3)}`;
      return `${date}T${hm}${seconds ?? ':00'}${offset}`;
    }
  }
  const ms = toMillis(value);
  return ms === undefined ? String(value) : new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

function toMillis(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
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

/** Successor value → legacy string; null stays null. */
export function toLegacyString(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Applies a field's value table and format to a successor value. */
export function readValue(field: CompiledField, value: unknown): unknown {
  if (field.values) return readThroughValues(field.values, value);
  switch (field.format) {
    case 'date':
      return toLegacyDate(value);
    case 'date-time':
      return toLegacyDateTime(value);
    case 'boolean':
      return toLegacyBoolean(value);
    case 'string':
      return toLegacyString(value);
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
