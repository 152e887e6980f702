/**
 * What is wrong with a text that is not JSON, without any of the text: V8's own `SyntaxError`
 * message quotes it around the error (`Unexpected token 'S', "SecretPass"... is not valid JSON`),
 * which may be a secret — a password sent as plain text or with an unquoted value, or the
 * temporary password in a successor's broken answer. Only the position is kept:
 * `not valid JSON at position 12`, or `not valid JSON` when the message names none.
 */
export function jsonSyntaxMessage(error: unknown): string {
  const position = error instanceof Error ? /\bat position (\d+)/.exec(error.message)?.[1] : undefined;
  return position === undefined ? 'not valid JSON' : `not valid JSON at position ${position}`;
}
