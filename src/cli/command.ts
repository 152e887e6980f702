import { statSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { SingleBar } from 'cli-progress';
import { loadConfig, type ResolvedStoreConfig } from '../config/load.js';
import { inShippedMappings, SHIPPED_FILES } from '../config/mappings-folder.js';
import { silentLogger } from '../lib/logger.js';
import { statIfThere } from '../lib/real-path.js';
import { type RecordedExchange, readRecording } from '../migration/recording.js';
import { buildServices, type StoreServices } from '../services.js';
import { MissingStoreError } from '../store/errors.js';
import type { StopSignal } from './stop-signal.js';

/** Where a command writes: injectable so tests can run commands in-process and read the output. */
export interface CommandIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** `serve`'s stop signals, listened for since the binary started (else from the command's start). */
  stopSignal?: StopSignal;
  /** `serve`'s SIGHUP listened for since the binary started: whether one came; `cancel` stops listening. */
  hangup?: { readonly caught: boolean; cancel(): void };
}

/** The real terminal. */
export const processIo: CommandIo = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  env: process.env,
};

/**
 * A reader that goes away before the end (`idm-compat compare … --json | head`) closes the pipe:
 * what is left to print is dropped, and the command ends with its own exit code, instead of
 * Node's EPIPE stack trace. For the real terminal only ({@link processIo}), once per process.
 */
export function dropOutputWhenReaderGoesAway(): void {
  // Added whatever listens already: a pipe into stdout re-throws unless another listener is left.
  for (const stream of [process.stdout, process.stderr]) {
    if (!stream.listeners('error').includes(ignoreReaderGone)) stream.on('error', ignoreReaderGone);
  }
}

function ignoreReaderGone(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * A progress bar on stderr for a long command, only on a terminal: never in `--json` mode, when
 * stderr is a file or pipe, or for an in-process run (tests). cli-progress is loaded only then, so
 * the server and the other commands never load it.
 */
export async function terminalProgressBar(
  io: CommandIo,
  json: boolean,
  format: string,
): Promise<SingleBar | undefined> {
  if (json || io !== processIo || !process.stderr.isTTY) return undefined;
  const { SingleBar } = await import('cli-progress');
  return new SingleBar({ format, hideCursor: true });
}

/** One CLI command: `idm-compat <path…> [args]`. */
export interface Command {
  /** Words after the binary name, e.g. `['apiuser', 'add']`. */
  path: string[];
  summary: string;
  /** Usage line after the command path, e.g. `NAME --range CIDR [--range CIDR…] [--json]`. */
  usage: string;
  /** Extra help text: options and examples. */
  help?: string;
  options: Options;
  /** Whether positionals are accepted. */
  positionals?: boolean;
  /** Runs the command; resolves to the process exit code. Long-running commands resolve when they stop. */
  run(args: CommandArgs, io: CommandIo): Promise<number>;
}

export interface CommandArgs {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

/** A command failed in a way the user can fix: printed as `error: message`, exit code 2 by default. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/**
 * Parses argv for `command`, adding the `--help` flag every command has. An option that takes one
 * value given twice with different values (`--kind user --kind group`) is a usage error: parseArgs
 * would keep the last one unseen, and which one the user meant is not known. The same value twice
 * is taken.
 */
export function parseCommandArgs(command: Command, argv: string[]): CommandArgs & { help: boolean } {
  const options: Options = { ...command.options, help: { type: 'boolean', short: 'h' } };
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    options,
    allowPositionals: command.positionals ?? false,
    strict: true,
    tokens: true,
  });
  const given = new Map<string, string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.value === undefined || options[token.name]?.multiple) continue;
    const earlier = given.get(token.name);
    if (earlier !== undefined && earlier !== token.value) {
      throw new CommandError(
        `option --${token.name} given twice with different values (${JSON.stringify(earlier)}, ${JSON.stringify(token.value)}): give it once`,
      );
    }
    given.set(token.name, token.value);
  }
  const { help, ...rest } = values as CommandArgs['values'];
  return { values: rest, positionals, help: help === true };
}

/** Renders the help text of one command. */
export function commandHelp(command: Command): string {
  const lines = [
    `Usage: idm-compat ${command.path.join(' ')} ${command.usage}`.trimEnd(),
    '',
    command.summary,
  ];
  if (command.help) lines.push('', command.help.trimEnd());
  return `${lines.join('\n')}\n`;
}

/** Reads a string option, undefined when absent. */
export function stringOption(args: CommandArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** Reads a repeatable string option as a list. */
export function stringListOption(args: CommandArgs, name: string): string[] {
  const value = args.values[name];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return typeof value === 'string' ? [value] : [];
}

/** Reads a boolean flag. */
export function flag(args: CommandArgs, name: string): boolean {
  return args.values[name] === true;
}

/**
 * Loads the configuration named by `--config` (or env), builds the store services, runs `work`
 * and always closes them again: what commands that manage stored state share.
 */
export async function withStoreServices<T>(
  args: CommandArgs,
  io: CommandIo,
  work: (services: StoreServices) => Promise<T>,
  options: { existing?: { what: string; why: string } } = {},
): Promise<T> {
  // Only the store's secret: these commands open nothing else (buildServices' store scope).
  const config = loadConfig({ file: stringOption(args, 'config'), env: io.env, secrets: 'store' });
  const configFile = config.source ?? '(embedded defaults)';
  if (options.existing) requireExistingStore(config.store, configFile, options.existing);
  let services: StoreServices;
  try {
    services = await buildServices(config, {
      logger: silentLogger(),
      scope: 'store',
      requireExistingStore: options.existing !== undefined,
    });
  } catch (error) {
    if (!(error instanceof MissingStoreError) || !options.existing) throw error;
    // Not the hint of a missing SQLite file (`why`, e.g. "apiuser add creates it"): a schema
    // dropped by mistake must come back from a backup, not be created again empty.
    const schema = config.store.type === 'postgres' ? config.store.schema : undefined;
    throw new CommandError(
      `${options.existing.what} ${error.verb}: ${error.message}${schema === undefined ? '' : ` (store.schema of ${configFile})`}: check store.url and store.schema; a schema dropped by mistake is restored from a backup, not created again`,
    );
  }
  try {
    return await work(services);
  } finally {
    await services.close();
  }
}

/**
 * Refuses a SQLite store file that is not there, before it is opened: opening would create it (and
 * its folder) empty, and a command that only reads it would report a mistyped store.path, or the
 * sandbox default of a shell without IDM_COMPAT_CONFIG, as an empty store and succeed. `what`
 * names the store in the message (`the store`, `the source store`), `why` may add what that means.
 */
export function requireExistingStore(
  config: ResolvedStoreConfig,
  configFile: string,
  { what, why }: { what: string; why: string },
): void {
  if (config.type !== 'sqlite' || config.path === ':memory:') return;
  let isFile: boolean;
  try {
    isFile = statSync(config.path).isFile();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new CommandError(
      code === 'ENOENT'
        ? `${what} ${config.path} (store.path of ${configFile}) does not exist${why}`
        : `cannot use ${what} ${config.path}: ${code}`,
    );
  }
  if (!isFile) throw new CommandError(`${what} ${config.path} (store.path of ${configFile}) is not a file`);
}

/** Rows of cells as aligned text columns (the first row is the header), one line per row. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return `${rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/**
 * Reads a recording for a command: an unreadable file is a CommandError; unusable lines are named
 * on stderr (the first 20) and left out.
 */
export async function loadRecording(
  file: string,
  io: CommandIo,
): Promise<{ exchanges: RecordedExchange[]; invalid: number }> {
  let recording: Awaited<ReturnType<typeof readRecording>>;
  try {
    recording = await readRecording(file);
  } catch (error) {
    throw new CommandError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  for (const problem of recording.problems.slice(0, 20))
    io.err(`${file}:${problem.line}: ${problem.message}`);
  if (recording.problems.length > 20) io.err(`… and ${recording.problems.length - 20} more unusable lines`);
  return { exchanges: recording.exchanges, invalid: recording.problems.length };
}

/**
 * Refuses an output file that is one of the command's inputs (the same file, also through a
 * link): it is emptied or replaced when written, and the input may be the only copy there is (a
 * recording of the old server's answers, the store). Also any output in the shipped `mappings/`
 * folder (its profiles and compare rules, which later starts and compares read). `option` names
 * the output's option.
 */
export function refuseInputAsOut(
  option: string,
  out: string,
  inputs: readonly [what: string, file: string | undefined][],
): void {
  if (inShippedMappings(out))
    throw new CommandError(
      `${option} ${out} is ${SHIPPED_FILES}; writing there would break them: give another file`,
    );
  const outStat = statIfThere(out);
  if (outStat === undefined) return;
  for (const [what, file] of inputs) {
    const inputStat = file === undefined ? undefined : statIfThere(file);
    if (inputStat && inputStat.dev === outStat.dev && inputStat.ino === outStat.ino)
      throw new CommandError(
        `${option} ${out} is ${what}; it would be emptied or overwritten: give another file`,
      );
  }
}
