/**
 * V8's young generation for `idm-compat serve`, the long-running proxy.
 *
 * Node 20 and 22 let V8's young generation (two semi-spaces) grow to 32 MiB. Node 24 lets it grow
 * to 128 MiB, and a proxy under sustained load takes it all: its resident size after the bench's
 * load scenarios was 190–245 MiB there against 129–139 on Node 20, and the `extended` list of
 * 100,000 users peaked at 313 MiB against 134–139. With Node 20's size, `--max-semi-space-size=16`,
 * the proxy cost the same CPU per request on Node 24 (side by side, in turns, within the noise;
 * docs/performance.md). The flag only works on Node's command line (or NODE_OPTIONS):
 * `v8.setFlagsFromString` after start-up changes nothing, as the heap is sized when it is made.
 *
 * So on Node 24 and later, `serve` started without such a flag replaces itself, through
 * `process.execve` (the same process ID, standard streams and environment; nothing is open yet),
 * with Node's flags and the same script and arguments, `--max-semi-space-size=16` first. It does
 * not when the operator chose the heap's sizes: any flag on the young generation's or the whole
 * heap's size, on Node's command line or in NODE_OPTIONS, in any spelling V8 takes (V8 refuses
 * to start with `--max-heap-size`, `--max-old-space-size` and `--max-semi-space-size` all set).
 * Nor with the inspector open (a debugger that attached would lose its session), nor where
 * `execve` is missing (Windows; Node before 22.15, whose young generation is 32 MiB anyway) or
 * refused (the permission model), nor when Node's executable cannot be run again. Preloads
 * (`--import`, `--require`) run again in the replaced process. Should the `execve` system call
 * fail after those checks, Node ends the process (an abort) rather than returning.
 */
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';

/** Node's flag that bounds the young generation: two semi-spaces of 16 MiB, Node 20's and 22's size. */
export const YOUNG_GENERATION_FLAG = '--max-semi-space-size=16';

/** The first Node major whose V8 lets the young generation grow beyond 32 MiB. */
const FIRST_LARGER_MAJOR = 24;

/**
 * The operator's choice of the heap's sizes: V8's flags on the young generation's size or the
 * whole heap's, with one dash or two, dashes or underscores, quoted or not, the value after `=` or
 * as the next argument.
 */
const SIZE_FLAG =
  /(?:^|[\s"'])--?(?:(?:max|min)[-_]semi[-_]space[-_]size|max[-_]heap[-_]size|single[-_]generation|(?:scavenger|minor[-_]ms)[-_]max[-_]new[-_]space[-_]capacity[-_]mb)(?=[=\s"']|$)/;

/**
 * The flag to start `serve` with, given the Node major version and how the process was started;
 * undefined when none is needed (an older Node) or the operator already chose one.
 */
export function youngGenerationFlag(
  nodeMajor: number,
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): string | undefined {
  if (nodeMajor < FIRST_LARGER_MAJOR) return undefined;
  if (execArgv.some((arg) => SIZE_FLAG.test(arg)) || SIZE_FLAG.test(nodeOptions ?? '')) return undefined;
  return YOUNG_GENERATION_FLAG;
}

/** Whether a debugger may be attached (node:inspector cannot even be loaded where Node lacks it). */
function inspectorOpen(): boolean {
  if (!process.features.inspector) return false;
  const inspector = createRequire(import.meta.url)('node:inspector') as typeof import('node:inspector');
  return inspector.url() !== undefined;
}

/**
 * Starts this process afresh with the young generation bounded, when `youngGenerationFlag` asks
 * for it; returns (and the caller runs on) when it does not, or when the process cannot be
 * replaced. Call it first thing, before anything is opened.
 */
export function boundYoungGeneration(): void {
  const major = Number(process.versions.node.split('.')[0]);
  const flag = youngGenerationFlag(major, process.execArgv, process.env.NODE_OPTIONS);
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never })
    .execve;
  if (flag === undefined || typeof execve !== 'function' || inspectorOpen()) return;
  try {
    // A failing execve system call ends the process in Node (an abort, not an exception), so the
    // one cause that can be seen beforehand is ruled out first.
    accessSync(process.execPath, constants.X_OK);
    execve.call(
      process,
      process.execPath,
      [process.execPath, flag, ...process.execArgv, ...process.argv.slice(1)],
      process.env,
    );
  } catch {
    // Not replaced (an executable that cannot be run again, the permission model): the proxy runs
    // as started.
  }
}
