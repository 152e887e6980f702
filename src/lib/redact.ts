/**
 * Redaction of recorded exchanges, compare reports and the paths in log lines: no credentials,
 * passwords or SSO tokens ever reach a file. Applied to whole values, at any nesting depth.
 */

import { decodedSegment } from './path-segment.js';

/** What every secret is replaced with. */
export const REDACTED = '[redacted]';

// Keys whose values are secrets wherever they occur: passwords (request bodies and the temporary
// passwords in answers), SSO and OAuth tokens, Authorization headers, client secrets, API keys,
// credentials, private keys, cookies and session IDs.
// `iserv-authentication` is the successor's API-key header (`X-IServ-Authentication`), which a
// caller may also send as a query parameter.
// German schools' own words too: `passwort`, `kennwort`, and the short `pwd`.
const SECRET_KEY =
  /pass(word|wd|wort|phrase)|kennwort|pwd|secret|token|authori[sz]ation|iserv[-_]?authentication|api[-_]?key|credential|private[-_]?key|cookie|session[-_]?id/i;
// Short secret words, whole words of a name only (`pass`, `userPass`, `pw`, `pin`, `newPin2`,
// `pass_word`), as its last word or `pass` before `word`/`wort`: inside other words they are
// everywhere (`compass`, `passThrough`, `spin`, `pinned`).
const SHORT_SECRET_NAME = /(?:^|-)(?:pass|pw|pin)\d*$|(?:^|-)pass-wor[dt](?:-|\d*$)/;
// Credentials that show up inside string values: `Basic …`/`Bearer …` header values, and tokens
// in URLs such as the SSO `return_to` (`…/sso/continue?token=…`). The word after the scheme is a
// credential unless it reads as prose (credentialToken): a group named `Basic English` or a
// privilege described as `Basic access` is data, and redacting it would hide it from recordings and
// make `compare` and shadow mode call `Basic English` and `Basic Maths` equal.
const AUTH_VALUE = /\b(basic|bearer)\s+(\S+)/gi;
// What may close a credential in prose (`"Bearer abc…";`): kept, not taken for the token's end.
const CLOSING = '"\'`,;)]}>';
// A URL parameter's name (`?token=`, `&api_key=`, `;session_id=`); its value is found by hand
// (`redactUrlParameters`), in linear time whatever the text.
const URL_PARAMETER = /[?&#;]([\w-]+)=/g;
// A name and `=` or `:` in free text, outside a URL (`token=…` at the start of a note,
// `(password=…)` in a pasted log excerpt, `Password: …` in a message, `password = …` from a
// configuration file, `{"password":"…"}` from a JSON document), standing alone, spaces or tabs
// around the sign, the name perhaps quoted: whether it names a secret is `isPastedSecretName`'s.
const PASTED_PARAMETER = /(?<![\w?&#;-])(["'`]?)([\w-]+)\1[ \t]*([:=])[ \t]*/g;
// Secret names in free text, by their last word (`new_password`, `newPassword`, `auth_token`,
// `x-api-key`; digits after it left out: `password2`), or a password's with what follows it in a
// form (`password_confirm`). Not a longer word that only holds one (`Tokens`, `Secretary`,
// `passwordless`, `Cookies`): in a user's field that is data, and redacting it would make compare
// and shadow mode call `Tokens=3` and `Tokens=5` equal.
const PASTED_SECRET_NAME =
  /(?:pass(?:word|wd|wort|phrase)|kennwort|pwd|secret|token|api-?key|session-?id|authori[sz]ation|iserv-?authentication|private-?key|secret-?key|credentials?|cookie)\d*$|^(?:pass(?:word|wd|wort)|kennwort|pwd)-?(?:confirm(?:ation)?|repeat|again|new|old|hash)\d*$/;
// What ends such a value unless it is quoted: a space, `&` or `#`, as a URL parameter's. Closing
// punctuation goes with it (`(token=[redacted]`): a secret may hold a `,` or `)`, and a part of it
// kept would be a part of the secret.
const PASTED_VALUE_END = /[\s&#]/;
// Where an unquoted value after a quoted name and `:` ends (`{"api_token":12345,"id":7}`): JSON's
// number or literal, not the members after it.
const JSON_VALUE_END = /[\s,}\]]/;
// The password of a URL's user information (`https://user:secret@host/`). A scheme starts where
// no scheme character stands before it: with `\b`, every `.` of a long `a.a.a…` began a try that
// ran to its end (quadratic; a path of 15 KB took 300 ms, on the log line of any request).
const URL_PASSWORD = /((?<![a-z\d+.-])[a-z][a-z\d+.-]*:\/\/[^\s/:@]*:)[^\s/@]+(?=@)/gi;

/** Whether values under `key` are secrets. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || (SHORT_SECRET_WORD.test(key) && SHORT_SECRET_NAME.test(nameWords(key)));
}

/** Whether a name may hold one of SHORT_SECRET_NAME's words: most names do not (no need to take them apart). */
const SHORT_SECRET_WORD = /pass|pw|pin/i;

/** A name's words, lower case, joined by `-`: `newPassword` → `new-password`, `API_KEY` → `api-key`. */
function nameWords(name: string): string {
  return name
    .replace(/([a-z\d])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/_/g, '-');
}

/**
 * Whether the word after the scheme `Basic`/`Bearer` is a credential. A word of letters (any
 * script), digits, hyphens, apostrophes and brackets, up to 32 characters, reads as prose
 * (`English`, `Übungen`, `B1`, `2024`, `(Grundkurs)`, `Informatik-Grundlagen`), unless it looks
 * like a token: eight characters or more of ASCII letters and digits mixed (`S3cretToken-1`,
 * base64 `dW50aXM6c2VjcmV0`), or twenty ASCII letters and more without a hyphen. Any other sign (a
 * JWT's dots, base64's `+`, `/`, `=`, `!`, `$`) makes it a credential. After `Basic`, a word that
 * decodes (base64) to text with a colon, `name:password`, is one too.
 */
function credentialToken(scheme: string, token: string): boolean {
  const word = /^([\p{L}\p{N}'’()-]{1,32}?)[.,;:!?]?$/u.exec(token)?.[1];
  if (word === undefined) return true;
  if (/^[A-Za-z\d-]+$/.test(word)) {
    if (word.length >= 8 && /\d/.test(word) && /[A-Za-z]/.test(word)) return true;
    if (word.length >= 20 && !word.includes('-')) return true;
  }
  return scheme.toLowerCase() === 'basic' && Buffer.from(word, 'base64').toString('latin1').includes(':');
}

/** Redacts secrets inside one string: credentials and token-like URL parameters. */
export function redactString(value: string): string {
  return redactUrlParameters(
    value.replace(AUTH_VALUE, (match, scheme: string, word: string) => {
      let end = word.length;
      while (end > 0 && CLOSING.includes(word.charAt(end - 1))) end -= 1;
      const token = word.slice(0, end);
      // A credential redacted already (a known secret, `withoutSecrets`), with nothing after it but
      // what may close it: the scheme goes with it, as with any other, and `[redacted]`'s own
      // bracket is not taken for a closing one. A token that only begins with a known secret is
      // a credential all the same (below): its rest goes too.
      if (
        word.startsWith(REDACTED) &&
        [...word.slice(REDACTED.length)].every((char) => CLOSING.includes(char))
      )
        return word;
      return token !== '' && credentialToken(scheme, token) ? `${REDACTED}${word.slice(end)}` : match;
    }),
  ).replace(URL_PASSWORD, `$1${REDACTED}`);
}

/**
 * The values of URL parameters named as secrets (`?token=…`, `&api_key=…`, `;session_id=…`,
 * `?token="…"`), replaced by {@link REDACTED}. A value ends at `&`, `#`, a space or a quote; one
 * of a parameter that began with `;` (a path's matrix parameter) also at a `;` that begins the
 * next parameter (`;name=`). Any other `;` may be part of the secret, and goes with it.
 */
function redactUrlParameters(value: string): string {
  if (!value.includes('=')) return value;
  let out = '';
  let copied = 0;
  for (const match of value.matchAll(URL_PARAMETER)) {
    const [whole, name = ''] = match;
    if (match.index < copied || !isSecretKey(name)) continue;
    const start = match.index + whole.length;
    const end = valueEnd(value, start, whole.charAt(0) === ';');
    out += `${value.slice(copied, start)}${REDACTED}`;
    copied = end;
  }
  return copied === 0 ? value : out + value.slice(copied);
}

/** Where a URL parameter's value that starts at `start` ends (see `redactUrlParameters`). */
function valueEnd(text: string, start: number, matrix: boolean): number {
  if (text.charAt(start) === '"') return afterClosingQuote(text, start);
  let end = start;
  while (end < text.length) {
    const char = text.charAt(end);
    if (char === '&' || char === '#' || char === '"' || /\s/.test(char)) break;
    if (matrix && char === ';' && startsParameter(text, end + 1)) break;
    end += 1;
  }
  return end;
}

/** Whether a parameter's name and `=` (`session_id=`) stand at `at`. */
function startsParameter(text: string, at: number): boolean {
  let end = at;
  while (end < text.length && /[\w-]/.test(text.charAt(end))) end += 1;
  return end > at && text.charAt(end) === '=';
}

/**
 * Redacts a raw query string (`a=1&token=…`): values of secret parameters, and any value that
 * holds a credential, also percent- or form-encoded (`x=Basic%20dXNlcjpwYXNz`,
 * `next=%2Fsso%2Fcontinue%3Ftoken%3D…`, `user=api_key%3D…`): such a value is replaced whole. The
 * rest stays as written.
 */
export function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      const key = pair.slice(0, eq);
      if (isSecretKey(formDecoded(key))) return `${key}=${REDACTED}`;
      if (holdsCredential(formDecoded(pair.slice(eq + 1)))) return `${key}=${REDACTED}`;
      return redactString(pair);
    })
    .join('&');
}

/**
 * Redacts a raw request path: each segment as {@link redactString} does (`;token=…`), and a
 * segment that holds a credential only once percent-decoded (`Bearer%20eyJ…`, a token pasted into
 * an ID) or that is a secret's parameter itself (`token=…`, `secretpass%3D…`) is replaced whole,
 * as such a query value is. Ordinary segments stay as written, also
 * those that only look like a scheme (`Basic%20English`, a group's name). A credential is
 * recognised within one segment: one split by a `/` counts by the part before it.
 */
export function redactPath(path: string): string {
  // Nearly every path: nothing encoded, and none of the words a credential comes with (the short
  // ones only name a secret as a parameter's name, before `=`: `/User/philipp.kapinski` is none).
  if (
    !path.includes('%') &&
    !CREDENTIAL_WORD.test(path) &&
    !(path.includes('=') && SHORT_SECRET_WORD.test(path))
  )
    return path;
  return path
    .split('/')
    .map((segment) => {
      const redacted = redactString(segment);
      if (redacted !== segment) return redacted;
      // As a server reads it, as a form would (`Bearer+eyJ…`), and encoded twice (`Bearer%2520…`);
      // the last two only where they read otherwise (a segment with `+`, a decoding with `%`).
      const decoded = decodedSegment(segment);
      return holdsCredential(decoded) ||
        (segment.includes('+') && holdsCredential(formDecoded(segment))) ||
        (decoded.includes('%') && holdsCredential(decodedSegment(decoded)))
        ? REDACTED
        : segment;
    })
    .join('/');
}

/**
 * The words without which {@link redactString} and {@link redactQuery} find nothing: a scheme, or
 * a secret's name (SECRET_KEY, the names `redactUrlParameters` redacts).
 */
const CREDENTIAL_WORD = new RegExp(`basic|bearer|${SECRET_KEY.source}`, 'i');

/**
 * Whether a decoded value (a path segment, a query value) holds a credential: one
 * {@link redactString} finds, or a secret's parameter (`token=…`, `api_key=…`, `x;session_id=…`),
 * named as {@link isSecretKey} names them.
 */
function holdsCredential(text: string): boolean {
  if (redactString(`&${text}`) !== `&${text}`) return true;
  return text.split(/[&;]/).some((pair) => {
    const eq = pair.indexOf('=');
    return eq > 0 && isSecretKey(formDecoded(pair.slice(0, eq)));
  });
}

/** A query name or value as a server reads it (`+` a space, `%XX` a byte); a malformed escape as written. */
function formDecoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * A text's secrets as {@link redactString} finds them, and a secret's `name=value`, `name: value`
 * or `name = value` outside a URL (PASTED_PARAMETER and PASTED_SECRET_NAME: a note, a message or
 * a log excerpt pasted into a field), its value up to a space, `&` or `#`, or a quoted one (`"…"`,
 * `'…'`, `` `…` ``, a quote escaped with `\` inside it) to its closing quote. A quoted name before
 * `:` is a JSON member (`{"password":"…"}`): its unquoted value ends at `,`, `}` or `]` too.
 */
export function redactText(value: string): string {
  const text = redactString(value);
  // Most texts name no secret (a date's `:` is no `name: value` of one): nothing to scan.
  if ((!text.includes('=') && !text.includes(':')) || !holdsSecretWord(text)) return text;
  let out = '';
  let copied = 0;
  for (const match of text.matchAll(PASTED_PARAMETER)) {
    const [whole, nameQuote = '', name = '', sign] = match;
    if (match.index < copied || !isPastedSecretName(name)) continue;
    const start = match.index + whole.length;
    const quote = text.charAt(start);
    let end = start;
    if (quote === '"' || quote === "'" || quote === '`') end = afterClosingQuote(text, start);
    else {
      const ends = nameQuote !== '' && sign === ':' ? JSON_VALUE_END : PASTED_VALUE_END;
      while (end < text.length && !ends.test(text.charAt(end))) end += 1;
    }
    if (end === start) continue;
    out += `${text.slice(copied, start)}${REDACTED}`;
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Where a value quoted from `start` (its opening quote) ends: after its closing quote, one escaped
 * with `\` not counted, or at the text's end.
 */
function afterClosingQuote(text: string, start: number): number {
  const quote = text.charAt(start);
  for (let at = start + 1; at < text.length; at += 1) {
    const char = text.charAt(at);
    if (char === '\\') at += 1;
    else if (char === quote) return at + 1;
  }
  return text.length;
}

/** Whether a text holds a word a secret's name is made of (CREDENTIAL_WORD, SHORT_SECRET_WORD). */
function holdsSecretWord(text: string): boolean {
  return CREDENTIAL_WORD.test(text) || SHORT_SECRET_WORD.test(text);
}

/** Whether a name in free text (PASTED_PARAMETER) names a secret: PASTED_SECRET_NAME of its words, in any case. */
function isPastedSecretName(name: string): boolean {
  // Most names hold none of the words (`x=1`, `a=b`): no need to take them apart.
  if (!holdsSecretWord(name)) return false;
  const words = nameWords(name);
  return PASTED_SECRET_NAME.test(words) || SHORT_SECRET_NAME.test(words);
}

/**
 * A copy of a JSON-like value with every secret replaced by {@link REDACTED}. An object met again
 * inside itself (a logged error's own fields may hold one) is `"[Circular]"`, as pino writes it.
 */
export function redactValue(value: unknown): unknown {
  return redactWithin(value, new Set());
}

function redactWithin(value: unknown, ancestors: Set<object>): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (ancestors.has(value)) return '[Circular]';
  ancestors.add(value);
  let out: unknown;
  if (Array.isArray(value)) out = value.map((item) => redactWithin(item, ancestors));
  else {
    const copy: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      setMember(
        copy,
        key,
        isSecretKey(key) && inner !== null && inner !== undefined ? REDACTED : redactWithin(inner, ancestors),
      );
    }
    out = copy;
  }
  ancestors.delete(value);
  return out;
}

/**
 * A copy of a JSON-like value with its shape kept (keys, arrays, `null`, booleans) and every
 * string and number replaced by {@link REDACTED}: for a value that is a secret wherever it sits.
 */
export function redactLeaves(value: unknown): unknown {
  return mapLeaves(value, (leaf) => (typeof leaf === 'string' || typeof leaf === 'number' ? REDACTED : leaf));
}

/** A copy of a JSON value (no cycles) with every leaf (string, number, boolean, null) as `change` makes it. */
function mapLeaves(value: unknown, change: (leaf: unknown) => unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => mapLeaves(item, change));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) setMember(out, key, mapLeaves(inner, change));
    return out;
  }
  return change(value);
}

/**
 * Sets a member of a JSON object being copied. Assigned, a member named `__proto__` (JSON.parse
 * keeps it as an own member) would set the copy's prototype instead and be lost: it is defined as
 * a data property. The others are assigned, which is faster than building the copy from entries.
 */
export function setMember(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/**
 * Secrets shorter than this are not looked for in other text ({@link withoutSecrets}): a secret of
 * three characters would take those characters out of every word that holds them.
 */
const MIN_SCRUBBED_CHARS = 4;

/** The most secrets {@link withoutSecrets} looks for one by one. */
const MAX_SCRUBBED_SECRETS = 16;

/**
 * The secrets a request body carried, to be looked for in its answer ({@link withoutSecrets}):
 * every string under a secret's key at any depth (`password`, `adminPassword`, …), or with
 * `whole` every string of the body (a password operation's, whatever its keys), at least
 * MIN_SCRUBBED_CHARS long.
 */
export function secretStrings(body: unknown, whole = false): string[] {
  const found = new Set<string>();
  const visit = (value: unknown, secret: boolean): void => {
    if (typeof value === 'string') {
      if (secret && value.length >= MIN_SCRUBBED_CHARS) found.add(value);
    } else if (Array.isArray(value)) for (const item of value) visit(item, secret);
    else if (value !== null && typeof value === 'object')
      for (const [key, inner] of Object.entries(value)) visit(inner, secret || isSecretKey(key));
  };
  visit(body, whole);
  return [...found];
}

/**
 * A copy of a JSON-like value (an answer) with every occurrence of the given secrets inside its
 * strings replaced by {@link REDACTED}: a server that repeats a refused password in its error
 * (`The value Geheim-1 is too weak`). Also as a form or URL would carry them (percent-encoded)
 * and as JSON inside a string would (escaped). Secrets shorter than MIN_SCRUBBED_CHARS are not
 * looked for. Without secrets, the value itself; with more than MAX_SCRUBBED_SECRETS,
 * {@link redactLeaves}' copy (the shape only).
 */
export function withoutSecrets<T>(value: T, allSecrets: readonly string[]): T {
  const secrets = [...new Set(allSecrets)].filter((secret) => secret.length >= MIN_SCRUBBED_CHARS);
  if (secrets.length === 0) return value;
  // A body of many secrets is no request a legacy integration sends (one holds one or two): rather
  // than look for each in every string (a scan per secret), every string and number goes.
  if (secrets.length > MAX_SCRUBBED_SECRETS) return redactLeaves(value) as T;
  const spellings = new Set<string>();
  for (const secret of secrets) {
    const escaped = JSON.stringify(secret).slice(1, -1);
    for (const spelling of [secret, escaped]) {
      spellings.add(spelling);
      spellings.add(encodeURIComponent(spelling));
    }
  }
  // The longest first: a secret that holds another is taken whole.
  const ordered = [...spellings].sort((a, b) => b.length - a.length);
  return mapLeaves(value, (leaf) => {
    if (typeof leaf !== 'string') return leaf;
    let text = leaf;
    for (const secret of ordered) if (text.includes(secret)) text = text.split(secret).join(REDACTED);
    return text;
  }) as T;
}

/**
 * The spellings of a client's credentials a server may repeat without a label the redaction by
 * pattern knows: the secret, `id:secret`, and that pair in base64 as HTTP Basic sends it (also
 * with both form-encoded first, as OAuth2's `client_secret_basic` does, RFC 6749 2.3.1), for
 * {@link withoutSecrets}, which adds their percent-encoded and JSON-escaped spellings.
 */
export function credentialSpellings(id: string, secret: string): string[] {
  const form = (text: string) => encodeURIComponent(text).replace(/%20/g, '+');
  const pairs = [`${id}:${secret}`, `${form(id)}:${form(secret)}`];
  return [secret, ...pairs, ...pairs.map((pair) => Buffer.from(pair, 'utf8').toString('base64'))];
}
