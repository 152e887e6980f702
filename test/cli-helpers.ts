// The real `idm-compat` CLI as a child process (`node --import tsx`, the source entry), with its
// output collected, for tests of what an operator sees: start-up, signals, exit codes, and
// (through test/fixtures/record-modules.mjs) which modules the process loaded.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CommandIo } from '../src/cli/command.js';
import { runCli } from '../src/cli.js';

const ENTRY =
  "import { runCli } from './src/cli.ts'; process.exitCode = await runCli(process.argv.slice(1));";
const RECORDER = pathToFileURL(path.resolve('test/fixtures/record-modules.mjs')).href;

/** How a CLI process ended. */
export interface CliExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running CLI process. */
export interface CliProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything the process wrote to stdout so far. */
  stdout(): string;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the first match of `pattern` in the stream's output so far or later; rejects on exit or timeout. */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves when the process has exited. */
  readonly exited: Promise<CliExit>;
  /** Sends `signal` (default SIGTERM) unless the process has exited, and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<CliExit>;
}

/** Options of {@link spawnCli}. */
export interface SpawnCliOptions {
  /** Extra environment (on top of this process's, with IDM_COMPAT_CONFIG cleared). */
  env?: NodeJS.ProcessEnv;
  /** Record the URL of every module the process loads into this file (one per line). */
  moduleLog?: string;
  /** Node's arguments before `args` instead of the source tree's entry (a built binary, with preloads). */
  nodeArgs?: string[];
}

/** Starts `idm-compat <args…>` from the source tree (or as `nodeArgs` say), as an operator would run it. */
export function spawnCli(args: string[], options: SpawnCliOptions = {}): CliProcess {
  const preload = options.moduleLog === undefined ? [] : ['--import', RECORDER];
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? ['--import', 'tsx', ...preload, '--input-type=module', '-e', ENTRY, '--']),
      ...args,
    ],
    {
      cwd: process.cwd(),
      env: {
        ...process.env,
        IDM_COMPAT_CONFIG: '',
        ...options.env,
        ...(options.moduleLog === undefined ? {} : { IDM_COMPAT_MODULE_LOG: options.moduleLog }),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  child.stdin.end();
  const output = { stdout: '', stderr: '' };
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString();
    changed();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString();
    changed();
  });
  let done = false;
  const exited = new Promise<CliExit>((resolve) => {
    child.once('close', (code, signal) => {
      done = true;
      resolve({ code, signal });
      changed();
    });
  });

  const waitFor = (stream: 'stdout' | 'stderr', pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const match = output[stream].match(pattern);
        if (match) {
          finish();
          resolve(match);
        } else if (done) {
          finish();
          reject(new Error(`the process exited before ${stream} matched ${pattern}:\n${describe()}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`${stream} did not match ${pattern} within ${timeoutMs} ms:\n${describe()}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const describe = () => `--- stdout\n${output.stdout}\n--- stderr\n${output.stderr}`;

  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };

  return { child, stdout: () => output.stdout, stderr: () => output.stderr, waitFor, exited, stop };
}

/** The module URLs a process started with `moduleLog` recorded (empty when it recorded nothing). */
export function loadedModules(moduleLog: string): string[] {
  if (!existsSync(moduleLog)) return [];
  return readFileSync(moduleLog, 'utf8').split('\n').filter(Boolean);
}

/** One in-process CLI run: its exit code and what it printed. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in this process (no child) with its output captured and the given environment. */
export async function runCliCaptured(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    out: (text) => {
      stdout += text.endsWith('\n') ? text : `${text}\n`;
    },
    err: (text) => {
      stderr += text.endsWith('\n') ? text : `${text}\n`;
    },
    env,
  };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}
