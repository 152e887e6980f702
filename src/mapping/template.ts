import type { JsonValue } from './schema.js';

/** Checks a placeholder path at compile time; returns why it is not allowed, or undefined. */
export type VariableCheck = (path: readonly string[]) => string | undefined;

/** Looks a placeholder up at render time. */
export type VariableLookup = (path: readonly string[]) => unknown;

const TRANSLITERATION: Record<string, string> = {
  ä: 'ae',
  ö: 'oe',
  ü: 'ue',
  Ä: 'Ae',
  Ö: 'Oe',
  Ü: 'Ue',
  ß: 'ss',
};

/**
 * Filters a placeholder may pipe its value through, in order: `{fields.name|ascii|upper|underscore}`.
 * They derive values the successor needs from what the legacy caller sent (e.g. a technical key
 * from a display name); a list value is filtered element by element.
 */
export const TEMPLATE_FILTERS = {
  /**
   * German umlauts and ß transliterated (ä → ae, ß → ss), other accents dropped, other non-ASCII
   * removed. Composed first (NFC), so that an umlaut sent decomposed (`u` and U+0308, as macOS
   * writes names) gives the same value as the one precomposed character.
   */
  ascii: (text: string) =>
    text
      .normalize('NFC')
      .replace(/[äöüÄÖÜß]/g, (c) => TRANSLITERATION[c] ?? c)
      .normalize('NFKD')
      .replace(/\p{M}/gu, '')
      .replace(/[^\x20-\x7e]/g, ''),
  upper: (text: string) => text.toUpperCase(),
  lower: (text: string) => text.toLowerCase(),
  /** Every run of characters other than ASCII letters and digits becomes one `_`; none at the ends. */
  underscore: (text: string) => text.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, ''),
  /** Every run of characters other than ASCII letters, digits, `.`, `_`, `-` becomes one `.`; none at the ends. */
  dots: (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, '.').replace(/^\.+|\.+$/g, ''),
  trim: (text: string) => text.trim(),
} as const satisfies Record<string, (text: string) => string>;

/** The name of a template filter. */
export type TemplateFilter = keyof typeof TEMPLATE_FILTERS;

/** One placeholder: the variable path and the filters its value goes through. */
export interface Placeholder {
  readonly path: readonly string[];
  readonly filters: readonly TemplateFilter[];
}

type Part = string | Placeholder;

/** A precompiled string template: literal text and `{dotted.placeholders|filters}`. */
export interface Template {
  readonly source: string;
  readonly parts: readonly Part[];
  /** Set when the whole string is one placeholder: rendering yields the raw value, not text. */
  readonly whole: Placeholder | undefined;
}

/** A precompiled JSON body template. */
export type JsonTemplate =
  | { type: 'literal'; value: JsonValue }
  | { type: 'template'; template: Template }
  | { type: 'array'; items: JsonTemplate[] }
  | { type: 'object'; entries: [string, JsonTemplate][] };

/** A template that cannot be compiled; `path` is the JSON path inside the template value. */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly path: readonly (string | number)[] = [],
  ) {
    super(message);
  }
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)((?:\|[A-Za-z]+)*)\}/g;

function isFilter(name: string): name is TemplateFilter {
  return Object.hasOwn(TEMPLATE_FILTERS, name);
}

/**
 * Compiles `text {a.b} more {c|upper}`; every placeholder is checked with `check`, filters must
 * exist, stray braces are errors.
 */
export function compileTemplate(source: string, check: VariableCheck): Template {
  const parts: Part[] = [];
  let last = 0;
  for (const match of source.matchAll(PLACEHOLDER)) {
    const index = match.index;
    const name = match[1] ?? '';
    const literal = source.slice(last, index);
    if (/[{}]/.test(literal)) throw new TemplateError(`stray brace in ${JSON.stringify(source)}`);
    if (literal !== '') parts.push(literal);
    const path = name.split('.');
    const problem = check(path);
    if (problem !== undefined) throw new TemplateError(`{${name}}: ${problem}`);
    const filters: TemplateFilter[] = [];
    for (const filter of (match[2] ?? '').split('|').slice(1)) {
      if (!isFilter(filter)) {
        throw new TemplateError(
          `{${name}${match[2] ?? ''}}: no filter "${filter}" (known: ${Object.keys(TEMPLATE_FILTERS).join(', ')})`,
        );
      }
      filters.push(filter);
    }
    parts.push({ path, filters });
    last = index + match[0].length;
  }
  const tail = source.slice(last);
  if (/[{}]/.test(tail)) throw new TemplateError(`stray brace in ${JSON.stringify(source)}`);
  if (tail !== '') parts.push(tail);
  const only = parts.length === 1 ? parts[0] : undefined;
  return { source, parts, whole: only !== undefined && typeof only !== 'string' ? only : undefined };
}

/** Looks a placeholder up and pipes the value through its filters (lists element by element). */
function resolvePlaceholder(placeholder: Placeholder, lookup: VariableLookup): unknown {
  const value = lookup(placeholder.path);
  if (placeholder.filters.length === 0) return value;
  const filter = (item: unknown): unknown => {
    if (item === null || item === undefined) return item;
    let text = stringify(item);
    for (const name of placeholder.filters) text = TEMPLATE_FILTERS[name](text);
    return text;
  };
  return Array.isArray(value) ? value.map(filter) : filter(value);
}

/** Whether a template uses a placeholder starting with `root` (e.g. `items`). */
export function usesVariable(template: Template, root: string): boolean {
  return template.parts.some((part) => typeof part !== 'string' && part.path[0] === root);
}

/**
 * Renders a template: a whole-placeholder template yields the looked-up value as is; otherwise
 * text, each value stringified (lists joined with commas) and passed through `encode`.
 */
export function renderTemplate(
  template: Template,
  lookup: VariableLookup,
  encode: (text: string) => string = (text) => text,
): unknown {
  if (template.whole) return resolvePlaceholder(template.whole, lookup);
  return renderText(template, lookup, encode);
}

/** Renders a template as text (a path or a query value). */
export function renderText(
  template: Template,
  lookup: VariableLookup,
  encode: (text: string) => string = (text) => text,
): string {
  let out = '';
  for (const part of template.parts) {
    if (typeof part === 'string') out += part;
    else out += encode(stringify(resolvePlaceholder(part, lookup)));
  }
  return out;
}

function stringify(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(stringify).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Compiles a JSON body template: every string inside it is a template. */
export function compileJsonTemplate(
  value: JsonValue,
  check: VariableCheck,
  path: (string | number)[] = [],
): JsonTemplate {
  if (typeof value === 'string') {
    try {
      return { type: 'template', template: compileTemplate(value, check) };
    } catch (error) {
      if (error instanceof TemplateError) throw new TemplateError(error.message, path);
      throw error;
    }
  }
  if (Array.isArray(value)) {
    return { type: 'array', items: value.map((item, i) => compileJsonTemplate(item, check, [...path, i])) };
  }
  if (value !== null && typeof value === 'object') {
    return {
      type: 'object',
      entries: Object.entries(value).map(([key, item]) => [
        key,
        compileJsonTemplate(item ?? null, check, [...path, key]),
      ]),
    };
  }
  return { type: 'literal', value };
}

/** Whether any string of a JSON template uses a placeholder starting with `root`. */
export function jsonUsesVariable(template: JsonTemplate, root: string): boolean {
  switch (template.type) {
    case 'literal':
      return false;
    case 'template':
      return usesVariable(template.template, root);
    case 'array':
      return template.items.some((item) => jsonUsesVariable(item, root));
    case 'object':
      return template.entries.some(([, item]) => jsonUsesVariable(item, root));
  }
}

/** Renders a JSON body template. */
export function renderJsonTemplate(template: JsonTemplate, lookup: VariableLookup): unknown {
  switch (template.type) {
    case 'literal':
      return template.value;
    case 'template':
      return renderTemplate(template.template, lookup);
    case 'array':
      return template.items.map((item) => renderJsonTemplate(item, lookup));
    case 'object':
      return Object.fromEntries(
        template.entries.map(([key, item]) => [key, renderJsonTemplate(item, lookup)]),
      );
  }
}
