import { DOCS_FOLDER } from '../config/fixed-paths.js';
import { type AppConfig, loadConfig } from '../config/load.js';
import { createLogger } from '../lib/logger.js';
import { reloader, reloadOnSignal } from '../reload.js';
import { type RunningServer, startServer } from '../server.js';
import { type Command, type CommandArgs, type CommandIo, processIo, stringOption } from './command.js';
import { nextStopSignal } from './stop-signal.js';

/** `idm-compat serve`: runs the proxy until SIGINT/SIGTERM, then shuts down gracefully. */
export const serveCommand: Command = {
  path: ['serve'],
  summary: 'Run the proxy. Without a config file it runs in sandbox mode on the embedded sandbox IDM.',
  usage: '[--config FILE]',
  help: `Options:
  --config FILE   configuration file (default: env IDM_COMPAT_CONFIG, else the embedded sandbox defaults)

Environment: HOST and PORT override server.host and server.port.`,
  options: { config: { type: 'string', short: 'c' } },
  async run(args, io) {
    // Node's default for SIGHUP ends the process: one while the proxy starts (waiting minutes for
    // its PostgreSQL store, say) or drains its requests at shutdown must not. One during start-up
    // is remembered and reloads once the proxy runs (the profile was read before the wait). The
    // binary listens from its first moment; this handler takes over from its handler.
    let hangupDuringStartUp = false;
    const remember = () => {
      hangupDuringStartUp = true;
    };
    process.on('SIGHUP', remember);
    if (io.hangup) {
      io.hangup.cancel();
      if (io.hangup.caught) hangupDuringStartUp = true;
    }
    try {
      return await serve(args, io, () => hangupDuringStartUp);
    } finally {
      process.off('SIGHUP', remember);
    }
  },
};

/** The proxy's run from its configuration to its exit code; `hangupDuringStartUp`: whether SIGHUP came meanwhile. */
async function serve(args: CommandArgs, io: CommandIo, hangupDuringStartUp: () => boolean): Promise<number> {
  const config = loadConfig({ file: stringOption(args, 'config'), env: io.env });
  const logger = createLogger({ level: config.logging.level, bufferBytes: config.logging.bufferBytes });
  // Listen for the stop signals before starting (the binary already does, from its first
  // moment): one that arrives during start-up, or right after the "listening" line, still shuts
  // down gracefully instead of killing the process.
  const stopSignal = io.stopSignal ?? nextStopSignal();
  // A stop signal while the store is not reachable yet ends the start-up retries (minutes with
  // the defaults); one at any other moment of start-up lets it finish, then shuts down.
  const startUp = new AbortController();
  void stopSignal.received.then((signal) => startUp.abort(new StoppedDuringStartUp(signal)));
  let running: RunningServer;
  try {
    running = await startServer({ config, logger, signal: startUp.signal });
  } catch (error) {
    stopSignal.cancel();
    if (!(error instanceof StoppedDuringStartUp)) throw error;
    logger.info({ signal: error.signal }, 'idm-compat stopped');
    io.err(`${error.signal}: stopped while waiting for the store`);
    return 0;
  }
  // SIGHUP reloads the mapping tables and the migration modes; a broken file is logged and
  // what was in force stays.
  const reloadOptions = { file: config.source, env: io.env, logger, tlsAtStart: running.tlsAtStart };
  const stopReloading = reloadOnSignal(running.services, reloadOptions);
  if (hangupDuringStartUp()) {
    logger.info('SIGHUP during start-up: reloading now');
    reloader(running.services, reloadOptions)();
  }
  // The start-up lines go out before the line saying the proxy listens, not when the log buffer
  // next fills or its timer fires (waiting at most a second for a stdout nobody reads).
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1_000);
    logger.flush(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  io.err(`idm-compat listening on ${running.url} (${config.mode} mode)`);
  if (running.demoUser) io.err(demoUserNotice(running, config.legacy, stringOption(args, 'config')));
  const signal = await stopSignal.received;
  // A second stop signal ends the process at once, as Node's default would, but with a line
  // saying so and the collected log lines written (the exit flushes them): Node's default dropped
  // up to a second of lines, answered requests' among them. Only when the command writes to the
  // real terminal (the binary's io is processIo with the stop signal added), not for an in-process
  // run (tests), whose process is not the proxy's.
  const forced = (second: NodeJS.Signals) => {
    logger.warn(
      { signal: second },
      `${second} again: stopping at once; requests still in flight are cut off`,
    );
    io.err(`${second} again: stopping at once`);
    process.exit(second === 'SIGINT' ? 130 : 143);
  };
  if (io.out === processIo.out) {
    process.once('SIGINT', forced);
    process.once('SIGTERM', forced);
  }
  stopReloading();
  const ignore = () => logger.info('SIGHUP ignored: the proxy is shutting down');
  process.on('SIGHUP', ignore);
  // close() stops the listener at once; the line below is printed when new connections are refused.
  const closed = running.close();
  io.err(`${signal}: finishing in-flight requests…`);
  await closed.catch(() => undefined);
  process.off('SIGHUP', ignore);
  // Stopped: a signal from now on meets Node's default, not the forced exit's code.
  process.off('SIGINT', forced);
  process.off('SIGTERM', forced);
  return 0;
}

/** Why start-up ended early: a stop signal while it waited for the store. */
class StoppedDuringStartUp extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`${signal} during start-up`);
  }
}

/**
 * What sandbox mode prints about the API user `demo`: its password and a curl line once, later how
 * to reset it — with the `--config` the proxy was started with, whose store holds the user (the
 * command without it looked in the default store, which may not exist). A file named by
 * IDM_COMPAT_CONFIG needs no option: the command reads the same variable.
 */
function demoUserNotice(
  running: RunningServer,
  legacy: AppConfig['legacy'],
  configFile: string | undefined,
): string {
  const demo = running.demoUser;
  if (!demo) return '';
  const url = `${running.publicUrl}${legacy.basePath}/${legacy.namespaces[0] ?? 'Service'}/Core/Entity/User`;
  if (demo.password === undefined) {
    const config = configFile === undefined ? '' : ` --config ${shellWord(configFile)}`;
    return `Sandbox API user '${demo.name}' exists (allowed from ${demo.ranges.join(', ')}). Forgot its password? idm-compat apiuser reset-password ${demo.name}${config}`;
  }
  return [
    `Created sandbox API user '${demo.name}' (allowed from ${demo.ranges.join(', ')}). Its password, shown only this once:`,
    `  ${demo.password}`,
    'Try it:',
    `  curl -u ${demo.name}:${demo.password} ${url}`,
    `Interactive docs: ${running.publicUrl}${legacy.basePath}/${DOCS_FOLDER}/`,
  ].join('\n');
}

/** A path as one word of a POSIX shell command: as it is when plain, else in single quotes. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
