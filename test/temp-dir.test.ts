import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';

const helper = pathToFileURL(path.join(import.meta.dirname, 'temp-dir.ts')).href;

/** Runs `script` (ES module code) in a node process of its own, as node --test runs a test file; its stdout. */
function runNode(script: string): string {
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
}

/** Runs `script` as runNode does, for a process that ends badly: how it ended and its stdout. */
function runNodeEnding(script: string): { status: number | null; signal: string | null; stdout: string } {
  const ended = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return { status: ended.status, signal: ended.signal, stdout: ended.stdout.trim() };
}

describe('test folders', () => {
  it('are fresh and separate while the test file runs, and gone with everything in them once its process exits', () => {
    const printed = runNode(`
      import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
      import path from 'node:path';
      import { tempDir } from ${JSON.stringify(helper)};
      const first = tempDir('config');
      const second = tempDir('config');
      writeFileSync(path.join(first, 'store.db'), 'data');
      mkdirSync(path.join(second, 'nested', 'deeper'), { recursive: true });
      writeFileSync(path.join(second, 'nested', 'deeper', 'file.json'), '{}');
      console.log(JSON.stringify({
        first, second,
        bothThere: existsSync(first) && existsSync(second),
      }));
    `);
    const seen = JSON.parse(printed) as { first: string; second: string; bothThere: boolean };
    assert.equal(seen.bothThere, true);
    assert.notEqual(seen.first, seen.second);
    assert.match(path.basename(seen.first), /^config-/);
    assert.equal(path.dirname(seen.first), path.dirname(seen.second), 'one folder per process holds them');
    assert.equal(existsSync(seen.first), false);
    assert.equal(existsSync(seen.second), false);
    assert.equal(existsSync(path.dirname(seen.first)), false, 'the process folder went too');
  });

  it('of a process killed before its exit handler ran are removed by the next process that asks for one', () => {
    const killed = runNodeEnding(`
      import { writeFileSync } from 'node:fs';
      import path from 'node:path';
      import { tempDir } from ${JSON.stringify(helper)};
      const dir = tempDir('timed-out');
      writeFileSync(path.join(dir, 'store.db'), 'x');
      process.stdout.write(dir + '\\n', () => process.kill(process.pid, 'SIGKILL'));
    `);
    assert.equal(killed.signal, 'SIGKILL');
    const killedDir = killed.stdout;
    assert.notEqual(killedDir, '');
    assert.equal(existsSync(killedDir), true, 'a killed process leaves its folder');
    const next = runNode(`
      import { tempDir } from ${JSON.stringify(helper)};
      console.log(tempDir('next'));
    `).trim();
    assert.equal(existsSync(path.dirname(killedDir)), false, 'the next process removed it');
    assert.equal(existsSync(next), false, 'and its own went at its exit');
  });

  it('are removed also when the process ends with process.exit and a failing code', () => {
    const failing = runNodeEnding(`
      import { writeFileSync } from 'node:fs';
      import path from 'node:path';
      import { tempDir } from ${JSON.stringify(helper)};
      const dir = tempDir('failing');
      writeFileSync(path.join(dir, 'log.txt'), 'x');
      console.log(dir);
      process.exit(3);
    `);
    assert.equal(failing.status, 3, 'the exit code is the test file’s own');
    const printed = failing.stdout;
    assert.notEqual(printed, '');
    assert.equal(existsSync(printed), false);
  });
});
