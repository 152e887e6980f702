// Recordings: the NDJSON line format, redaction of every kind of secret (checked by grepping the
// written file for each secret used), size rotation, the
// operation-pattern filter, and the request parts of a recorded exchange.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { SECRET_BODIES } from '../src/legacy/operations.js';
import { userPasswordSetOperation } from '../src/legacy/user/password.js';
import { userUpdateOperation } from '../src/legacy/user/update.js';
import { fileLines } from '../src/lib/file-lines.js';
import { createLogger } from '../src/lib/logger.js';
import {
  REDACTED,
  redactPath,
  redactQuery,
  redactString,
  redactValue,
  secretStrings,
  withoutSecrets,
} from '../src/lib/redact.js';
import {
  answerBody,
  cappedAnswer,
  recordedAnswer,
  recordedBody,
  recordedLocation,
  recordedRequestBody,
} from '../src/migration/exchange.js';
import {
  hasRedactedBody,
  type RecordedExchange,
  RecordingWriter,
  readRecording,
  recordedExchangeSchema,
  redactExchange,
} from '../src/migration/recording.js';
import { replayUrl } from '../src/migration/replay.js';
import { SsoOidcError } from '../src/sso/oidc.js';
import { makeFifo, readFifo } from './fifo.js';
import { LogSink } from './log-sink.js';
import { tempDir } from './temp-dir.js';

const tempFile = (name: string) => path.join(tempDir('rec'), name);

/** A plausible exchange; `over` replaces fields. */
function exchange(over: Partial<RecordedExchange> = {}): RecordedExchange {
  return {
    time: '2026-03-02T08:00:00.000Z',
    requestId: 'req-1',
    apiUser: 'untis',
    operation: 'user.get',
    mode: 'translate',
    method: 'GET',
    path: '/Service/Core/Entity/User/ada.l',
    query: '',
    requestBody: null,
    status: 200,
    responseBody: { username: 'ada.l', _id: 'ada.l' },
    durationMs: 12.5,
    ...over,
  };
}

describe('redaction', () => {
  it('replaces passwords at any depth, SSO tokens, return_to tokens, Authorization and credentials in strings', () => {
    const redacted = redactValue({
      password: 'hunter2',
      nested: [{ deeper: { Password: 'Tr0ub4dor' } }, { adminPassword: 'x1' }],
      token: 'sso-token-abc',
      return_to: 'https://proxy.example/sso/continue?token=sso-token-abc&x=1',
      headers: { Authorization: 'Basic dW50aXM6c2VjcmV0' },
      note: 'Bearer eyJhbGciOi.secret.sig',
      username: 'ada.l',
      count: 3,
      none: null,
    });
    assert.deepEqual(redacted, {
      password: REDACTED,
      nested: [{ deeper: { Password: REDACTED } }, { adminPassword: REDACTED }],
      token: REDACTED,
      return_to: `https://proxy.example/sso/continue?token=${REDACTED}&x=1`,
      headers: { Authorization: REDACTED },
      note: REDACTED,
      username: 'ada.l',
      count: 3,
      none: null,
    });
  });

  it('keeps names and descriptions that begin with Basic or Bearer: only credential-shaped tokens go', () => {
    assert.deepEqual(
      redactValue({
        name: 'Basic English',
        account: 'basic.english',
        description: 'Basic access to the school network',
        auxInfo: 'Bearer Foundation',
        header: `Basic ${Buffer.from('untis:pw').toString('base64')}`,
        quoted: 'the proxy sent Bearer eyJhbGciOi.secret.sig today',
      }),
      {
        name: 'Basic English',
        account: 'basic.english',
        description: 'Basic access to the school network',
        auxInfo: 'Bearer Foundation',
        header: REDACTED,
        quoted: `the proxy sent ${REDACTED} today`,
      },
    );
    // Tokens with signs outside token68, a colon-less Basic value, a tab as the separator: all
    // credentials (review: each of these was kept by a rule that looked at token68 letters only).
    for (const credential of [
      'Bearer abc!def$ghijklmnopqrstuvwxyz',
      'bearer\tS3cretToken-1',
      `Basic ${Buffer.from('apikey-only-no-colon').toString('base64')}`,
      'Bearer abcdefghijklmnopqrstuvwxyz',
      `failed: Basic ${Buffer.from('a:b').toString('base64')}.`,
    ])
      assert.match(JSON.stringify(redactValue({ note: credential })), /\[redacted\]/, credential);
    assert.deepEqual(redactValue({ note: 'Basic English, Bearer Bonds.' }), {
      note: 'Basic English, Bearer Bonds.',
    });
  });

  it('redacts credentials inside strings by every secret name, quoted values, URL passwords and German keys, keeping what follows', () => {
    // Group and course names: prose, not credentials (they were redacted, and a replayed write
    // then created "Englisch [redacted]").
    const names = [
      'Basic Übungen',
      'Englisch Basic 7b',
      'Basic 2024',
      'Kurs Basic B1',
      'Basic (Grundkurs)',
      'Bearer Müller',
      'basic - intro',
      'Basic Informatik-Grundlagen',
    ];
    // Kept before: an API key or the successor's header as a URL parameter in a value, a quoted
    // token value (its quote ended the match), a URL's user information, passwort/kennwort/pwd;
    // and a credential's closing quote and semicolon went with it.
    assert.deepEqual(
      redactValue({
        callback: 'https://x.example/cb?api_key=Secret-V1&next=1',
        header: 'https://x.example/cb?x-iserv-authentication=Secret-V5',
        quoted: 'sent ?token="Secret-V8" to it',
        userinfo: 'https://sync:Secret-Userinfo-1@x.example/api',
        message: 'Unknown group ID: "Bearer abc…"; nothing was changed',
        params: 'a;session_id=Secret-Q1;b=2',
        // A query value keeps its `;` (the secret may have one); a matrix value ends at the next
        // parameter only.
        queryWithSemicolon: '/sso/continue?token=Ab;cd-Secret12&x=1',
        matrixWithSemicolon: 'x;token=ab;cd-Secret13',
        passwort: 'Geheim-1',
        Kennwort: 'Geheim-2',
        pwd: 'Geheim-3',
        plain: 'see https://x.example/a?b=1 and http://host:8080/path',
        // Not after `?`, `&`, `#` or `;`: a note or log excerpt pasted into a field. A secret's
        // name by its last word, its value to a space (punctuation in it goes too: it may be part
        // of the secret), or a quoted one to its closing quote.
        pasted: 'token=Secret-T1 and Bearer abcdEFGH1234',
        pastedLater: 'sync failed: api_key=Secret-T2, retried\npassword=Secret-T3',
        pastedInProse: '(see token=Secret-T4), then {user=x, Passwort=Secret-T5} "access_token=Secret-T6"',
        pastedInList: 'user=a,password=Secret-T7;x',
        pastedPunctuated: 'password=Abc,123! then password=a;b)c',
        pastedQuoted: "password='s3cret word' and password=`s3cret2`",
        pastedCompound:
          'new_password=S1 newPassword=S2 password2=S3 password_confirm=S4 auth_token=S5 x-api-key=S6 private_key=S7',
        // `name: value` and `name = value` (a message, a configuration file), and JSON in a string.
        pastedColon: 'Password: Secret-C1, then password : Secret-C2 and secret_key:\tSecret-C3',
        pastedSpaced: 'password = Secret-C4 and api_key =Secret-C5',
        pastedJson: '{"user":"x","password":"Se\\"cret-C6","api_token":12345,"id":7}',
        proseColon: 'Tokens: 3, Secretary: Mrs Smith, at 10:30, see http://host:8080/x and {"id":"token"}',
        // Short secret words, as whole words of a name only.
        pastedShort:
          'pass=Secret-S1 pw=Secret-S2 newPin2=Secret-S3 pass_word=Secret-S4 passphrase: Secret-S5',
        shortData: 'compass=N passThrough=yes spin=3 pinned=1 bypass=ok',
        pass: 'Secret-S6',
        userPw: 'Secret-S7',
        pin: '1234',
        pass_word: 'Secret-S8',
        passphrase: 'Secret-S9',
        passThrough: 'kept',
        pinned: 'kept too',
        prose: 'a=b, x = y and 2+2=4',
        // Data that merely holds such a word: redacted, it would hide what compare and shadow
        // mode compare (`Tokens=3` and `Tokens=5` called equal).
        data: 'Tokens=3 per student, Secretary=Mrs Smith, passwordless=true, Cookies=yes, broken=7',
        names,
      }),
      {
        callback: `https://x.example/cb?api_key=${REDACTED}&next=1`,
        header: `https://x.example/cb?x-iserv-authentication=${REDACTED}`,
        quoted: `sent ?token=${REDACTED} to it`,
        userinfo: `https://sync:${REDACTED}@x.example/api`,
        message: `Unknown group ID: "${REDACTED}"; nothing was changed`,
        params: `a;session_id=${REDACTED};b=2`,
        queryWithSemicolon: `/sso/continue?token=${REDACTED}&x=1`,
        matrixWithSemicolon: `x;token=${REDACTED}`,
        passwort: REDACTED,
        Kennwort: REDACTED,
        pwd: REDACTED,
        plain: 'see https://x.example/a?b=1 and http://host:8080/path',
        pasted: `token=${REDACTED} and ${REDACTED}`,
        pastedLater: `sync failed: api_key=${REDACTED} retried\npassword=${REDACTED}`,
        pastedInProse: `(see token=${REDACTED} then {user=x, Passwort=${REDACTED} "access_token=${REDACTED}`,
        pastedInList: `user=a,password=${REDACTED}`,
        pastedPunctuated: `password=${REDACTED} then password=${REDACTED}`,
        pastedQuoted: `password=${REDACTED} and password=${REDACTED}`,
        pastedCompound: `new_password=${REDACTED} newPassword=${REDACTED} password2=${REDACTED} password_confirm=${REDACTED} auth_token=${REDACTED} x-api-key=${REDACTED} private_key=${REDACTED}`,
        pastedColon: `Password: ${REDACTED} then password : ${REDACTED} and secret_key:\t${REDACTED}`,
        pastedSpaced: `password = ${REDACTED} and api_key =${REDACTED}`,
        pastedJson: `{"user":"x","password":${REDACTED},"api_token":${REDACTED},"id":7}`,
        proseColon: 'Tokens: 3, Secretary: Mrs Smith, at 10:30, see http://host:8080/x and {"id":"token"}',
        pastedShort: `pass=${REDACTED} pw=${REDACTED} newPin2=${REDACTED} pass_word=${REDACTED} passphrase: ${REDACTED}`,
        shortData: 'compass=N passThrough=yes spin=3 pinned=1 bypass=ok',
        pass: REDACTED,
        userPw: REDACTED,
        pin: REDACTED,
        pass_word: REDACTED,
        passphrase: REDACTED,
        passThrough: 'kept',
        pinned: 'kept too',
        prose: 'a=b, x = y and 2+2=4',
        data: 'Tokens=3 per student, Secretary=Mrs Smith, passwordless=true, Cookies=yes, broken=7',
        names,
      },
    );
  });

  it('takes a body with a credential redacted inside a string for a redacted body, which replay skips', () => {
    // Only a whole "[redacted]" value counted: replay --writes sent `Englisch [redacted]` and
    // created a group of that name.
    const line = (requestBody: unknown) =>
      ({ ...exchange({ requestId: 'x' }), requestBody }) as Parameters<typeof hasRedactedBody>[0];
    assert.equal(hasRedactedBody(line({ name: `Englisch ${REDACTED}` })), true);
    assert.equal(hasRedactedBody(line({ password: REDACTED })), true);
    assert.equal(hasRedactedBody(line({ name: 'Englisch Basic 7b' })), false);
  });

  it('redacts in linear time whatever the text: a long run of scheme or name characters stalls nothing', () => {
    // `a.a.a…` made the URL-password pattern try every `.` to the end (quadratic): a path of
    // 15 KB took 300 ms on the log line of any request, unauthenticated too; so did `;tokentoken…`
    // for the parameter pattern. 400 KB of each would have taken minutes.
    for (const text of [
      'a.'.repeat(200_000),
      `;${'token'.repeat(80_000)}`,
      `Bearer x${')'.repeat(400_000)}y`,
    ]) {
      const started = performance.now();
      redactString(text);
      redactPath(`/Service/Core/Entity/User/token${text}`);
      const ms = performance.now() - started;
      assert.ok(ms < 2_000, `${text.slice(0, 12)}…: ${Math.round(ms)} ms`);
    }
  });

  it('redacts secret query parameters and leaves the rest of the raw query as it was', () => {
    assert.equal(redactQuery('extended[]=1&token=abc&x=%20y'), `extended[]=1&token=${REDACTED}&x=%20y`);
    assert.equal(redactQuery('pass%77ord=abc'), `pass%77ord=${REDACTED}`);
    assert.equal(redactQuery(''), '');
  });

  it('redacts a query value holding a credential also when it is percent- or form-encoded, whole', () => {
    const basic = Buffer.from('user:password').toString('base64');
    assert.equal(redactQuery(`auth=Basic%20${encodeURIComponent(basic)}&x=1`), `auth=${REDACTED}&x=1`);
    assert.equal(redactQuery('x=Bearer+eyJhbGciOiJIUzI1NiJ9.abc.def'), `x=${REDACTED}`);
    assert.equal(redactQuery('next=%2Fsso%2Fcontinue%3Ftoken%3Dabc123&a=b'), `next=${REDACTED}&a=b`);
    assert.equal(redactQuery('to%6Ben=abc'), `to%6Ben=${REDACTED}`);
    // Data that only looks like a scheme stays, as written.
    assert.equal(redactQuery('q=Basic%20English&extended=1'), 'q=Basic%20English&extended=1');
    assert.equal(redactQuery('bad=%E0%A4%A'), 'bad=%E0%A4%A');
  });

  it("redacts the successor's API-key header name as a query parameter, in any case or encoding", () => {
    // Recorded verbatim while api_key= and apikey= were redacted.
    assert.equal(
      redactQuery('x-iserv-authentication=K1&X-IServ-Authentication=K2&x%2Diserv%2Dauthentication=K3&a=1'),
      `x-iserv-authentication=${REDACTED}&X-IServ-Authentication=${REDACTED}&x%2Diserv%2Dauthentication=${REDACTED}&a=1`,
    );
    assert.deepEqual(redactValue({ 'X-IServ-Authentication': 'K4', authenticated: true }), {
      'X-IServ-Authentication': REDACTED,
      authenticated: true,
    });
  });

  it('redacts a credential pasted into a path segment, percent-encoded too, and leaves ordinary paths as written', () => {
    // The same value in a body was redacted; in the path it was recorded verbatim.
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl';
    const basic = encodeURIComponent(Buffer.from('untis:S3cret-pw').toString('base64'));
    assert.equal(
      redactPath(`/Service/Core/Entity/User/Bearer%20${jwt}`),
      `/Service/Core/Entity/User/${REDACTED}`,
    );
    assert.equal(
      redactPath(`/Service/Core/Entity/User/bearer%09${jwt}/link/groups`),
      `/Service/Core/Entity/User/${REDACTED}/link/groups`,
    );
    assert.equal(
      redactPath(`/Service/Core/Entity/Group/Basic%20${basic}`),
      `/Service/Core/Entity/Group/${REDACTED}`,
    );
    // Form-encoded (`+` for the space) and encoded twice: recorded verbatim before.
    for (const pasted of [`Bearer+${jwt}`, `Bearer%2520${jwt}`, `Basic%2520${basic}`])
      assert.equal(
        redactPath(`/Service/Core/Entity/User/${pasted}`),
        `/Service/Core/Entity/User/${REDACTED}`,
        pasted,
      );
    // A token parameter in a segment is redacted in place, as before.
    assert.equal(redactPath('/x/ada.l;token=SsoToken-1'), `/x/ada.l;token=${REDACTED}`);
    for (const ordinary of [
      '/Service/Core/Entity/User/ada.l',
      '/Service/Core/Entity/Group/Basic%20English',
      '/Service/Core/Entity/Group/Bearer%20Bonds',
      '/Service/Core/Entity/Group/Bearer+abc123',
      '/Service/Core/Entity/Group/m%C3%BCller-gruppe',
      '/Service/Core/Entity/Group/bad%E0%A4%A',
      '/Service/Core/Entity/User/ada.l/link/groups',
      '/',
    ])
      assert.equal(redactPath(ordinary), ordinary, ordinary);
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/), { maxLength: 6 }), (segments) => {
        const path = `/${segments.map(encodeURIComponent).join('/')}`;
        assert.equal(redactPath(path), path);
      }),
    );
  });

  it('keeps a body nested deeper than 64 levels as null, however deep (the walk would overflow the stack)', () => {
    const nested = (levels: number): unknown => {
      let value: unknown = 'Bearer abc123xyz';
      for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { password: 'pw', inner: value };
      return value;
    };
    const deepest = redactExchange(exchange({ requestBody: nested(65), responseBody: nested(100_000) }));
    assert.equal(deepest.requestBody, null);
    assert.equal(deepest.responseBody, null);
    // Marked, so that compare does not take it for an answer without a body.
    assert.equal(deepest.responseBodyOmitted, 'too-deep');
    assert.equal(recordedExchangeSchema.safeParse(deepest).success, true);
    // At the limit the body is kept, redacted.
    const kept = redactExchange(exchange({ responseBody: nested(64) }));
    assert.equal(kept.responseBodyOmitted, undefined);
    assert.doesNotMatch(JSON.stringify(kept.responseBody), /abc123xyz|"pw"/);
    assert.match(JSON.stringify(kept.responseBody), /\[redacted\]/);
    assert.equal(recordedExchangeSchema.safeParse(kept).success, true);
  });

  it('refuses a line whose path has dot segments or whose request id, operation or method has control characters', () => {
    for (const path of [
      '/../../metrics',
      '/Service/./Core',
      '/Service/%2e%2E/x',
      '/Service\\..\\x',
      '/x/..',
    ]) {
      const checked = recordedExchangeSchema.safeParse(exchange({ path }));
      assert.equal(checked.success, false, path);
      assert.deepEqual(
        checked.error?.issues.map((issue) => issue.message),
        ['must not contain "." or ".." segments'],
        path,
      );
    }
    for (const path of ['/Service/Core/Entity/User/ada.l', '/x/..y', '/x/.../z', '/x/%2e%2ex'])
      assert.equal(recordedExchangeSchema.safeParse(exchange({ path })).success, true, path);
    const forged = recordedExchangeSchema.safeParse(exchange({ requestId: 'a\r\nX-Evil: 1' }));
    assert.equal(forged.success, false);
    assert.deepEqual(
      forged.error?.issues.map((issue) => issue.message),
      ['must not contain control characters'],
    );
    // The operation heads a row of compare's table, the method a sample: a forged row or an ANSI
    // escape (ESC, or the one-byte CSI U+009B) in either makes the line invalid too.
    for (const over of [
      { operation: 'user.get\nTOTAL 1 1 0 100.0 %' },
      { operation: 'user.get\u001b[2K\u001b[1A' },
      { operation: 'user.get\u009b2K' },
      { method: 'GET\r\n' },
      { method: 'G\u0000ET' },
      // Unicode's line separator and a direction override move printed text as well.
      { operation: 'user.get\u2028TOTAL' },
      { operation: 'user.get\u202e' },
    ]) {
      const checked = recordedExchangeSchema.safeParse(exchange(over));
      assert.equal(checked.success, false, JSON.stringify(over));
      assert.deepEqual(
        checked.error?.issues.map((issue) => [issue.path.join('.'), issue.message]),
        [[Object.keys(over)[0], 'must not contain control characters']],
      );
    }
  });

  it('refuses a line that says its body was omitted but has one, or is an answer without a body', () => {
    // Such a pair was skipped by compare (exit 1) though its bodies could be compared, or were none.
    for (const over of [
      { responseBody: { username: 'u1' }, responseBodyOmitted: 'too-large' as const },
      { status: 204, responseBody: null, responseBodyOmitted: 'too-large' as const },
    ]) {
      const checked = recordedExchangeSchema.safeParse(exchange(over));
      assert.equal(checked.success, false, JSON.stringify(over));
      assert.deepEqual(
        checked.error?.issues.map((issue) => issue.path.join('.')),
        ['responseBodyOmitted'],
      );
    }
    const omitted = exchange({ responseBody: null, responseBodyOmitted: 'too-deep' });
    assert.equal(recordedExchangeSchema.safeParse(omitted).success, true);
    // A request body marked unreadable is null: one with a body would be replayed with it.
    const forged = recordedExchangeSchema.safeParse(
      exchange({ requestBody: { a: 1 }, requestBodyOmitted: 'unreadable' }),
    );
    assert.deepEqual(
      forged.error?.issues.map((issue) => issue.path.join('.')),
      ['requestBodyOmitted'],
    );
  });

  it("replay's URL stays below --target's base path", () => {
    assert.equal(
      replayUrl(
        'http://127.0.0.1:1/iserv/api/',
        exchange({ path: '/Service/Core/Entity/User', query: 'x=1' }),
      ),
      'http://127.0.0.1:1/iserv/api/Service/Core/Entity/User?x=1',
    );
    assert.throws(
      () => replayUrl('http://127.0.0.1:1/iserv/api', exchange({ path: '/../../metrics' })),
      /leaves --target's base path \/iserv\/api/,
    );
    assert.throws(
      () => replayUrl('http://127.0.0.1:1/iserv/api', exchange({ path: '/%2e%2e/%2e%2e/metrics' })),
      /leaves --target's base path/,
    );
  });

  it('keeps a member named __proto__ as a member, in the copy and in the written line', async () => {
    // JSON.parse keeps it as an own member; copied with `out[key] = …` it set the copy's
    // prototype instead and vanished from the recording.
    const body = JSON.parse('{"__proto__":{"role":"admin","password":"pw"},"a":[{"__proto__":1}]}');
    const copy = redactValue(body) as Record<string, unknown>;
    assert.equal(
      JSON.stringify(copy),
      '{"__proto__":{"role":"admin","password":"[redacted]"},"a":[{"__proto__":1}]}',
    );
    assert.ok(Object.hasOwn(copy, '__proto__'));
    assert.equal(Object.getPrototypeOf(copy), Object.prototype, 'the prototype is not set from the body');
    assert.equal((copy as { role?: unknown }).role, undefined);
    const file = tempFile('proto.ndjson');
    const writer = new RecordingWriter({ path: file });
    writer.record(exchange({ requestBody: body, responseBody: body }));
    await writer.close();
    const [line] = (await readRecording(file)).exchanges;
    for (const recorded of [line?.requestBody, line?.responseBody])
      assert.equal(JSON.stringify(recorded), JSON.stringify(copy));
  });

  it("leaves a request's secrets out of an answer, however they stand in it, and a body of many by the answer's shape", () => {
    const secrets = secretStrings({
      username: 'ada',
      password: 'Geheim-1',
      nested: [{ pin: '4711-2' }],
      pw: 'abc',
    });
    assert.deepEqual(
      secrets.sort(),
      ['4711-2', 'Geheim-1'],
      'short secrets (under four characters) are not looked for',
    );
    assert.deepEqual(
      secretStrings(['Ein Passwort 1'], true),
      ['Ein Passwort 1'],
      "a password operation's body whole",
    );
    assert.deepEqual(
      withoutSecrets(
        {
          code: 400,
          message: 'The value Geheim-1 is too weak',
          errors: [{ path: 'body', message: 'x=Geheim-1&pin=4711-2' }],
        },
        secrets,
      ),
      {
        code: 400,
        message: `The value ${REDACTED} is too weak`,
        errors: [{ path: 'body', message: `x=${REDACTED}&pin=${REDACTED}` }],
      },
    );
    assert.equal(
      withoutSecrets('sent p%40ss%20word!', ['p@ss word!']),
      `sent ${REDACTED}`,
      'percent-encoded too',
    );
    // A credential whose known secret was taken out first: the scheme goes, no stray bracket, and
    // a token that only began with the secret goes whole.
    const afterwards = (text: string) => redactString(withoutSecrets(text, ['Sommer2026']));
    assert.equal(afterwards('auth was Basic Sommer2026'), `auth was ${REDACTED}`);
    assert.equal(afterwards('(auth was "Bearer Sommer2026")'), `(auth was "${REDACTED}")`);
    assert.equal(afterwards('token was Bearer Sommer2026.eyJzdWIiOiJ4In0.c2ln'), `token was ${REDACTED}`);
    assert.equal(afterwards('auth was Basic Sommer2026OmFkYQ=='), `auth was ${REDACTED}`);
    const many = Array.from({ length: 17 }, (_, i) => `secret-${i}`);
    assert.deepEqual(withoutSecrets({ a: 'kept?', n: 1, ok: true }, many), {
      a: REDACTED,
      n: REDACTED,
      ok: true,
    });
  });

  it('redacts a value met again inside itself as [Circular], and the log serializes such an error without throwing', () => {
    const loop: Record<string, unknown> = { password: 'x', note: 'token=abc' };
    loop.self = loop;
    assert.deepEqual(redactValue(loop), {
      password: REDACTED,
      note: `token=${REDACTED}`,
      self: '[Circular]',
    });
    const sink = new LogSink();
    const error = Object.assign(new Error('failed: client_secret=Shh-1'), { context: loop });
    createLogger({ destination: sink }).error({ err: error }, 'boom');
    assert.match(sink.text, /"self":"\[Circular\]"/);
    assert.doesNotMatch(sink.text, /Shh-1/);
  });

  it("redacts an SSO provider's refusal that repeats what it was sent", () => {
    const error = new SsoOidcError(
      'refused',
      'the provider refused the code (invalid_client: got client_secret=Oidc-Secret-1)',
    );
    assert.doesNotMatch(error.message, /Oidc-Secret-1/);
    assert.match(error.message, /invalid_client/);
  });

  it('redacts a quoted URL parameter past a quote escaped inside it', () => {
    assert.equal(redactString('see ?token="a\\"b" then'), `see ?token=${REDACTED} then`);
  });

  it('redacts credentials, private keys, cookies and session IDs under their keys', () => {
    assert.deepEqual(
      redactValue({ credentials: 'a', private_key: 'b', Cookie: 'c', sessionId: 'd', session: 'kept' }),
      {
        credentials: REDACTED,
        private_key: REDACTED,
        Cookie: REDACTED,
        sessionId: REDACTED,
        session: 'kept',
      },
    );
  });

  it('property: no string planted under a password or token key survives, at any depth', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{12,20}$/).map((s) => `S3cr3t${s}`);
    const key = fc.constantFrom('password', 'token', 'Authorization', 'newPassword', 'client_secret');
    const tree = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom('a', 1, null, true),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), tie('node'), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(tree, fc.array(fc.tuple(key, secret), { minLength: 1, maxLength: 3 }), (base, planted) => {
        let value: unknown = base;
        for (const [name, s] of planted) value = { [name]: s, inner: [value] };
        const text = JSON.stringify(redactValue(value));
        for (const [, s] of planted) assert.ok(!text.includes(s));
      }),
    );
  });

  it("keeps every value of a password reset's answer redacted, whatever its keys, and its shape", () => {
    // An old server (passthrough, shadow) or a foreign recording naming the temporary password
    // otherwise: redaction by key name kept it.
    const reset = (responseBody: unknown) =>
      redactExchange(exchange({ operation: 'user.password.reset', responseBody }), SECRET_BODIES)
        .responseBody;
    assert.deepEqual(reset({ temp: 'Tmp-1', ok: true, n: 7, none: null, list: ['Tmp-2'] }), {
      temp: REDACTED,
      ok: true,
      n: REDACTED,
      none: null,
      list: [REDACTED],
    });
    assert.equal(reset('Tmp-3'), REDACTED);
    // Any other operation's answer keeps its values but for secrets by key name.
    assert.deepEqual(
      redactExchange(exchange({ operation: 'user.get', responseBody: { temp: 'kept' } }), SECRET_BODIES)
        .responseBody,
      { temp: 'kept' },
    );
  });

  it('a written recording contains none of the secrets used', async () => {
    const file = tempFile('rec.ndjson');
    const secrets = {
      password: 'PwdInBody-7f3a',
      tempPassword: 'TempPwd-91bc',
      ssoToken: 'SsoToken-4d2e',
      basic: Buffer.from('untis:ApiUserSecret-55').toString('base64'),
      queryToken: 'QueryToken-aa11',
      apiKey: 'IServApiKey-77c1',
      pathToken: 'eyJhbGciOiJIUzI1NiJ9.eyJwYXRoIjoxfQ.PathJwt-3b9',
    };
    const writer = new RecordingWriter({ path: file });
    writer.record(
      exchange({
        operation: 'user.password.set',
        method: 'POST',
        path: '/Service/Core/User/ada.l/password',
        requestBody: { password: secrets.password },
        status: 204,
        responseBody: null,
      }),
    );
    writer.record(
      exchange({
        requestId: 'req-2',
        operation: 'user.password.reset',
        method: 'POST',
        path: '/Service/Core/User/ada.l/password/reset',
        responseBody: { password: secrets.tempPassword },
      }),
    );
    writer.record(
      exchange({
        requestId: 'req-3',
        operation: 'sso.authenticate',
        method: 'POST',
        path: '/Service/Sso/authenticate',
        requestFormat: 'form',
        requestBody: { username: 'ada.l' },
        responseBody: {
          username: 'ada.l',
          token: secrets.ssoToken,
          return_to: `https://proxy.example/sso/continue?token=${secrets.ssoToken}`,
        },
      }),
    );
    writer.record(
      exchange({
        requestId: 'req-4',
        path: `/Service/Core/Entity/User/Bearer%20${secrets.pathToken}`,
        query: `token=${secrets.queryToken}&x-iserv-authentication=${secrets.apiKey}`,
        requestBody: { authorization: `Basic ${secrets.basic}` },
        responseBody: { errors: [{ message: `Basic ${secrets.basic}` }] },
      }),
    );
    await writer.close();
    const text = readFileSync(file, 'utf8');
    for (const secret of Object.values(secrets)) assert.ok(!text.includes(secret), `${secret} leaked`);
    const { exchanges, problems } = await readRecording(file);
    assert.deepEqual(problems, []);
    assert.equal(exchanges.length, 4);
    assert.deepEqual(exchanges[0]?.requestBody, { password: REDACTED });
    assert.deepEqual(exchanges[1]?.responseBody, { password: REDACTED });
    assert.deepEqual(exchanges[2]?.responseBody, {
      username: 'ada.l',
      token: REDACTED,
      return_to: `https://proxy.example/sso/continue?token=${REDACTED}`,
    });
    assert.equal(exchanges[3]?.query, `token=${REDACTED}&x-iserv-authentication=${REDACTED}`);
    assert.equal(exchanges[3]?.path, `/Service/Core/Entity/User/${REDACTED}`);
    // The file is readable only by its owner.
    assert.equal(statSync(file).mode & 0o077, 0);
  });
});

describe('reading a recording', () => {
  it('gives each line with its number: CRLF, a last line without newline, characters split across chunks', async () => {
    const file = tempFile('lines.txt');
    // 64 KiB chunks: the `ü` at the end of the first one is split between two.
    const first = `${'a'.repeat(64 * 1024 - 1)}ü`;
    writeFileSync(file, `${first}\r\n\nzwei\r\ndrei`);
    const lines: unknown[] = [];
    for await (const line of fileLines(file, 1024 * 1024)) lines.push(line);
    assert.deepEqual(lines, [
      { number: 1, text: first },
      { number: 2, text: '' },
      { number: 3, text: 'zwei' },
      { number: 4, text: 'drei' },
    ]);
    const empty = tempFile('empty.txt');
    writeFileSync(empty, '');
    for await (const line of fileLines(empty, 10))
      assert.fail(`a line in an empty file: ${JSON.stringify(line)}`);
  });

  it('skips a line longer than its bound to its end, and numbers the lines after it right', async () => {
    const file = tempFile('long.txt');
    writeFileSync(file, `short\n${'x'.repeat(200_000)}\nafter\n${'y'.repeat(11)}`);
    const lines: unknown[] = [];
    for await (const line of fileLines(file, 10)) lines.push(line);
    assert.deepEqual(lines, [
      { number: 1, text: 'short' },
      { number: 2, tooLong: true },
      { number: 3, text: 'after' },
      { number: 4, tooLong: true },
    ]);
  });

  it('leaves a line over its bound out as a problem, and reads the exchanges around it', async () => {
    // One over V8's longest string (about 512 MiB) ended compare and replay with a RangeError
    // from inside node:readline: a stack trace, no report. Read with a bound of 1 MiB here, as
    // with its 256 MiB by default.
    const file = tempFile('huge.ndjson');
    writeFileSync(
      file,
      [
        JSON.stringify(exchange({ requestId: 'before' })),
        JSON.stringify(exchange({ requestId: 'huge', responseBody: { note: 'x'.repeat(1024 * 1024) } })),
        JSON.stringify(exchange({ requestId: 'after' })),
        '',
      ].join('\n'),
    );
    const { exchanges, problems } = await readRecording(file, { maxLineBytes: 1024 * 1024 });
    assert.deepEqual(
      exchanges.map((e) => e.requestId),
      ['before', 'after'],
    );
    assert.deepEqual(problems, [{ line: 2, message: 'longer than 1 MiB' }]);
    // Within the default bound, the same line is an exchange.
    assert.equal((await readRecording(file)).exchanges.length, 3);
  });
});

describe('RecordingWriter', () => {
  it('writes one schema-valid line per exchange, in order, appending to an existing file', async () => {
    const file = tempFile('rec.ndjson');
    writeFileSync(file, `${JSON.stringify(exchange({ requestId: 'old' }))}\n`);
    const writer = new RecordingWriter({ path: file });
    for (let i = 0; i < 50; i += 1) writer.record(exchange({ requestId: `r${i}` }));
    // Nothing is written synchronously: the caller never waits for the disk.
    assert.equal(readFileSync(file, 'utf8').split('\n').filter(Boolean).length, 1);
    await writer.flush();
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    assert.deepEqual(
      lines.map((line) => recordedExchangeSchema.parse(JSON.parse(line)).requestId),
      ['old', ...Array.from({ length: 50 }, (_, i) => `r${i}`)],
    );
    writer.record(exchange({ requestId: 'last' }));
    await writer.close();
    writer.record(exchange({ requestId: 'after-close' }));
    await writer.flush();
    const all = readFileSync(file, 'utf8');
    assert.ok(all.includes('"last"'));
    assert.ok(!all.includes('after-close'));
    assert.equal(writer.written, 51);
  });

  it('records only the operations its globs name', async () => {
    const file = tempFile('rec.ndjson');
    const writer = new RecordingWriter({ path: file, operations: ['user.*', 'group.get'] });
    for (const operation of [
      'user.get',
      'user.link.groups.add',
      'group.get',
      'group.list',
      'sso.authenticate',
    ]) {
      writer.record(exchange({ operation, requestId: operation }));
    }
    await writer.close();
    const { exchanges } = await readRecording(file);
    assert.deepEqual(
      exchanges.map((e) => e.operation),
      ['user.get', 'user.link.groups.add', 'group.get'],
    );
  });

  it('rotates before a file would pass maxBytes, keeping maxFiles rotated files', async () => {
    const file = tempFile('rec.ndjson');
    const lineBytes = Buffer.byteLength(
      `${JSON.stringify(redactExchange(exchange({ requestId: 'r00' })))}\n`,
    );
    const writer = new RecordingWriter({ path: file, maxBytes: lineBytes * 3, maxFiles: 2 });
    // 10 lines of equal size: files of 3 lines; the oldest ones fall off beyond .2.
    for (let i = 0; i < 10; i += 1) {
      writer.record(exchange({ requestId: `r${String(i).padStart(2, '0')}` }));
      // Several flushes, so rotation also happens across appends, not only within one.
      if (i % 4 === 0) await writer.flush();
    }
    await writer.close();
    const ids = async (f: string) => (await readRecording(f)).exchanges.map((e) => e.requestId);
    assert.deepEqual(await ids(file), ['r09']);
    assert.deepEqual(await ids(`${file}.1`), ['r06', 'r07', 'r08']);
    assert.deepEqual(await ids(`${file}.2`), ['r03', 'r04', 'r05']);
    assert.ok(!existsSync(`${file}.3`));
    for (const f of [file, `${file}.1`, `${file}.2`]) assert.ok(statSync(f).size <= lineBytes * 3);
  });

  it('drops (and counts) lines beyond its queue limit instead of growing without bound', async () => {
    const file = tempFile('rec.ndjson');
    const writer = new RecordingWriter({ path: file, maxPendingLines: 5 });
    for (let i = 0; i < 8; i += 1) writer.record(exchange({ requestId: `r${i}` }));
    assert.equal(writer.dropped, 3);
    await writer.close();
    assert.equal((await readRecording(file)).exchanges.length, 5);
  });

  it('closes within its bound when the disk takes no writes, reporting the lines left out', async () => {
    // close() waited for the last write for ever: a stalled disk held the proxy's shutdown.
    const fifo = path.join(tempDir('stalled'), 'rec.ndjson');
    makeFifo(fifo); // opening it for writing waits for a reader, as a write to a stalled disk waits
    const errors: unknown[] = [];
    const writer = new RecordingWriter({ path: fifo, onError: (error) => errors.push(error) });
    writer.record(exchange({ requestId: 'r1' }));
    writer.record(exchange({ requestId: 'r2' }));
    await writer.close(300);
    assert.match(
      String(errors[0]),
      /the last 2 exchanges of the recording could not be written within 300 ms \(a slow or stalled disk\): left out/,
    );
    // A reader lets the write under way end: it is written, and the file closed after it.
    assert.equal((await readFifo(fifo)).trim().split('\n').length, 2);
  });

  it('reports a write failure to onError and never throws to the caller', async () => {
    const errors: unknown[] = [];
    const writer = new RecordingWriter({
      path: path.join(tempFile('x'), 'missing-dir', 'rec.ndjson'),
      onError: (error) => errors.push(error),
    });
    writer.record(exchange());
    await writer.close();
    assert.equal(errors.length, 1);
  });

  it('rejects invalid options', () => {
    assert.throws(() => new RecordingWriter({ path: 'x', maxBytes: 0 }), RangeError);
    assert.throws(() => new RecordingWriter({ path: 'x', maxFiles: -1 }), RangeError);
  });

  it('reads a recording and names the lines it cannot use', async () => {
    const file = tempFile('rec.ndjson');
    writeFileSync(
      file,
      [
        JSON.stringify(exchange()),
        'not json',
        JSON.stringify({ ...exchange(), status: 'two hundred' }),
        '',
        JSON.stringify(exchange({ requestId: 'r2' })),
      ].join('\n'),
    );
    const { exchanges, problems } = await readRecording(file);
    assert.deepEqual(
      exchanges.map((e) => e.requestId),
      ['req-1', 'r2'],
    );
    assert.deepEqual(
      problems.map((p) => p.line),
      [2, 3],
    );
    assert.match(problems[1]?.message ?? '', /^status: /);
  });

  it('reads a recording saved with a byte order mark (an editor on Windows)', async () => {
    const file = tempFile('bom.ndjson');
    writeFileSync(
      file,
      `\uFEFF${JSON.stringify(exchange())}\n${JSON.stringify(exchange({ requestId: 'r2' }))}\n`,
    );
    const { exchanges, problems } = await readRecording(file);
    assert.deepEqual([exchanges.map((e) => e.requestId), problems], [['req-1', 'r2'], []]);
  });
});

describe('request parts of a recorded exchange', () => {
  it('splits a URL into the path below the base path and the raw query', () => {
    assert.deepEqual(
      recordedLocation('http://h/iserv/api/Service/Core/Entity/User?extended[]=1&a=%20', '/iserv/api'),
      {
        path: '/Service/Core/Entity/User',
        query: 'extended[]=1&a=%20',
      },
    );
    assert.deepEqual(recordedLocation('/iserv/api', '/iserv/api'), { path: '/', query: '' });
    assert.deepEqual(recordedLocation('/elsewhere/x', '/iserv/api'), { path: '/elsewhere/x', query: '' });
    assert.deepEqual(recordedLocation('/iserv/apix/y', '/iserv/api'), { path: '/iserv/apix/y', query: '' });
    // The base path spelt otherwise, as the request matched it: below it all the same.
    assert.deepEqual(recordedLocation('/iserv/%61pi/Service/Core/Entity/User/x', '/iserv/api'), {
      path: '/Service/Core/Entity/User/x',
      query: '',
    });
    assert.deepEqual(recordedLocation('/iserv/api/', '/iserv/api'), { path: '/', query: '' });
    assert.deepEqual(recordedLocation('/iserv/%zz/x', '/iserv/api'), { path: '/iserv/%zz/x', query: '' });
  });

  it('records JSON bodies parsed, form bodies as fields, anything else as null marked unreadable (none or a blank one unmarked)', async () => {
    assert.deepEqual(await recordedBody('application/json', '{"firstname":"Ada"}'), {
      requestBody: { firstname: 'Ada' },
    });
    assert.deepEqual(await recordedBody(undefined, '["a","b"]'), { requestBody: ['a', 'b'] });
    // `curl -d '{…}'` sends JSON as application/x-www-form-urlencoded; it stays JSON.
    assert.deepEqual(await recordedBody('application/x-www-form-urlencoded', '{"firstname":"Ada"}'), {
      requestBody: { firstname: 'Ada' },
    });
    // What the operation reads decides when it is known.
    assert.deepEqual(await recordedBody('application/x-www-form-urlencoded', '{"a":1}', 'form'), {
      requestFormat: 'form',
      requestBody: { '{"a":1}': '' },
    });
    assert.deepEqual(await recordedBody('application/x-www-form-urlencoded', 'a=1', 'json'), {
      requestBody: null,
      requestBodyOmitted: 'unreadable',
    });
    assert.deepEqual(await recordedBody('application/json', 'username=x', 'form'), {
      requestFormat: 'form',
      requestBody: null,
      requestBodyOmitted: 'unreadable',
    });
    assert.deepEqual(await recordedBody('application/x-www-form-urlencoded', 'username=ada.l&username=x'), {
      requestFormat: 'form',
      requestBody: { username: 'ada.l' },
    });
    const multipart = new FormData();
    multipart.append('username', 'ada.l');
    const request = new Request('http://h/', { method: 'POST', body: multipart });
    assert.deepEqual(
      await recordedBody(
        request.headers.get('content-type') ?? '',
        new Uint8Array(await request.arrayBuffer()),
      ),
      { requestFormat: 'form', requestBody: { username: 'ada.l' } },
    );
    assert.deepEqual(await recordedBody('application/json', '{broken'), {
      requestBody: null,
      requestBodyOmitted: 'unreadable',
    });
    assert.deepEqual(await recordedBody('application/json', Buffer.from('{"a":"\xfc"}', 'latin1')), {
      requestBody: null,
      requestBodyOmitted: 'unreadable',
    });
    assert.deepEqual(await recordedBody('application/json', ''), { requestBody: null });
    assert.deepEqual(await recordedBody('application/json', ' \r\n'), { requestBody: null });
    assert.deepEqual(recordedAnswer(''), null);
    assert.deepEqual(recordedAnswer('<html>'), null);
    assert.deepEqual(recordedAnswer('{"a":1}'), { a: 1 });
  });

  it('keeps form fields named like members of every object (__proto__, toString, constructor)', async () => {
    // `name in fields` was true for them on a plain object, and assigning __proto__ set the prototype.
    const recorded = await recordedBody(
      'application/x-www-form-urlencoded',
      '__proto__=a&toString=b&constructor=c&username=ada.l&toString=second',
      'form',
    );
    assert.equal(
      JSON.stringify(recorded.requestBody),
      '{"__proto__":"a","toString":"b","constructor":"c","username":"ada.l"}',
    );
  });

  it("keeps a password operation's request body only as a whole [redacted], whatever its shape", async () => {
    for (const body of [
      '{"password":"Right-Key"}',
      '{"pass":"Misspelt-Key"}',
      '["Bare-Array"]',
      'Plain-Text',
    ]) {
      for (const bytes of [body, new TextEncoder().encode(body)]) {
        assert.deepEqual(await recordedRequestBody(userPasswordSetOperation, 'application/json', bytes), {
          requestBody: REDACTED,
        });
      }
    }
    // Nothing sent: nothing to hide.
    assert.deepEqual(await recordedRequestBody(userPasswordSetOperation, 'application/json', ''), {
      requestBody: null,
    });
    assert.deepEqual(await recordedRequestBody(userPasswordSetOperation, undefined, undefined), {
      requestBody: null,
    });
    // Any other operation, or none: the body as recordedBody reads it (redacted by key name later).
    assert.deepEqual(await recordedRequestBody(userUpdateOperation, 'application/json', '{"pass":"x"}'), {
      requestBody: { pass: 'x' },
    });
    assert.deepEqual(await recordedRequestBody(undefined, 'application/x-www-form-urlencoded', 'a=1'), {
      requestFormat: 'form',
      requestBody: { a: '1' },
    });
  });
});

describe('the recorded answer of a request', () => {
  it('is the parsed JSON, or null marked too-large past the size cap, cancelling the copy instead of holding it', async () => {
    assert.deepEqual(await cappedAnswer(new Response('{"a":[1,2]}').body), { responseBody: { a: [1, 2] } });
    // No body, or not JSON: null, and nothing was left out.
    assert.deepEqual(await cappedAnswer(new Response('not json').body), { responseBody: null });
    assert.deepEqual(await cappedAnswer(new Response(null, { status: 204 }).body), { responseBody: null });
    let pulled = 0;
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1;
        controller.enqueue(new Uint8Array(1024).fill(0x20));
      },
      cancel() {
        cancelled = true;
      },
    });
    assert.deepEqual(await cappedAnswer(endless, undefined, 10 * 1024), {
      responseBody: null,
      responseBodyOmitted: 'too-large',
    });
    assert.ok(cancelled, 'the copy was cancelled');
    assert.ok(pulled <= 12, `read only up to the cap (${pulled} chunks)`);
  });

  it('is read through its Content-Encoding: either deflate, gzip, br; the cap counts decoded bytes', async () => {
    const json = Buffer.from('{"a":"b"}');
    for (const [encoding, bytes] of [
      ['deflate', deflateSync(json)],
      ['Deflate', deflateRawSync(json)],
      [' x-gzip ', gzipSync(json)],
      ['identity', json],
    ] as const) {
      assert.deepEqual(await answerBody(bytes, encoding), { responseBody: { a: 'b' } }, encoding);
    }
    for (const [encoding, bytes] of [
      ['gzip', json],
      ['zstd', json],
      ['gzip, br', brotliCompressSync(gzipSync(json))],
      ['constructor', json],
    ] as const) {
      assert.deepEqual(
        await answerBody(bytes, encoding),
        { responseBody: null, responseBodyOmitted: 'undecodable' },
        encoding,
      );
    }
    // No bytes are no body, whatever coding the answer names (a HEAD, a 304): not undecodable.
    assert.deepEqual(await answerBody(Buffer.alloc(0), 'gzip'), { responseBody: null });
    assert.deepEqual(await answerBody(gzipSync(Buffer.alloc(2048, 0x20)), 'gzip', 1024), {
      responseBody: null,
      responseBodyOmitted: 'too-large',
    });
  });
});
