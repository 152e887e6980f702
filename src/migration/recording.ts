import { statSync } from 'node:fs';
import { type FileHandle, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { type AppConfig, ConfigError } from '../config/load.js';
import { inShippedMappings, mappingsFolder, SHIPPED_FILES } from '../config/mappings-folder.js';
import { hasDotSegment } from '../lib/dot-segments.js';
import { fileLines } from '../lib/file-lines.js';
import { nestedDeeperThan } from '../lib/json-depth.js';
import { hasControlCharacter } from '../lib/legacy-id.js';
import { patternMatches } from '../lib/operation-patterns.js';
import { hasLayoutControl } from '../lib/quote.js';
import { realPath, statIfThere } from '../lib/real-path.js';
import { REDACTED, redactLeaves, redactPath, redactQuery, redactValue } from '../lib/redact.js';

/** How an exchange was answered: the proxy's per-operation modes, or a `replay` run. */
export const RECORDING_MODES = ['translate', 'passthrough', 'shadow', 'replay'] as const;

/**
 * A field of a recording line that replay's and compare's reports print (the request id, the
 * operation in every table row, the method in samples): a line break in it would forge report
 * lines, an ANSI escape would rewrite the terminal's table, so a control character makes the
 * line invalid.
 */
function printedText() {
  return z
    .string()
    .min(1)
    .refine(
      (text) => !hasControlCharacter(text) && !hasLayoutControl(text),
      'must not contain control characters',
    );
}

/** The statuses whose answers have no body: one of them cannot have had a body too large to keep. */
const NO_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * Why an answer's body was recorded as null although it had one: larger than
 * RECORDED_ANSWER_MAX_BYTES (`too-large`, also once decoded), nested deeper than MAX_BODY_DEPTH
 * (`too-deep`), or compressed in a way that could not be read (`undecodable`: a Content-Encoding
 * other than gzip, deflate or br, or bytes that do not decode).
 * `compare` counts such a pair as not compared: its bodies are unknown, not equal.
 */
export const RESPONSE_BODY_OMITTED = ['too-large', 'too-deep', 'undecodable'] as const;

/**
 * One recorded request with its answer: one line of a recording (NDJSON). `path` is below the
 * legacy base path (`/Service/Core/Entity/User/ada.l`); `query` is the raw query string without
 * `?` (`''` when none), kept raw so repeated and bracketed keys (`extended[]`) replay as sent.
 */
export const recordedExchangeSchema = z
  .object({
    time: z.iso.datetime({ offset: true }).describe('When the request arrived (ISO 8601)'),
    requestId: printedText().describe('Request id; a replay keeps it, so compare can pair the two'),
    apiUser: z.string().nullable().describe('The authenticated API user (null when none)'),
    operation: printedText().describe('Legacy operation id, e.g. user.get'),
    mode: z.enum(RECORDING_MODES),
    method: printedText().describe('HTTP method, upper case'),
    path: z
      .string()
      .startsWith('/')
      // A URL parser resolves them: replayed, `/../../metrics` would leave --target's base path.
      .refine((path) => !hasDotSegment(path), 'must not contain "." or ".." segments')
      .describe('Path below the legacy base path'),
    query: z.string().describe('Raw query string without ?, empty when none'),
    requestFormat: z
      .enum(['json', 'form'])
      .optional()
      .describe('How the body was sent: JSON (default) or form fields'),
    requestBody: z.unknown().describe('Parsed JSON, the form fields as an object, or null'),
    // Optional, as responseBodyOmitted. `replay` does not send such a request: with no body, a
    // write the proxy refused for its body (a DELETE's) would be carried out on the target.
    requestBodyOmitted: z
      .literal('unreadable')
      .optional()
      .describe(
        'Set when the request had a body the recording cannot hold: not UTF-8, not JSON nor form fields, or not read at all (refused for its length or its Content-Encoding)',
      ),
    status: z.int().min(0).max(999),
    responseBody: z.unknown().describe('Parsed JSON answer, or null (empty or not JSON)'),
    // Optional, so that recordings written before it still read; absent, a null body is one the
    // answer did not have (a 204) or that was not JSON, and two of them are equal answers.
    responseBodyOmitted: z
      .enum(RESPONSE_BODY_OMITTED)
      .optional()
      .describe(
        'Why responseBody is null though the answer had one: too-large (over 8 MiB), too-deep, undecodable',
      ),
    durationMs: z.number().min(0),
  })
  .refine(
    (line) =>
      line.responseBodyOmitted === undefined ||
      (line.responseBody === null && !NO_BODY_STATUSES.has(line.status)),
    {
      path: ['responseBodyOmitted'],
      message: 'only with a null responseBody of an answer that has a body (not 204, 205 or 304)',
    },
  )
  .refine((line) => line.requestBodyOmitted === undefined || line.requestBody === null, {
    path: ['requestBodyOmitted'],
    message: 'only with a null requestBody',
  });

/** One line of a recording. */
export type RecordedExchange = z.infer<typeof recordedExchangeSchema>;

/**
 * How deep a request or answer body may nest arrays and objects to be compared (`{"a":[1]}` is
 * two levels). Legacy bodies stay within a handful; the comparison, redaction and normalisation
 * walk bodies recursively, and a body nested tens of thousands deep would overflow the stack.
 * A recording line beyond it is a bad line (`compare`, `replay`); in shadow mode such an answer
 * is an error, not compared.
 */
export const MAX_BODY_DEPTH = 64;

/**
 * The exchange with every secret replaced: no credentials, passwords or SSO tokens. A body
 * nested deeper than MAX_BODY_DEPTH is kept as `null`, as an answer over the size cap is: the
 * redaction's walk would overflow the stack on it, and `compare` and `replay` refuse such a line.
 * Such an answer is marked `responseBodyOmitted: "too-deep"`.
 */
export function redactExchange(
  exchange: RecordedExchange,
  secrets: SecretBodies = NO_SECRET_BODIES,
): RecordedExchange {
  const tooDeep = nestedDeeperThan(exchange.responseBody, MAX_BODY_DEPTH);
  return {
    ...exchange,
    path: redactPath(exchange.path),
    query: redactQuery(exchange.query),
    requestBody: redactedRequestBody(exchange, secrets),
    responseBody: redactedAnswerBody(exchange, secrets),
    ...(tooDeep ? { responseBodyOmitted: 'too-deep' as const } : {}),
  };
}

/**
 * The operations (by id) whose bodies are secrets whatever their shape: `requests`, whose request
 * body carries a password (the password operations), and `answers`, whose answer does (the
 * password resets' temporary one). A misspelt key or a bare string would slip past redaction by
 * key name; the legacy routes list them (`SECRET_BODIES` in src/legacy/operations.ts).
 */
export interface SecretBodies {
  readonly requests: ReadonlySet<string>;
  readonly answers: ReadonlySet<string>;
}

export const NO_SECRET_BODIES: SecretBodies = { requests: new Set(), answers: new Set() };

/**
 * A request body as the migration tools write it: of an operation in `secrets.requests` (the
 * password operations) a whole `"[redacted]"` whatever its shape, as the proxy records it; else
 * redacted by key name.
 */
export function redactedRequestBody(
  exchange: Pick<RecordedExchange, 'operation' | 'requestBody'>,
  secrets: SecretBodies,
): unknown {
  const body = exchange.requestBody;
  if (body !== null && body !== undefined && secrets.requests.has(exchange.operation)) return REDACTED;
  return redactedBody(body);
}

/**
 * An answer body as the migration tools write or compare it: redacted by key name, and of an
 * operation in `secrets.answers` (the password resets) with every value `"[redacted]"`, its keys
 * and shape kept, so that two answers still compare by shape.
 */
export function redactedAnswerBody(
  exchange: Pick<RecordedExchange, 'operation' | 'responseBody'>,
  secrets: SecretBodies,
): unknown {
  const body = redactedBody(exchange.responseBody);
  return secrets.answers.has(exchange.operation) ? redactLeaves(body) : body;
}

function redactedBody(body: unknown): unknown {
  return body === undefined || nestedDeeperThan(body, MAX_BODY_DEPTH) ? null : redactValue(body);
}

/**
 * Whether a request body held a secret that was redacted, whole or inside a string (`"Englisch
 * [redacted]"`): replaying it would send the placeholder, and create or rename something after it.
 */
export function hasRedactedBody(exchange: RecordedExchange): boolean {
  return JSON.stringify(exchange.requestBody ?? null).includes(REDACTED);
}

/** Serialises one exchange as a recording line (redacted, newline-terminated). */
export function exchangeLine(exchange: RecordedExchange, secrets?: SecretBodies): string {
  return `${JSON.stringify(redactExchange(exchange, secrets))}\n`;
}

/** A line of a recording that could not be read. */
export interface RecordingProblem {
  line: number;
  message: string;
}

const MIB = 1024 * 1024;

/**
 * The longest line a recording is read with. The writer's lines stay far below it (an answer is
 * kept up to 8 MiB, a request body up to `server.bodyLimitBytes`, at most 16 MiB, and at most about
 * five times as long written again as JSON); a longer one is
 * none of its exchanges, and is left out as a problem rather than held whole.
 */
const MAX_LINE_BYTES = 256 * MIB;

/**
 * Reads a recording (NDJSON) line by line; invalid lines (and those over `maxLineBytes`, by
 * default MAX_LINE_BYTES) are reported, not thrown.
 */
export async function readRecording(
  file: string,
  { maxLineBytes = MAX_LINE_BYTES }: { maxLineBytes?: number } = {},
): Promise<{ exchanges: RecordedExchange[]; problems: RecordingProblem[] }> {
  const exchanges: RecordedExchange[] = [];
  const problems: RecordingProblem[] = [];
  for await (const read of fileLines(file, maxLineBytes)) {
    const { number } = read;
    if ('tooLong' in read) {
      problems.push({ line: number, message: `longer than ${maxLineBytes / MIB} MiB` });
      continue;
    }
    // A byte order mark (an editor's on Windows) is no part of the first line's JSON.
    const line = number === 1 ? read.text.replace(/^\uFEFF/, '') : read.text;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      problems.push({ line: number, message: 'not JSON' });
      continue;
    }
    const parsed = recordedExchangeSchema.safeParse(value);
    if (parsed.success) {
      const deep = (['requestBody', 'responseBody'] as const).find((key) =>
        nestedDeeperThan(parsed.data[key], MAX_BODY_DEPTH),
      );
      if (deep === undefined) exchanges.push(parsed.data);
      else problems.push({ line: number, message: `${deep}: nested deeper than ${MAX_BODY_DEPTH} levels` });
    } else {
      const issue = parsed.error.issues[0];
      problems.push({
        line: number,
        message: issue ? `${issue.path.join('.') || '(line)'}: ${issue.message}` : 'invalid',
      });
    }
  }
  return { exchanges, problems };
}

/** What the recording path is checked against: its own keys and the files the proxy reads or keeps. */
type RecordingPathConfig = Pick<
  AppConfig,
  'migration' | 'source' | 'store' | 'server' | 'sandbox' | 'secretFiles' | 'mappings'
>;

/**
 * Refuses a `migration.recording.path` the writer could never open — its folder missing or not a
 * folder, or the path itself a folder — with a {@link ConfigError} at that key, at start and in
 * `config check`. The folder is not created: a mistyped path would record, unseen, to a folder
 * nobody looks in (and without it every flush would fail, logged only as a warning).
 */
export function checkRecordingPath(config: RecordingPathConfig): void {
  const file = config.migration.recording?.path;
  if (file === undefined) return;
  const taken = takenByTheProxy(config, file);
  if (taken !== undefined) {
    throw new ConfigError(config.source ?? '(embedded defaults)', [
      {
        path: 'migration.recording.path',
        message: `${taken.recording} is ${taken.what}: recording (and rotating) into it would destroy it; give another file`,
      },
    ]);
  }
  const folder = path.dirname(path.resolve(file));
  const kind = (at: string) => {
    try {
      return statSync(at).isDirectory() ? 'folder' : 'file';
    } catch (error) {
      return (error as NodeJS.ErrnoException).code ?? 'error';
    }
  };
  const inFolder = kind(folder);
  const problem =
    inFolder === 'ENOENT'
      ? `the folder ${folder} does not exist (create it; it is not created for you)`
      : inFolder === 'file'
        ? `${folder} is not a folder`
        : inFolder !== 'folder'
          ? `cannot use the folder ${folder}: ${inFolder}`
          : kind(file) === 'folder'
            ? `${file} is a folder, not a file`
            : undefined;
  if (problem !== undefined) {
    throw new ConfigError(config.source ?? '(embedded defaults)', [
      { path: 'migration.recording.path', message: problem },
    ]);
  }
}

/** Rotated recording files kept by default: `path.1` (newest) … `path.5`. */
const ROTATED_FILES = 5;

/**
 * The first file the proxy reads or keeps its state in that the recording `file` or one of its
 * rotated files (`file.1` … `file.5`) would be: the SQLite store with its journal files, the
 * configuration file, the files its secrets are read from, the TLS files, the sandbox fixture,
 * the compare rules, any file of the mapping profile's folder, or one of the folder idm-compat
 * ships its profiles and compare rules in. The recording appends to it,
 * then renames it away at the first rotation (a store renamed away is a new, empty store at the
 * next start, and the old one deleted five rotations later). Compared by their real paths
 * (symbolic links resolved, also in the folder of a file not there yet), and as the same file
 * (device and inode, a hard link) where both exist.
 */
function takenByTheProxy(
  config: RecordingPathConfig,
  file: string,
): { recording: string; what: string } | undefined {
  const guarded: [what: string, file: string | undefined][] = [
    ['the configuration file', config.source],
    ...config.secretFiles.map((secret): [string, string] => ['a secret file', secret]),
    ['the TLS certificate (server.tls.cert)', config.server.tls?.cert],
    ['the TLS key (server.tls.key)', config.server.tls?.key],
    ['the sandbox fixture (sandbox.fixture)', config.sandbox.fixture],
    ['the compare rules (migration.compare.rules)', config.migration.compare?.rules],
  ];
  if (config.store.type === 'sqlite') {
    const store = config.store.path;
    guarded.push(
      ['the store (store.path)', store],
      ["the store's write-ahead log", `${store}-wal`],
      ["the store's shared memory", `${store}-shm`],
      ["the store's rollback journal", `${store}-journal`],
    );
  }
  let profile: string | undefined;
  try {
    profile = realPath(mappingsFolder(config));
  } catch {
    profile = undefined; // no such folder: the start and `config check` say so in their own words
  }
  const recordings = [file, ...Array.from({ length: ROTATED_FILES }, (_, n) => `${file}.${n + 1}`)];
  for (const recording of recordings) {
    for (const [what, other] of guarded) {
      if (other !== undefined && sameFile(recording, other)) return { recording, what };
    }
    if (profile !== undefined && realPath(recording).startsWith(`${profile}${path.sep}`))
      return { recording, what: `a file in the mapping profile's folder (${profile})` };
    if (inShippedMappings(recording)) return { recording, what: SHIPPED_FILES };
  }
  return undefined;
}

function sameFile(a: string, b: string): boolean {
  if (realPath(a) === realPath(b)) return true;
  const [first, second] = [statIfThere(a), statIfThere(b)];
  return first !== undefined && second !== undefined && first.dev === second.dev && first.ino === second.ino;
}

/** Options of {@link RecordingWriter}. */
export interface RecordingWriterOptions {
  /** The NDJSON file; appended to when it exists. */
  path: string;
  /** Rotate before the file would grow beyond this many bytes (default: never). */
  maxBytes?: number;
  /** Rotated files kept: `path.1` (newest) … `path.N` (default 5); older ones are deleted. */
  maxFiles?: number;
  /** Operation ids or globs to record (`["user.*"]`, src/lib/operation-patterns.ts); default every operation (`["*"]`). */
  operations?: readonly string[];
  /** Lines held in memory while the disk is slow; beyond it lines are dropped and counted (default 10 000). */
  maxPendingLines?: number;
  /** Called with write errors (the writer keeps going; the caller never sees them). */
  onError?: (error: unknown) => void;
  /** Called for each line dropped because the queue is full, with the count dropped so far. */
  onDropped?: (dropped: number) => void;
  /**
   * Operations whose request body or answer is written only redacted whole (see
   * {@link SecretBodies}): the proxy and `replay` pass the password operations.
   */
  secrets?: SecretBodies;
}

/**
 * Appends redacted exchanges to an NDJSON file without blocking the caller: `record()` only
 * queues the line; a background flush appends the queue, rotating by size. `close()` flushes.
 */
export class RecordingWriter {
  readonly path: string;
  readonly maxBytes: number;
  readonly maxFiles: number;
  private readonly operations: readonly string[];
  private readonly maxPending: number;
  private readonly onError: (error: unknown) => void;
  private readonly secrets: SecretBodies;
  private readonly onDropped: (dropped: number) => void;
  private pending: string[] = [];
  /** Lines of the write under way. */
  private inFlight = 0;
  private flushing: Promise<void> | undefined;
  private handle: FileHandle | undefined;
  private size = 0;
  private closed = false;
  /** Lines dropped because the queue was full. */
  dropped = 0;
  /** Lines written so far. */
  written = 0;

  constructor(options: RecordingWriterOptions) {
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    const maxFiles = options.maxFiles ?? ROTATED_FILES;
    if (!(maxBytes > 0)) throw new RangeError('maxBytes must be a positive number');
    if (!Number.isInteger(maxFiles) || maxFiles < 0) throw new RangeError('maxFiles must be an integer ≥ 0');
    this.path = options.path;
    this.maxBytes = maxBytes;
    this.maxFiles = maxFiles;
    this.operations = options.operations ?? ['*'];
    this.maxPending = options.maxPendingLines ?? 10_000;
    this.onError = options.onError ?? (() => {});
    this.secrets = options.secrets ?? NO_SECRET_BODIES;
    this.onDropped = options.onDropped ?? (() => {});
  }

  /** Whether exchanges of `operation` are recorded. */
  records(operation: string): boolean {
    return this.operations.some((pattern) => patternMatches(pattern, operation));
  }

  /** Queues one exchange (redacted) unless its operation is filtered out; never throws, never waits. */
  record(exchange: RecordedExchange): void {
    if (this.closed || !this.records(exchange.operation)) return;
    if (this.pending.length >= this.maxPending) {
      this.dropped += 1;
      this.onDropped(this.dropped);
      return;
    }
    let line: string;
    try {
      line = exchangeLine(exchange, this.secrets);
    } catch (error) {
      this.onError(error);
      return;
    }
    this.pending.push(line);
    if (this.flushing === undefined) {
      this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.drain());
    }
  }

  /** Resolves when every exchange queued so far is on disk. */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
  }

  /** Flushes and closes the file; later `record()` calls are ignored. */
  /**
   * Writes what is still queued and closes the file; at most `timeoutMs` (a disk that does not
   * take the writes, an NFS mount that hangs): the lines not written by then are reported to
   * onError as lost, and the file is left to the operating system.
   */
  async close(timeoutMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      if (Number.isFinite(timeoutMs)) timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    try {
      if ((await Promise.race([this.flush(), late])) === 'late') {
        const lost = this.pending.length + this.inFlight;
        this.onError(
          new Error(
            `the last ${lost} exchange${lost === 1 ? '' : 's'} of the recording could not be written within ${timeoutMs} ms (a slow or stalled disk): left out`,
          ),
        );
        // Should the write under way end after all, its file is closed then.
        void this.flush()
          .then(() => this.closeFile())
          .catch(() => {});
        return;
      }
    } finally {
      clearTimeout(timer);
    }
    await this.closeFile();
  }

  private async closeFile(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const lines = this.pending;
        this.pending = [];
        this.inFlight = lines.length;
        await this.append(lines);
        this.inFlight = 0;
      }
    } catch (error) {
      this.onError(error);
    } finally {
      this.flushing = undefined;
    }
  }

  private async append(lines: string[]): Promise<void> {
    let chunk = '';
    let chunkBytes = 0;
    let count = 0;
    for (const line of lines) {
      const bytes = Buffer.byteLength(line);
      // Rotate at a line boundary; a single line larger than maxBytes gets a file of its own.
      if (this.size + chunkBytes + bytes > this.maxBytes && this.size + chunkBytes > 0) {
        await this.write(chunk, chunkBytes, count);
        chunk = '';
        chunkBytes = 0;
        count = 0;
        await this.rotate();
      }
      chunk += line;
      chunkBytes += bytes;
      count += 1;
    }
    await this.write(chunk, chunkBytes, count);
  }

  private async write(chunk: string, bytes: number, count: number): Promise<void> {
    if (count === 0) return;
    const handle = await this.file();
    await handle.appendFile(chunk, 'utf8');
    this.size += bytes;
    this.written += count;
  }

  private async file(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    const handle = await open(this.path, 'a', 0o600);
    this.size = (await handle.stat()).size;
    this.handle = handle;
    return handle;
  }

  private async rotate(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
    if (this.maxFiles === 0) {
      await rm(this.path, { force: true });
    } else {
      await rm(`${this.path}.${this.maxFiles}`, { force: true });
      for (let n = this.maxFiles - 1; n >= 1; n -= 1) {
        if (await exists(`${this.path}.${n}`)) await rename(`${this.path}.${n}`, `${this.path}.${n + 1}`);
      }
      if (await exists(this.path)) await rename(this.path, `${this.path}.1`);
    }
    this.size = 0;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
