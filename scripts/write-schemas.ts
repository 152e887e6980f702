// Regenerates the JSON Schema files that editors use; `npm test` fails when they are stale.
import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/config/schema.js';
import { mappingJsonSchema } from '../src/mapping/schema.js';

writeFileSync('config.schema.json', `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
process.stdout.write('wrote config.schema.json\n');
writeFileSync('mappings/mapping.schema.json', `${JSON.stringify(mappingJsonSchema(), null, 2)}\n`);
process.stdout.write('wrote mappings/mapping.schema.json\n');
