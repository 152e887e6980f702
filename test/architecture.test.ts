// The import rules `npm run check` enforces: they hold for the project, and they fail a tree that
// breaks them (mapping or migration importing the HTTP layer, the sandbox importing the proxy, lib
// importing up).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { checkArchitecture } from '../scripts/architecture.js';
import { tempDir } from './temp-dir.js';

function tree(files: Record<string, string>): string {
  const root = tempDir('arch');
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

describe('architecture import rules', () => {
  it('hold for the project itself', () => {
    assert.deepEqual(checkArchitecture(process.cwd()), []);
  });

  it('name every broken rule with file, line and target', () => {
    const root = tree({
      'src/mapping/engine.ts':
        "import { x } from './ids.js';\nimport { LegacyError } from '../http/legacy-error.js';\n",
      'src/mapping/ids.ts': "export const x = 1;\nconst later = () => import('../legacy/operations.js');\n",
      'src/sandbox/app.ts':
        "import type { Store } from '../store/types.js';\nimport { now } from '../lib/clock.js';\n",
      'src/sandbox/routes/users.ts':
        "import { a } from '../data.js';\nexport { b } from '../../config/load.js';\n",
      'src/lib/clock.ts': "import type { Services } from '../services.js';\n",
      'src/http/errors.ts': "import { TranslationError } from '../mapping/errors.js';\n",
      'src/migration/compare.ts':
        "import { globs } from './globs.js';\nimport { dispatch } from '../legacy/dispatch.js';\nimport type { AppEnv } from '../http/context.js';\n",
    });
    const found = checkArchitecture(root).map((v) => `${v.file}:${v.line} ${v.target}`);
    assert.deepEqual(found.sort(), [
      'src/lib/clock.ts:1 src/services',
      'src/mapping/engine.ts:2 src/http/legacy-error',
      'src/mapping/ids.ts:2 src/legacy/operations',
      'src/migration/compare.ts:2 src/legacy/dispatch',
      'src/migration/compare.ts:3 src/http/context',
      'src/sandbox/app.ts:1 src/store/types',
      'src/sandbox/routes/users.ts:2 src/config/load',
    ]);
  });

  it('make the check command fail', () => {
    const root = tree({ 'src/sandbox/a.ts': "import { b } from '../auth/admin.js';\n" });
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/architecture.ts', root], {
      encoding: 'utf8',
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /src\/sandbox\/a\.ts:1: imports src\/auth\/admin: src\/sandbox is a leaf/);
  });
});
