import { createRequire } from 'node:module';
import type { Agent as UndiciAgent } from 'undici';

/**
 * undici's `Agent`, loaded from its own module rather than from undici's index. The index loads
 * all of undici at once (fetch, WebSocket, EventSource, caches, mocks, interceptors): 4.9 MiB of
 * V8 heap in a bare Node process against 1.7 MiB for the Agent and what it needs (the dispatcher,
 * the HTTP/1.1 client, the llhttp parser; docs/performance.md has the command). The proxy sends
 * every successor call, token calls included, through an Agent's `dispatch` and uses nothing else
 * of undici while it serves; the parts that need more (replaying recordings, forwarding to the old
 * server) import the index when they run.
 *
 * The path is undici's internal layout, not its public API: test/successor.agent.test.ts checks
 * that this is the very class the index exports, so an undici release that moves it fails there.
 */
export const Agent = createRequire(import.meta.url)('undici/lib/dispatcher/agent.js') as new (
  options?: UndiciAgent.Options,
) => Agent;

/**
 * What an Agent loaded this way has. `request`, `stream` and undici's other API methods are added
 * to every dispatcher by the index, so they exist only once something has loaded it: the type
 * leaves them out, so that nothing here comes to depend on them.
 */
export type Agent = Pick<UndiciAgent, 'dispatch' | 'close' | 'destroy'>;
