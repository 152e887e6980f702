import { AsyncLocalStorage } from 'node:async_hooks';

/** What one unit of work (usually one legacy request) cost in successor calls. */
export interface CallStats {
  /** HTTP calls to the successor API, retries included. */
  calls: number;
  /** Summed wall time of those API calls, in milliseconds. */
  durationMs: number;
  /** HTTP calls to the OAuth2 server (discovery and token requests). */
  tokenCalls: number;
  /** Summed wall time of the token calls, in milliseconds. */
  tokenDurationMs: number;
}

const storage = new AsyncLocalStorage<CallStats>();

/** Runs `fn` with fresh call statistics that every successor call made inside it adds to. */
export function withCallStats<T>(fn: () => T): T {
  return storage.run({ calls: 0, durationMs: 0, tokenCalls: 0, tokenDurationMs: 0 }, fn);
}

/** The statistics of the enclosing `withCallStats`, or undefined outside of one. */
export function currentCallStats(): CallStats | undefined {
  return storage.getStore();
}

/** Adds one HTTP call to the current statistics (a no-op outside `withCallStats`). */
export function recordCall(kind: 'api' | 'token', durationMs: number): void {
  const stats = storage.getStore();
  if (!stats) return;
  if (kind === 'api') {
    stats.calls += 1;
    stats.durationMs += durationMs;
  } else {
    stats.tokenCalls += 1;
    stats.tokenDurationMs += durationMs;
  }
}
