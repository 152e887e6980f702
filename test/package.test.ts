// The package an operator installs: `npm pack` of this checkout, unpacked as `npm install
// idm-compat-VERSION.tgz` would unpack it into node_modules/, and its binary run from a folder that
// is not the checkout. The tarball must hold everything the binary reads at run time (dist/, the
// mapping profiles, the shipped compare rules, the schema files, the docs the help texts name).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from './temp-dir.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
/** What is never packed: installed, built or written by a run. */
const NOT_COPIED = new Set(['node_modules', 'dist', 'data', '.git', '.tmp', 'coverage']);

describe('the npm package', () => {
  let work = '';
  /** The unpacked package, as under node_modules/idm-compat. */
  let installed = '';
  /** A folder that is neither the checkout nor the package. */
  let elsewhere = '';
  let files: string[] = [];

  before(async () => {
    work = tempDir('package');
    // A copy of the checkout as git has it (its .gitignore included), built as `prepare` builds it
    // (without the type check `npm run check` makes), then packed without running `prepare` again.
    const copy = path.join(work, 'checkout');
    cpSync(ROOT, copy, {
      recursive: true,
      filter: (source) => path.dirname(source) !== ROOT || !NOT_COPIED.has(path.basename(source)),
    });
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'));
    await run(process.execPath, [
      path.join(ROOT, 'node_modules/typescript/bin/tsc'),
      ...['-p', path.join(copy, 'tsconfig.build.json'), '--noCheck'],
    ]);
    const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: copy,
    });
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    assert.ok(packed);
    files = packed.files.map((file) => file.path);
    installed = path.join(work, 'install', 'node_modules', 'idm-compat');
    mkdirSync(installed, { recursive: true });
    await run('tar', ['-xzf', path.join(work, packed.filename), '-C', installed, '--strip-components=1']);
    // Its dependencies, as npm would have installed them next to it.
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(installed, 'node_modules'));
    elsewhere = path.join(work, 'elsewhere');
    mkdirSync(elsewhere);
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Runs the installed binary in `elsewhere`, without IDM_COMPAT_CONFIG, HOST or PORT. */
  const cli = (args: string[]) => {
    const env = { ...process.env };
    for (const name of ['IDM_COMPAT_CONFIG', 'HOST', 'PORT', 'NODE_OPTIONS']) delete env[name];
    return run(process.execPath, [path.join(installed, 'bin', 'idm-compat.js'), ...args], {
      cwd: elsewhere,
      env,
    });
  };

  it('holds the built CLI and what it reads at run time, and none of the development files', () => {
    for (const needed of [
      'bin/idm-compat.js',
      'dist/cli.js',
      'dist/server.js',
      'mappings/iserv-idm-v1/profile.json',
      'mappings/compare-rules.default.json',
      'mappings/mapping.schema.json',
      'config.schema.json',
      'config.example.json',
      'docs/configuration.md',
      'docs/operations.md',
      'README.md',
    ])
      assert.ok(files.includes(needed), `${needed} is not in the package`);
    for (const file of files)
      assert.doesNotMatch(file, /^(test|bench|scripts|src|\.ci)\//, `${file} is in the package`);
  });

  it('runs its binary from another folder: help, config check, mappings check and the shipped compare rules', async () => {
    assert.match((await cli(['--help'])).stdout, /Usage: idm-compat <command>/);
    // The embedded defaults (sandbox mode) and a file that names neither mappings nor compare rules.
    assert.match((await cli(['config', 'check'])).stdout, /valid \(sandbox mode\)/);
    assert.match((await cli(['mappings', 'check'])).stdout, /iserv-idm-v1 .* is valid/);
    const config = path.join(elsewhere, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        successor: {
          baseUrl: 'http://127.0.0.1:9/iserv/idm/api/v1',
          auth: { type: 'apiKey', key: 'unused' },
        },
        store: { type: 'sqlite', path: './data/store.db' },
        migration: {
          legacy: { baseUrl: 'http://127.0.0.1:9/iserv/api', username: 'u', password: 'p' },
          modes: { '*': 'shadow' },
        },
      }),
    );
    assert.match((await cli(['config', 'check', '--config', config])).stdout, /valid \(production mode\)/);
    assert.equal(existsSync(path.join(elsewhere, 'data')), false, 'config check created the store');
  });

  it('`npm start` hands SIGTERM on to the proxy, which drains and stops, leaving nothing running', async () => {
    // npm passes SIGTERM to the shell running the script; without `exec` the shell ended and the
    // proxy, orphaned, went on listening (a container's `npm start` never drained).
    const copy = path.join(work, 'checkout');
    const manifest = JSON.parse(readFileSync(path.join(copy, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    manifest.scripts.build = 'true'; // built in `before` already
    writeFileSync(path.join(copy, 'package.json'), JSON.stringify(manifest));
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
    for (const name of ['IDM_COMPAT_CONFIG', 'HOST', 'NODE_OPTIONS']) delete env[name];
    const npm = spawn('npm', ['start'], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    npm.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    let processes: number[] = [];
    try {
      const url = await listening(npm.stderr, exited);
      processes = descendants(npm.pid ?? -1);
      npm.kill('SIGTERM');
      await exited;
      await waitFor(() => processes.every((pid) => !alive(pid)), 10_000);
      assert.deepEqual(processes.filter(alive), [], 'processes of npm start still running');
      await assert.rejects(fetch(`${url}/healthz`), 'the proxy still answers');
      assert.match(stdout, /"msg":"idm-compat stopped"/);
    } finally {
      npm.kill('SIGKILL');
      for (const pid of processes.filter(alive)) process.kill(pid, 'SIGKILL');
    }
  });

  it('serves in sandbox mode from another folder, docs included, and stops on SIGTERM with exit 0', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
    for (const name of ['IDM_COMPAT_CONFIG', 'HOST', 'NODE_OPTIONS']) delete env[name];
    const child = spawn(process.execPath, [path.join(installed, 'bin', 'idm-compat.js'), 'serve'], {
      cwd: elsewhere,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      let stderr = '';
      const started = await new Promise<{ url: string; password: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stderr}`)), 60_000);
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
          const found = /curl -u demo:(\S+) (http:\/\/127\.0\.0\.1:\d+)\//.exec(stderr);
          if (found?.[1] && found[2] && stderr.includes('Interactive docs')) {
            clearTimeout(timer);
            resolve({ password: found[1], url: found[2] });
          }
        });
        void exited.then((code) => reject(new Error(`serve exited with ${code}:\n${stderr}`)));
      });
      const authorization = `Basic ${Buffer.from(`demo:${started.password}`).toString('base64')}`;
      for (const [pathname, type] of [
        ['/iserv/api/Service/Core/Entity/User/admin', /json/],
        ['/iserv/api/docs/', /html/],
        ['/iserv/api/docs/swagger-ui-bundle.js', /javascript/],
        ['/iserv/api/docs/openapi.json', /json/],
      ] as const) {
        const answer = await fetch(`${started.url}${pathname}`, { headers: { authorization } });
        assert.equal(answer.status, 200, pathname);
        assert.match(answer.headers.get('content-type') ?? '', type, pathname);
        await answer.arrayBuffer();
      }
      assert.ok(existsSync(path.join(elsewhere, 'data', 'idm-compat.db')), 'the store is not in ./data');
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** The URL the proxy prints once it listens in sandbox mode (stderr), or the reason it did not. */
function listening(stderr: Readable, exited: Promise<unknown>): Promise<string> {
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${text}`)), 60_000);
    stderr.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const found = /Interactive docs: (http:\/\/127\.0\.0\.1:\d+)\//.exec(text);
      if (found?.[1]) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    void exited.then(() => reject(new Error(`serve exited:\n${text}`)));
  });
}

/** Every process below `pid` (Linux: the parent is the field after the name in /proc/PID/stat). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // ended meanwhile
    }
  }
  const found: number[] = [];
  const below = (parent: number) => {
    for (const [child, itsParent] of parents)
      if (itsParent === parent) {
        found.push(child);
        below(child);
      }
  };
  below(pid);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!condition() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
}
