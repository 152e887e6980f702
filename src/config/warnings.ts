import { normalizeRange } from '../auth/addresses.js';
import type { AppConfig } from './load.js';

/** A setting that is valid but most likely not what the operator meant. */
export interface ConfigWarning {
  /** The setting, e.g. `server.trustedProxies`. */
  path: string;
  message: string;
}

/**
 * What `config check` prints and `serve` logs as a warning at start, without refusing the file:
 * a trusted proxy range covering every address (`0.0.0.0/0`, `::/0`) lets any client write its own
 * address into X-Forwarded-For, past every API user's ranges and the per-address throttling.
 */
export function configWarnings(config: Pick<AppConfig, 'server'>): ConfigWarning[] {
  const everyone = config.server.trustedProxies.filter((range) => normalizeRange(range).endsWith('/0'));
  if (everyone.length === 0) return [];
  return [
    {
      path: 'server.trustedProxies',
      message: `${everyone.join(', ')} trusts every peer as a proxy: any client can name its own address in X-Forwarded-For, past the API users' ranges and the per-address throttling; list only the proxies' own addresses`,
    },
  ];
}
