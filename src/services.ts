import type { Clock } from './clock.js';
import type { AppConfig } from './config/load.js';
import type { Logger } from './log/logger.js';
import type { MappingHolder } from './mapping/engine.js';
import type { Store } from './store/types.js';
import type { SuccessorClient } from './successor/client.js';

/** Everything the app needs, built once by server.ts (or a test) and injected into createApp. */
export interface Services {
  config: AppConfig;
  logger: Logger;
  clock: Clock;
  store: Store;
  successor: SuccessorClient;
  /** The live mapping tables (swapped as a whole on reload). */
  mappings: MappingHolder;
  /**
   * The URL clients reach the proxy at (legacy.publicUrl, else the listen URL), set by server.ts
   * once it listens; without it, SSO links use legacy.publicUrl or the request's origin.
   */
  publicUrl?: string;
}

/** Hono environment of the app: per-request values set by middleware. */
export interface AppEnv {
  Variables: {
    services: Services;
    /** Child logger bound to the request id. */
    log: Logger;
    requestId: string;
    /** The authenticated API user, once auth has run. */
    apiUser?: string;
    /** The legacy operation id (e.g. `user.list`), once routing has matched. */
    operation?: string;
  };
}
