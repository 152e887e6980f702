import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { LEGACY_OPERATIONS, SECRET_BODIES } from '../legacy/operations.js';
import { OPERATION_PATTERN, OPERATION_PATTERN_RULE, unknownPatterns } from '../lib/operation-patterns.js';
import { RecordingWriter } from '../migration/recording.js';
import { replayExchanges } from '../migration/replay.js';
import {
  type Command,
  CommandError,
  flag,
  loadRecording,
  refuseInputAsOut,
  stringListOption,
  stringOption,
  terminalProgressBar,
} from './command.js';

/** Node's longest timer, in ms (about 24.8 days): a longer `--timeout` cannot be waited for. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

function positiveNumber(
  text: string | undefined,
  name: string,
  integer: boolean,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new CommandError(`--${name} must be a positive ${integer ? 'integer' : 'number'}: ${text}`);
  }
  if (value > max) throw new CommandError(`--${name} must be at most ${max}: ${text}`);
  return value;
}

function readPassword(env: NodeJS.ProcessEnv, envName: string | undefined, file: string | undefined): string {
  if ((envName === undefined) === (file === undefined)) {
    throw new CommandError(
      'give the password with exactly one of --password-env VAR or --password-file FILE',
    );
  }
  if (envName !== undefined) {
    const value = env[envName];
    if (value === undefined || value === '')
      throw new CommandError(`environment variable ${envName} is not set`);
    return value;
  }
  try {
    // A trailing newline (as `echo` writes it) is not part of the password.
    const value = readFileSync(file ?? '', 'utf8').replace(/\r?\n$/, '');
    if (value === '') throw new CommandError(`password file ${file} is empty`);
    return value;
  } catch (error) {
    if (error instanceof CommandError) throw error;
    throw new CommandError(
      `cannot read password file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

function targetUrl(text: string | undefined): string {
  if (text === undefined)
    throw new CommandError('missing --target URL (the legacy base URL, e.g. http://host/iserv/api)');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CommandError(`--target is not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CommandError('--target must be http or https');
  if (url.username !== '' || url.password !== '') {
    throw new CommandError(
      '--target must not hold credentials; use --user and --password-env/--password-file',
    );
  }
  if (url.search !== '' || url.hash !== '')
    throw new CommandError('--target must be a base URL without ? or #');
  return url.href.replace(/\/+$/, '');
}

/** `idm-compat replay FILE`: sends recorded requests to a legacy-speaking server and records its answers. */
export const replayCommand: Command = {
  path: ['replay'],
  summary: 'Replay a recording against a server that speaks the legacy API and record its answers.',
  usage:
    'FILE --target URL --user NAME (--password-env VAR | --password-file F) --out FILE [--operations GLOB…] [--reads-only | --writes] [--concurrency N] [--rate N] [--timeout MS] [--json]',
  help: `Sends every recorded request of FILE (NDJSON, see docs/migration.md) to the target and writes
its answers, in the same format and with the same request ids, to --out (replaced if it exists),
so that \`idm-compat compare FILE OUT\` pairs them. Reads (GET) only unless --writes; a write
waits for the requests before it and runs alone, so writes arrive in recorded order. Requests
whose body held a redacted secret (password operations) are skipped: replaying would send the
placeholder. An answer over 8 MiB is written without its body ("responseBody": null,
"responseBodyOmitted": "too-large"), as the proxy records it; compare does not compare it. Exit code 1 when a request got no answer, a line of FILE was unusable, or the
answers could not all be written to --out.

Options:
  --target URL          the target's legacy base URL, e.g. http://127.0.0.1:8080/iserv/api
  --user NAME           API user the target accepts (HTTP Basic)
  --password-env VAR    read its password from environment variable VAR
  --password-file F     read its password from file F (one trailing newline is dropped)
  --out FILE            where the answers are written (NDJSON)
  --operations GLOB     only these operations (repeatable): an id (user.get), a glob (user.*) or *
  --reads-only          only GET requests (the default)
  --writes              also replay writes (POST, PUT, DELETE): they change the target
  --concurrency N       reads in flight at once (default 4)
  --rate N              at most N requests started per second (default unlimited)
  --timeout MS          per-request timeout, up to the answer's last byte (default 30000)
  --json                print the summary as JSON (no progress bar)

Example:
  IDM_PW=… idm-compat replay old.ndjson --target https://proxy.school.example/iserv/api \\
    --user migration --password-env IDM_PW --out proxy.ndjson`,
  options: {
    target: { type: 'string' },
    user: { type: 'string' },
    'password-env': { type: 'string' },
    'password-file': { type: 'string' },
    out: { type: 'string', short: 'o' },
    operations: { type: 'string', multiple: true },
    'reads-only': { type: 'boolean' },
    writes: { type: 'boolean' },
    concurrency: { type: 'string' },
    rate: { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: true,
  async run(args, io) {
    const [file, ...rest] = args.positionals;
    if (file === undefined) throw new CommandError('missing the recording FILE');
    if (rest.length > 0) throw new CommandError(`one FILE only; unexpected: ${rest.join(' ')}`);
    const target = targetUrl(stringOption(args, 'target'));
    const user = stringOption(args, 'user');
    if (user === undefined || user === '') throw new CommandError('missing --user NAME');
    const out = stringOption(args, 'out');
    if (out === undefined) throw new CommandError('missing --out FILE');
    if (flag(args, 'writes') && flag(args, 'reads-only')) {
      throw new CommandError('--reads-only and --writes exclude each other');
    }
    const concurrency = positiveNumber(stringOption(args, 'concurrency'), 'concurrency', true);
    const rate = positiveNumber(stringOption(args, 'rate'), 'rate', false);
    const timeoutMs = positiveNumber(stringOption(args, 'timeout'), 'timeout', true, MAX_TIMEOUT_MS);
    const operations = stringListOption(args, 'operations');
    const badPattern = operations.find((pattern) => !OPERATION_PATTERN.test(pattern));
    if (badPattern !== undefined) {
      throw new CommandError(`--operations ${badPattern}: ${OPERATION_PATTERN_RULE}`);
    }
    // A typo replayed nothing and said so only as "0 of N" with exit 0.
    const [unknown] = unknownPatterns(
      operations,
      LEGACY_OPERATIONS.map((operation) => operation.id),
      (pattern) => `--operations ${pattern}`,
    );
    if (unknown !== undefined) throw new CommandError(`${unknown.path}: ${unknown.message}`);
    const password = readPassword(
      io.env,
      stringOption(args, 'password-env'),
      stringOption(args, 'password-file'),
    );
    refuseInputAsOut('--out', out, [
      ['the recording FILE', file],
      ['--password-file', stringOption(args, 'password-file')],
    ]);
    const recording = await loadRecording(file, io);
    // As compare: an empty recording (one never switched on, the wrong file) is no replay of it.
    if (recording.exchanges.length === 0) {
      throw new CommandError(
        recording.invalid > 0
          ? `no usable exchanges in ${file}`
          : `no exchanges in ${file}: nothing to replay`,
      );
    }
    try {
      // A file is emptied first and made readable by its owner only. Not a device (/dev/stdout,
      // /dev/null: its mode is every user's), nor a FIFO (a reader would take the emptying's close
      // for the end); both are written to as they are. A folder is refused now, not after the replay.
      const existing = statSync(out, { throwIfNoEntry: false });
      if (existing?.isDirectory()) throw Object.assign(new Error('a folder'), { code: 'EISDIR' });
      if (existing === undefined || existing.isFile()) {
        writeFileSync(out, '', { mode: 0o600 });
        // The mode applies to a new file only: one replaced keeps its own (0644, say), and the
        // answers it gets (names, addresses of users) would be readable by every user of the machine.
        chmodSync(out, 0o600);
      }
    } catch (error) {
      throw new CommandError(`cannot write ${out}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    // The writer keeps going after a failed write; the first error is kept and reported at the end.
    let writeError: unknown;
    let answers = 0;
    const writer = new RecordingWriter({
      path: out,
      // A password operation's body from a recording the proxy did not write (`{"pass": …}`) is
      // sent as recorded, and written out only as [redacted].
      secrets: SECRET_BODIES,
      maxPendingLines: Number.POSITIVE_INFINITY,
      onError: (error) => {
        writeError ??= error;
      },
    });
    const bar = await terminalProgressBar(
      io,
      flag(args, 'json'),
      'replaying [{bar}] {value}/{total} requests',
    );
    let started = false;
    let summary: Awaited<ReturnType<typeof replayExchanges>>;
    try {
      summary = await replayExchanges(
        recording.exchanges,
        {
          target,
          user,
          password,
          operations:
            stringListOption(args, 'operations').length > 0
              ? stringListOption(args, 'operations')
              : undefined,
          writes: flag(args, 'writes'),
          concurrency,
          rate,
          timeoutMs,
          onProgress: (done, total) => {
            if (!started) bar?.start(total, 0);
            started = true;
            bar?.update(done);
          },
        },
        (exchange) => {
          answers += 1;
          writer.record(exchange);
        },
      );
    } finally {
      bar?.stop();
      try {
        await writer.close();
      } catch (error) {
        writeError ??= error;
      }
    }
    const skipped = Object.values(summary.skipped).reduce((sum, count) => sum + count, 0);
    if (flag(args, 'json')) {
      io.out(
        JSON.stringify({
          file,
          out,
          target,
          total: summary.total,
          replayed: summary.replayed,
          failed: summary.failures.length,
          skipped: summary.skipped,
          invalidLines: recording.invalid,
          statuses: summary.statuses,
          failures: summary.failures,
        }),
      );
    } else {
      const statuses = Object.entries(summary.statuses)
        .map(([status, count]) => `${status}: ${count}`)
        .join(', ');
      io.out(
        `${file}: replayed ${summary.replayed} of ${summary.total} requests against ${target} → ${out}` +
          ` (${skipped} skipped: ${summary.skipped.writes} writes, ${summary.skipped.operations} other operations,` +
          ` ${summary.skipped.redactedBody} with a redacted body, ${summary.skipped.unreadableBody} with a body the recording could not hold;` +
          ` ${summary.failures.length} failed)` +
          (statuses === '' ? '' : `\nstatuses: ${statuses}`),
      );
    }
    // On stderr with --json too, as the docs say: a script keeps stdout's JSON, a person sees these.
    for (const failure of summary.failures.slice(0, 20)) {
      io.err(`  ${failure.requestId} (${failure.operation}): ${failure.message}`);
    }
    if (summary.failures.length > 20) io.err(`  … and ${summary.failures.length - 20} more failures`);
    // Answers all the same, and recorded (compare shows them as status differences); but a run of
    // nothing but 401s is the replay user's own credentials refused, and said so.
    const answered = Object.values(summary.statuses).reduce((sum, count) => sum + count, 0);
    if (answered > 0 && summary.statuses[401] === answered)
      io.err(`warning: every answer was 401: ${target} refused the credentials of --user ${user}`);
    if (writeError !== undefined || writer.written < answers) {
      const reason = writeError instanceof Error ? `${writeError.message}; ` : '';
      io.err(`error: cannot write ${out}: ${reason}${writer.written} of ${answers} answers written`);
      return 1;
    }
    return summary.failures.length > 0 || recording.invalid > 0 ? 1 : 0;
  },
};
