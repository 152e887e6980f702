// Regenerates the JSON Schema files that editors use; `npm test` fails when they are stale.
// `npx tsx scripts/write-schemas.ts` writes both; `… config` or `… mappings` writes only that one.
import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/config/schema.js';
import { mappingJsonSchema } from '../src/mapping/schema.js';

const targets = {
  config: () => {
    writeFileSync('config.schema.json', `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    process.stdout.write('wrote config.schema.json\n');
  },
  mappings: () => {
    writeFileSync('mappings/mapping.schema.json', `${JSON.stringify(mappingJsonSchema(), null, 2)}\n`);
    process.stdout.write('wrote mappings/mapping.schema.json\n');
  },
};
const isTarget = (name: string): name is keyof typeof targets => Object.hasOwn(targets, name);

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !isTarget(name));
if (unknown.length > 0) {
  process.stderr.write(`unknown schema ${unknown.join(', ')}; known: ${Object.keys(targets).join(', ')}\n`);
  process.exit(2);
}
for (const name of wanted.length > 0
  ? wanted.filter(isTarget)
  : (Object.keys(targets) as (keyof typeof targets)[]))
  targets[name]();
