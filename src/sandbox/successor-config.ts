import type { ResolvedSuccessorConfig } from '../config/load.js';
import type { RunningSandbox } from './index.js';
import { READ_SCOPE, WRITE_SCOPE } from './oauth.js';

/**
 * The successor block that points a successor client at a running sandbox with its read-write
 * demo client; the configured timeouts, retries, pool and page size are kept when given.
 */
export function sandboxSuccessorConfig(
  sandbox: RunningSandbox,
  configured?: ResolvedSuccessorConfig,
): ResolvedSuccessorConfig {
  return {
    timeouts: configured?.timeouts ?? { connectMs: 5_000, totalMs: 15_000 },
    retries: configured?.retries ?? { max: 2, baseDelayMs: 100 },
    pool: configured?.pool ?? { connections: 32, keepAliveMs: 30_000 },
    pageSize: configured?.pageSize ?? 100,
    baseUrl: sandbox.apiBaseUrl,
    auth: {
      type: 'oauth2',
      issuer: sandbox.issuer,
      clientId: sandbox.clients.readWrite.clientId,
      clientSecret: sandbox.clients.readWrite.clientSecret,
      scopes: { read: [READ_SCOPE], write: [READ_SCOPE, WRITE_SCOPE] },
      authMethod: 'auto',
      refreshMarginSeconds: 60,
    },
  };
}
