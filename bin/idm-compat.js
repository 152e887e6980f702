#!/usr/bin/env node
// The idm-compat binary: runs the compiled CLI from dist/ (built by `npm ci` through `prepare`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli.js', import.meta.url);
const youngGeneration = new URL('../dist/cli/young-generation.js', import.meta.url);
if (!existsSync(fileURLToPath(entry)) || !existsSync(fileURLToPath(youngGeneration))) {
  process.stderr.write(
    'idm-compat is not built yet, or its build is older than its sources: run `npm run build` (npm ci does it for you).\n',
  );
  process.exit(1);
}
const argv = process.argv.slice(2);
// `serve` on Node 24 and later starts afresh with V8's young generation bounded (src/cli/young-generation.ts).
if (argv[0] === 'serve') (await import(youngGeneration.href)).boundYoungGeneration();
const { runCli } = await import(entry.href);
process.exitCode = await runCli(argv);
