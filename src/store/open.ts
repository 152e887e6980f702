import type { ConfigFile } from '../config/schema.js';
import { openSqliteStore } from './sqlite/index.js';
import type { Store } from './types.js';

/** Opens the store the configuration names. */
export function openStore(config: ConfigFile['store']): Store {
  switch (config.type) {
    case 'sqlite':
      return openSqliteStore(config.path);
  }
}
