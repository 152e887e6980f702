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
