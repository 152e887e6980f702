#!/usr/bin/env node
// The idm-compat binary: runs the compiled CLI from dist/ (built by `npm ci` through `prepare`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = (file) => new URL(`../dist/${file}`, import.meta.url);
const entry = dist('cli.js');
const modules = [entry, dist('cli/command.js'), dist('cli/stop-signal.js'), dist('cli/young-generation.js')];
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('idm-compat is not built yet: run `npm run build` (npm ci does it for you).\n');
  process.exit(1);
}
if (!modules.every((module) => existsSync(fileURLToPath(module)))) {
  process.stderr.write('idm-compat was built from older sources: run `npm run build`.\n');
  process.exit(1);
}
const argv = process.argv.slice(2);
// A SIGHUP from the first moment of `serve` is remembered (the tables are reloaded once the proxy
// runs), where Node's default would end the process while it loads its modules; the command takes
// over from this handler (src/cli/serve.ts). One caught before the process replaces itself (Node 24)
// is handed on to the new start in this environment variable, which it reads and removes.
const HANGUP_ENV = 'IDM_COMPAT_HANGUP_BEFORE_RESTART';
let hangupCaught = process.env[HANGUP_ENV] === '1';
delete process.env[HANGUP_ENV];
const rememberHangup = () => {
  hangupCaught = true;
};
if (argv[0] === 'serve') process.on('SIGHUP', rememberHangup);
let io;
if (argv[0] === 'serve') {
  // The stop signals from the first moment (src/cli/stop-signal.ts); then, on Node 24 and later and
  // unless asked to stop already, a fresh start with V8's young generation bounded
  // (src/cli/young-generation.ts).
  const stopSignal = (await import(dist('cli/stop-signal.js').href)).nextStopSignal();
  const { boundYoungGeneration } = await import(dist('cli/young-generation.js').href);
  // One turn of the event loop, so that a signal that reached the process by now has been handled:
  // a process asked to stop is not replaced (execve would drop the signal). One that arrives after
  // this check, or during the replacement's own start-up, meets Node's default.
  await new Promise((resolve) => setImmediate(resolve));
  if (stopSignal.caught === undefined) {
    if (hangupCaught) process.env[HANGUP_ENV] = '1';
    boundYoungGeneration();
    delete process.env[HANGUP_ENV]; // not replaced: this process reloads itself
  }
  const hangup = {
    get caught() {
      return hangupCaught;
    },
    cancel: () => process.off('SIGHUP', rememberHangup),
  };
  io = { ...(await import(dist('cli/command.js').href)).processIo, stopSignal, hangup };
}
const { runCli } = await import(entry.href);
process.exitCode = await runCli(argv, io);
