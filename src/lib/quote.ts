/** How many characters of one input value a message quotes before it cuts with `…`. */
export const QUOTE_MAX_CHARS = 100;
/** How many values a message lists before it says `and N more`. */
export const LIST_MAX_ITEMS = 10;

/** Where to cut `text` to at most `max` UTF-16 units without splitting a surrogate pair. */
function cutAt(text: string, max: number): number {
  const last = text.charCodeAt(max - 1);
  return last >= 0xd800 && last <= 0xdbff ? max - 1 : max;
}

/** `text` cut to `max` characters, with `…` when something was cut. */
export function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, cutAt(text, max))}…`;
}

/** Unicode's line and paragraph separators and its direction controls (Bidi_Control): they move printed text too. */
const LAYOUT_CONTROL = /[\u061c\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Whether `text` holds a character of {@link LAYOUT_CONTROL}. */
export function hasLayoutControl(text: string): boolean {
  return text.search(LAYOUT_CONTROL) >= 0;
}

/**
 * `text` JSON-quoted, with the layout controls escaped too (`\u202e`): JSON.stringify escapes
 * the C0 controls only, and a right-to-left override printed on a terminal reorders the line it
 * is on (a report's row, a message).
 */
export function jsonQuoted(text: string): string {
  const quoted = JSON.stringify(text);
  return hasLayoutControl(quoted)
    ? quoted.replace(LAYOUT_CONTROL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : quoted;
}

/**
 * A value of the caller's input as a message quotes it: JSON-quoted (control characters
 * escaped, {@link jsonQuoted}) and cut after {@link QUOTE_MAX_CHARS} characters, so an error never
 * echoes a whole hostile input.
 */
export function quoteInput(value: string, max = QUOTE_MAX_CHARS): string {
  return value.length <= max ? jsonQuoted(value) : `${jsonQuoted(value.slice(0, cutAt(value, max)))}…`;
}

/** Input values quoted and listed: the first {@link LIST_MAX_ITEMS}, then `and N more`. */
export function quoteList(values: readonly string[], max = LIST_MAX_ITEMS): string {
  const quoted = values.slice(0, max).map((value) => quoteInput(value));
  return values.length > max ? `${quoted.join(', ')} and ${values.length - max} more` : quoted.join(', ');
}

/** Already worded values joined with `, `: the first {@link LIST_MAX_ITEMS}, then `and N more`. */
export function listSome(values: readonly string[], max = LIST_MAX_ITEMS): string {
  const shown = values.slice(0, max).join(', ');
  return values.length > max ? `${shown} and ${values.length - max} more` : shown;
}
