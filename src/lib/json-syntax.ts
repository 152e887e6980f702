import { type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';
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
 * {@link jsonSyntaxMessage} for a file an operator fixes: where `text` stops being JSON, as line
 * and column, and what was expected there, in words of its own (`not valid JSON at line 3, column
 * 17: comma expected`). V8's message names no position for the commonest mistakes (an unquoted
 * value, a comment, single quotes) and quotes the text instead, which may be a secret (`"clientSecret":
 * s3cr3t`): jsonc-parser, strict, finds the place; `error` is the fallback.
 */
export function jsonFileSyntaxMessage(error: unknown, text: string): string {
  const errors: ParseError[] = [];
  parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const [first] = errors;
  const message = error instanceof Error ? error.message : '';
  const stated = /\bat position (\d+)/.exec(message)?.[1];
  const position =
    first?.offset ??
    (stated !== undefined
      ? Number(stated)
      : /Unexpected end of JSON/.test(message)
        ? text.length
        : undefined);
  if (position === undefined) return 'not valid JSON';
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  const what = first === undefined ? '' : `: ${words(printParseErrorCode(first.error))}`;
  return `not valid JSON at line ${line}, column ${column}${position === text.length ? ' (the end)' : ''}${what}`;
}

/** jsonc-parser's error code in words: `CommaExpected` → `comma expected`; the common slips said plainly. */
function words(code: string): string {
  if (code === 'InvalidSymbol') return 'not a JSON value (text needs double quotes)';
  if (code === 'InvalidCommentToken') return 'a comment (JSON has none)';
  return code.replace(/(?<=[a-z])(?=[A-Z])/g, ' ').toLowerCase();
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
