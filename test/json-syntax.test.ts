// What is kept of a JSON parser's error: its position, never the text it quotes (a password in a
// request body, a token in a provider's broken answer), also as the cause of an SSO failure.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFileSyntaxMessage, jsonSyntaxMessage, withoutParsedText } from '../src/lib/json-syntax.js';
import { SsoOidcError } from '../src/sso/oidc.js';

/** The SyntaxError JSON.parse throws for `text`. */
function parseError(text: string): SyntaxError {
  try {
    JSON.parse(text);
  } catch (error) {
    if (error instanceof SyntaxError) return error;
  }
  throw new Error(`${text} parsed`);
}

describe("a JSON parser's error, kept", () => {
  it('keeps the position of the error and none of the text', () => {
    const quoting = parseError('{"password":Hunter2-Secret}');
    assert.match(quoting.message, /Hunter2/, "V8's own message quotes the text");
    assert.match(jsonSyntaxMessage(quoting), /^not valid JSON( at position \d+)?$/);
    assert.equal(jsonSyntaxMessage(parseError('{"a":1,')), 'not valid JSON at position 7');
  });

  it("gives a file's line and column and what was expected there, and none of its text", () => {
    const text = '{\n  "a": 1\n  "b": 2\n}';
    assert.equal(
      jsonFileSyntaxMessage(parseError(text), text),
      'not valid JSON at line 3, column 3: comma expected',
    );
    const cut = '{\n  "a": [1,';
    assert.equal(
      jsonFileSyntaxMessage(parseError(cut), cut),
      'not valid JSON at line 2, column 11 (the end): value expected',
    );
    // V8 names no position here, and quotes the text around it.
    const unquoted = '{\n  "clientSecret": Hunter2-Secret}';
    assert.doesNotMatch(parseError(unquoted).message, /at position/);
    assert.equal(
      jsonFileSyntaxMessage(parseError(unquoted), unquoted),
      'not valid JSON at line 2, column 19: not a JSON value (text needs double quotes)',
    );
    const comment = '{\n  // the secret\n  "a": 1\n}';
    assert.equal(
      jsonFileSyntaxMessage(parseError(comment), comment),
      'not valid JSON at line 2, column 3: a comment (JSON has none)',
    );
  });

  it('drops the cause chain of an error with a parser error in it, keeping its message', () => {
    const wrapped = new Error('failed to parse "response" body as JSON', {
      cause: parseError('{"access_token":Tok-1234}'),
    });
    const kept = withoutParsedText(new Error('parsing error occured', { cause: wrapped }));
    assert.ok(kept instanceof Error);
    assert.equal(kept.message, 'parsing error occured (not valid JSON)');
    assert.equal(kept.cause, undefined);
    const plain = new Error('connect ECONNREFUSED', { cause: new Error('inner') });
    assert.equal(withoutParsedText(plain), plain, 'an error without a parser error stays as it is');
  });

  it('keeps no quoted text as the cause of an SSO failure', () => {
    const failure = new SsoOidcError('invalid', 'the token request failed', {
      cause: new Error('failed to parse', { cause: parseError('{"id_token":Tok-5678}') }),
    });
    assert.doesNotMatch(String((failure.cause as Error).message), /Tok-5678/);
    assert.equal((failure.cause as Error).cause, undefined);
  });
});
