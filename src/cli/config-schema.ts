import { configJsonSchema } from '../config/schema.js';
import type { Command } from './command.js';

/** `idm-compat config schema`: prints the JSON Schema of the configuration file. */
export const configSchemaCommand: Command = {
  path: ['config', 'schema'],
  summary: 'Print the JSON Schema of the configuration file (the same as config.schema.json).',
  usage: '',
  options: {},
  async run(_args, io) {
    io.out(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    return 0;
  },
};
