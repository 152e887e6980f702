#!/usr/bin/env node
import { API_USER_COMMANDS } from './cli/apiuser.js';
import {
  type Command,
  CommandError,
  type CommandIo,
  commandHelp,
  dropOutputWhenReaderGoesAway,
  parseCommandArgs,
  processIo,
} from './cli/command.js';
import { compareCommand } from './cli/compare.js';
import { configCheckCommand } from './cli/config-check.js';
import { configSchemaCommand } from './cli/config-schema.js';
import { idsExportCommand, idsImportCommand } from './cli/ids.js';
import { mappingsCheckCommand } from './cli/mappings-check.js';
import { replayCommand } from './cli/replay.js';
import { sandboxCommand } from './cli/sandbox.js';
import { serveCommand } from './cli/serve.js';
import { shadowReportCommand } from './cli/shadow-report.js';
import { storeCopyCommand } from './cli/store-copy.js';
import { usageCommand } from './cli/usage.js';
import { ConfigError } from './config/load.js';
import { MappingError } from './mapping/errors.js';

/** Every command of the `idm-compat` binary. */
export const COMMANDS: readonly Command[] = [
  serveCommand,
  sandboxCommand,
  configCheckCommand,
  configSchemaCommand,
  ...API_USER_COMMANDS,
  mappingsCheckCommand,
  idsImportCommand,
  idsExportCommand,
  usageCommand,
  shadowReportCommand,
  storeCopyCommand,
  replayCommand,
  compareCommand,
];

function overview(group?: string): string {
  const commands = group === undefined ? COMMANDS : COMMANDS.filter((c) => c.path[0] === group);
  const width = Math.max(...commands.map((c) => c.path.join(' ').length));
  const rows = commands.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`);
  const name = group === undefined ? 'idm-compat' : `idm-compat ${group}`;
  return `Usage: ${name} <command> [options]\n\nCommands:\n${rows.join('\n')}\n\nRun 'idm-compat <command> --help' for a command's options.\n`;
}

/** The first word of commands that have more than one (`apiuser`, `ids`, …): a group, not a command. */
function isGroup(word: string | undefined): boolean {
  return COMMANDS.some((c) => c.path.length > 1 && c.path[0] === word);
}

/** Runs the CLI on `argv` (without node and script); resolves to the exit code. */
export async function runCli(argv: string[], io: CommandIo = processIo): Promise<number> {
  if (io === processIo) dropOutputWhenReaderGoesAway();
  const command = [...COMMANDS]
    .sort((a, b) => b.path.length - a.path.length)
    .find((c) => c.path.every((word, i) => argv[i] === word));
  if (!command) {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
      io.out(overview());
      return argv.length === 0 ? 2 : 0;
    }
    // A group's help lists its commands; the group alone needs one of them.
    const [group, next] = argv;
    if (group !== undefined && isGroup(group)) {
      if (next === '--help' || next === '-h') {
        io.out(overview(group));
        return 0;
      }
      if (next === undefined) {
        io.err(`error: '${group}' needs a command\n\n${overview(group)}`);
        return 2;
      }
    }
    io.err(`error: unknown command '${argv.join(' ')}'\n\n${overview()}`);
    return 2;
  }
  try {
    const args = parseCommandArgs(command, argv.slice(command.path.length));
    if (args.help) {
      io.out(commandHelp(command));
      return 0;
    }
    return await command.run(args, io);
  } catch (error) {
    if (error instanceof CommandError) {
      io.err(`error: ${error.message}`);
      return error.exitCode;
    }
    if (error instanceof ConfigError || error instanceof MappingError) {
      io.err(`error: ${error.message}`);
      return 2;
    }
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
      io.err(`error: ${error.message}\n\n${commandHelp(command)}`);
      return 2;
    }
    io.err(`error: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
