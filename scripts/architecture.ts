// The import rules of the architecture, checked by `npm run check`:
// - src/mapping/ translates and knows nothing of HTTP or the legacy routes;
// - src/sandbox/ is a leaf: a stand-in successor that imports only itself and src/lib/;
// - src/lib/ holds neutral utilities and imports no other folder of the proxy;
// - src/migration/ (recordings, replay, compare) works on recorded exchanges, not on the routes:
//   it knows nothing of HTTP handling, the legacy routes or the CLI.
// `npx tsx scripts/architecture.ts [ROOT]` prints every broken rule and exits 1 when there is one.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** One import that breaks a rule. */
export interface Violation {
  file: string;
  line: number;
  target: string;
  rule: string;
}

interface Rule {
  /** Folder below src/ whose files the rule restricts. */
  from: string;
  /** Whether a file of `from` may import the module at `target` (a path below src/, no extension). */
  allows(target: string): boolean;
  text: string;
}

const RULES: readonly Rule[] = [
  {
    from: 'mapping',
    allows: (target) => !/^(legacy|http|app|server|cli)(\/|$)/.test(target),
    text: 'src/mapping must not import the HTTP layer or the legacy routes (return domain errors instead)',
  },
  {
    from: 'sandbox',
    allows: (target) => /^(sandbox|lib)(\/|$)/.test(target),
    text: 'src/sandbox is a leaf: it may import only src/sandbox and src/lib',
  },
  {
    from: 'migration',
    allows: (target) => !/^(legacy|http|app|server|cli|sandbox)(\/|$)/.test(target),
    text: 'src/migration must not import the HTTP layer, the legacy routes, the CLI or the sandbox',
  },
  {
    from: 'lib',
    allows: (target) => /^lib(\/|$)/.test(target),
    text: 'src/lib holds neutral utilities: it may import only src/lib',
  },
];

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(full);
    else if (/\.(ts|tsx|js)$/.test(entry.name)) yield full;
  }
}

/** Every import under `root`/src that breaks one of the rules. */
export function checkArchitecture(root: string): Violation[] {
  const src = path.join(root, 'src');
  const violations: Violation[] = [];
  for (const rule of RULES) {
    let files: string[];
    try {
      files = [...sourceFiles(path.join(src, rule.from))];
    } catch {
      continue;
    }
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(IMPORT)) {
        const specifier = match[1] ?? match[2] ?? '';
        if (!specifier.startsWith('.')) continue;
        const resolved = path.relative(src, path.resolve(path.dirname(file), specifier));
        const target = resolved.replace(/\.(js|ts|tsx)$/, '');
        if (target.startsWith('..') || rule.allows(target)) continue;
        violations.push({
          file: path.relative(root, file),
          line: text.slice(0, match.index + match[0].indexOf(specifier)).split('\n').length,
          target: `src/${target}`,
          rule: rule.text,
        });
      }
    }
  }
  return violations;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const violations = checkArchitecture(path.resolve(process.argv[2] ?? '.'));
  for (const v of violations) process.stderr.write(`${v.file}:${v.line}: imports ${v.target}: ${v.rule}\n`);
  if (violations.length > 0) process.exit(1);
  process.stdout.write('architecture: import rules hold\n');
}
