// The binary's start of `serve`: it bounds V8's young generation on Node 24 and later, where it
// would grow to 128 MiB (src/cli/young-generation.ts), and keeps a stop signal from its first
// moment (src/cli/stop-signal.ts). The rule, and real processes started as the binary starts
// `serve`, on whichever Node runs the suite (CI runs it on Node 20 and on Node 24).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { YOUNG_GENERATION_FLAG, youngGenerationFlag } from '../src/cli/young-generation.js';
import { spawnCli } from './cli-helpers.js';
import { tempDir } from './temp-dir.js';

const run = promisify(execFile);
const FIXTURE = path.resolve('test/fixtures/young-generation.ts');
const REPORT_START = pathToFileURL(path.resolve('test/fixtures/report-start.mjs')).href;
const SIGNAL_ON_LOAD = pathToFileURL(path.resolve('test/fixtures/signal-on-load.mjs')).href;
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

interface Report {
  pid: number;
  execArgv: string[];
  args: string[];
  newSpaceMaxMiB: number;
}

/** Runs the fixture with `args` and NODE_OPTIONS; its report and the process ID it was started with. */
async function fixture(
  args: string[],
  nodeOptions?: string,
): Promise<{ report: Report; startedPid: number }> {
  const env = { ...process.env };
  if (nodeOptions === undefined) delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = nodeOptions;
  const started = run(process.execPath, ['--import', 'tsx', FIXTURE, ...args], { env });
  const startedPid = started.child.pid ?? -1;
  const { stdout } = await started;
  return { report: JSON.parse(stdout) as Report, startedPid };
}

describe('the young generation of `serve`', () => {
  it('is bounded from Node 24 on, unless the operator chose a size', () => {
    for (const major of [20, 22, 23])
      assert.equal(youngGenerationFlag(major, [], undefined), undefined, `Node ${major}`);
    for (const major of [24, 25, 26])
      assert.equal(youngGenerationFlag(major, [], undefined), YOUNG_GENERATION_FLAG);
    assert.equal(YOUNG_GENERATION_FLAG, '--max-semi-space-size=16');
    // Other flags leave the choice to us.
    assert.equal(
      youngGenerationFlag(24, ['--enable-source-maps', '--stack-size=2000'], '--max-old-space-size=128'),
      YOUNG_GENERATION_FLAG,
    );
    // Any spelling V8 takes, on the command line or in NODE_OPTIONS, is the operator's choice.
    for (const given of [
      ['--max-semi-space-size=64'],
      ['--max_semi_space_size=8'],
      ['--max-semi-space-size', '32'],
      ['-max-semi-space-size=4'],
    ])
      assert.equal(youngGenerationFlag(24, given, undefined), undefined, given.join(' '));
    // So is any size of the whole heap or the young generation: V8 refuses to start with
    // --max-heap-size, --max-old-space-size and --max-semi-space-size all given.
    for (const options of [
      '--max-semi-space-size=64',
      '--inspect --max_semi_space_size=4',
      '--max-semi-space-size 8',
      '"--max-semi-space-size=4"',
      '--max-heap-size=256 --max-old-space-size=128',
      '--min-semi-space-size=4',
      '--single-generation',
      '--scavenger-max-new-space-capacity-mb=8',
    ])
      assert.equal(youngGenerationFlag(24, [], options), undefined, options);
    // A flag that only begins like one is not.
    assert.equal(youngGenerationFlag(24, ['--max-semi-space-sizes=4'], undefined), YOUNG_GENERATION_FLAG);
  });

  it('stays within 32 MiB in a process started as `serve` is, which keeps its process ID and arguments', async () => {
    const { report, startedPid } = await fixture(['serve', '--config', 'some file.json']);
    assert.equal(report.pid, startedPid, 'the same process, not a child');
    assert.deepEqual(report.args, ['serve', '--config', 'some file.json']);
    assert.ok(report.newSpaceMaxMiB <= 32, `new space reached ${report.newSpaceMaxMiB} MiB`);
    assert.deepEqual(
      report.execArgv.filter((arg) => arg === YOUNG_GENERATION_FLAG),
      NODE_MAJOR >= 24 ? [YOUNG_GENERATION_FLAG] : [],
    );
    assert.ok(report.execArgv.includes('tsx'), 'Node flags given at the start are kept');
  });

  it("keeps the operator's own size from NODE_OPTIONS", async () => {
    const { report } = await fixture(['serve'], '--max-semi-space-size=8');
    assert.ok(!report.execArgv.includes(YOUNG_GENERATION_FLAG), report.execArgv.join(' '));
    assert.ok(report.newSpaceMaxMiB <= 16, `new space reached ${report.newSpaceMaxMiB} MiB, not 2 × 8`);
  });
});

describe('the binary', () => {
  // A build of this checkout of its own (dist/ may be older than the sources being tested).
  // Emitted without a type check (`npm run check` does that): the same files in half the time.
  let build = '';
  before(async () => {
    build = tempDir('build');
    await run(process.execPath, [
      path.resolve('node_modules/typescript/bin/tsc'),
      '-p',
      'tsconfig.build.json',
      '--noCheck',
      '--outDir',
      path.join(build, 'dist'),
    ]);
    cpSync('bin', path.join(build, 'bin'), { recursive: true });
    symlinkSync(path.resolve('node_modules'), path.join(build, 'node_modules'));
  });
  after(() => {
    if (build) rmSync(build, { recursive: true, force: true });
  });

  /** The starts of `idm-compat ARGS` through the built binary, as the preload reported them. */
  async function starts(
    args: string[],
    nodeOptions?: string,
  ): Promise<{ pid: number; execArgv: string[] }[]> {
    const env = { ...process.env };
    if (nodeOptions === undefined) delete env.NODE_OPTIONS;
    else env.NODE_OPTIONS = nodeOptions;
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', REPORT_START, path.join(build, 'bin', 'idm-compat.js'), ...args],
      { env },
    );
    assert.match(stdout, /idm-compat/, 'the command ran');
    return stderr
      .split('\n')
      .filter((line) => line.startsWith('{"started"'))
      .map((line) => (JSON.parse(line) as { started: { pid: number; execArgv: string[] } }).started);
  }

  it('starts `serve` once more, as the same process, with the flag first, from Node 24 on', async () => {
    const seen = await starts(['serve', '--help']);
    const first = { pid: seen[0]?.pid ?? -1, execArgv: ['--import', REPORT_START] };
    assert.deepEqual(
      seen,
      NODE_MAJOR >= 24
        ? [first, { pid: first.pid, execArgv: [YOUNG_GENERATION_FLAG, ...first.execArgv] }]
        : [first],
    );
  });

  it('starts every other command, and `serve` with a size given, once', async () => {
    assert.equal((await starts(['config', 'schema'])).length, 1);
    assert.equal((await starts(['serve', '--help'], '--max-semi-space-size=32')).length, 1);
  });

  /** A sandbox-mode configuration of `serve` on a free port, its store in the build folder. */
  function serveConfig(): string {
    const config = path.join(build, 'serve.json');
    writeFileSync(
      config,
      JSON.stringify({
        sandbox: { enabled: true },
        server: { host: '127.0.0.1', port: 0 },
        store: { type: 'sqlite', path: path.join(build, 'data', 'store.db') },
        mappings: { dir: path.resolve('mappings') },
      }),
    );
    return config;
  }

  // While it loads the CLI (on Node 24 after the replacement), and while it loads the module that
  // replaces the process (on Node 24 before it: the new start is told).
  for (const [moment, suffix] of [
    ['the CLI', '/dist/cli.js'],
    ['the young generation', '/dist/cli/young-generation.js'],
  ] as const) {
    it(`keeps a SIGHUP that arrives while it loads ${moment}: starts, and reloads the mapping tables once it runs`, async () => {
      // Node's default for SIGHUP ended the process (exit 129) in its first half second, before the
      // command's own handler: a reload (systemd ExecReload) right after a restart killed it.
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        IDM_COMPAT_SIGNAL_ON_LOAD: suffix,
        IDM_COMPAT_SIGNAL_ON_LOAD_NAME: 'SIGHUP',
        // Once: the process replaced on Node 24 must reload for the signal its first start caught.
        IDM_COMPAT_SIGNAL_ON_LOAD_ONCE: path.join(tempDir('hangup'), 'sent'),
      };
      delete env.NODE_OPTIONS;
      const cli = spawnCli(['serve', '--config', serveConfig()], {
        env,
        nodeArgs: ['--import', SIGNAL_ON_LOAD, path.join(build, 'bin', 'idm-compat.js')],
      });
      try {
        await cli.waitFor('stderr', /idm-compat listening on http:\/\/127\.0\.0\.1:\d+ \(sandbox mode\)/);
        await cli.waitFor('stdout', /"msg":"mapping profile reloaded"/);
        assert.match(cli.stdout(), /"msg":"SIGHUP during start-up: reloading now"/);
        assert.deepEqual(await cli.stop('SIGTERM'), { code: 0, signal: null }, cli.stderr());
      } finally {
        await cli.stop('SIGKILL');
      }
    });
  }

  // While it loads the module that would replace the process: then it is not replaced. While it
  // loads the CLI: on Node 24 that is after the replacement.
  for (const [moment, suffix, starts] of [
    ['the young generation', '/dist/cli/young-generation.js', 1],
    ['the CLI', '/dist/cli.js', NODE_MAJOR >= 24 ? 2 : 1],
  ] as const) {
    it(`keeps a SIGTERM that arrives while it loads ${moment}: starts, then shuts down gracefully (exit 0)`, async () => {
      const config = serveConfig();
      const env: NodeJS.ProcessEnv = { ...process.env, IDM_COMPAT_SIGNAL_ON_LOAD: suffix };
      delete env.NODE_OPTIONS;
      // Resolves once the process has ended: execFile rejects on a signal death, another exit
      // code, or a process still running after a minute.
      const { stderr } = await run(
        process.execPath,
        [
          '--import',
          SIGNAL_ON_LOAD,
          '--import',
          REPORT_START,
          path.join(build, 'bin', 'idm-compat.js'),
          'serve',
          '--config',
          config,
        ],
        { env, timeout: 60_000 },
      );
      assert.match(stderr, /idm-compat listening on http:\/\/127\.0\.0\.1:\d+ \(sandbox mode\)/);
      assert.match(stderr, /SIGTERM: finishing in-flight requests/);
      const started = stderr.split('\n').filter((line) => line.startsWith('{"started"'));
      assert.equal(started.length, starts, 'a process asked to stop is not replaced');
    });
  }
});
