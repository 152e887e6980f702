import ipaddr from 'ipaddr.js';
import { normalizeRange } from '../auth/addresses.js';
import { listSome } from '../lib/quote.js';
import type { AppConfig } from './load.js';

/** A setting that is valid but most likely not what the operator meant. */
export interface ConfigWarning {
  /** The setting, e.g. `server.trustedProxies`. */
  path: string;
  message: string;
}

/**
 * What `config check` prints and `serve` logs as a warning at start, without refusing the file:
 * trusted proxy ranges that cover every address of a family, alone (`0.0.0.0/0`, `::/0`) or
 * together (`0.0.0.0/1` and `128.0.0.0/1`), let any client write its own address into
 * X-Forwarded-For, past every API user's ranges and the per-address throttling.
 */
export function configWarnings(config: Pick<AppConfig, 'server'>): ConfigWarning[] {
  const ranges = config.server.trustedProxies.map((range) => ({
    range,
    cidr: ipaddr.parseCIDR(normalizeRange(range)),
  }));
  let together = false;
  const everyone = (['ipv4', 'ipv6'] as const).flatMap((family) => {
    const own = ranges.filter(({ cidr }) => cidr[0].kind() === family);
    // A range that covers all alone is named alone; else every range of the family, together.
    const alone = own.filter(({ cidr }) => cidr[1] === 0);
    if (alone.length > 0) return alone.map(({ range }) => range);
    if (
      !coverEverything(
        own.map(({ cidr }) => cidr),
        family === 'ipv4' ? 32 : 128,
      )
    )
      return [];
    together = true;
    return own.map(({ range }) => range);
  });
  if (everyone.length === 0) return [];
  return [
    {
      path: 'server.trustedProxies',
      message: `${listSome(everyone)} ${together ? 'together trust' : 'trusts'} every peer as a proxy: any client can name its own address in X-Forwarded-For, past the API users' ranges and the per-address throttling; list only the proxies' own addresses`,
    },
  ];
}

/** Whether CIDR ranges of one family (`bits` wide) leave no address out, together. */
function coverEverything(ranges: readonly [ipaddr.IPv4 | ipaddr.IPv6, number][], bits: number): boolean {
  const spans = ranges
    .map(([address, prefix]) => {
      const start = address.toByteArray().reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
      return [start, start + (1n << BigInt(bits - prefix))] as const;
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let reached = 0n;
  for (const [start, end] of spans) {
    if (start > reached) return false;
    if (end > reached) reached = end;
  }
  return reached === 1n << BigInt(bits);
}
