import { causeChain } from './cause-chain.js';

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

/**
 * {@link jsonSyntaxMessage} for a file an operator fixes: the position as line and column of
 * `text` (`not valid JSON at line 3, column 17`). A configuration file with an unquoted secret
 * (`"clientSecret": s3cr3t`) must not have it echoed to the terminal or the service's journal.
 */
export function jsonFileSyntaxMessage(error: unknown, text: string): string {
  const message = error instanceof Error ? error.message : '';
  const stated = /\bat position (\d+)/.exec(message)?.[1];
  const position =
    stated !== undefined ? Number(stated) : /Unexpected end of JSON/.test(message) ? text.length : undefined;
  if (position === undefined) return 'not valid JSON';
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `not valid JSON at line ${line}, column ${column}${position === text.length ? ' (the end)' : ''}`;
}

/**
 * An error fit to be kept as a cause, which the log's error serializer writes with the message
 * of every cause in its chain: when the chain holds a `SyntaxError` (a JSON parser's, whose message
 * quotes the text it failed on: the token of a broken token answer, say), a plain error with the
 * top message and the parser's position only, without the chain; otherwise the error itself.
 */
export function withoutParsedText(error: unknown): unknown {
  const syntax = causeChain(error).find((link): link is SyntaxError => link instanceof SyntaxError);
  if (syntax === undefined) return error;
  const position = jsonSyntaxMessage(syntax);
  const message = syntax === error ? position : `${(error as Error).message} (${position})`;
  const cleaned = new Error(message);
  cleaned.name = (error as Error).name;
  return cleaned;
}
