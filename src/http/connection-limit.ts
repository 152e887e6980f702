import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Observer } from '../observe/observer.js';

/** At most one warning line a minute about refused connections (each one is counted in the metric). */
const WARN_EVERY_MS = 60_000;

/**
 * The listener of the server's `drop` event (`server.maxConnections` connections were open, so Node
 * closed a new one at once, unanswered): counts it for the metric and says so in the log, the first
 * time at once and then at most once a minute with the number refused since the last line. Without
 * it a proxy at its limit (or out of file descriptors, which nobody reports) refuses clients in
 * silence.
 */
export function connectionDropReporter(
  limit: number,
  logger: Logger,
  observer: Pick<Observer, 'connectionDropped'>,
  clock: Clock,
): () => void {
  let lastLine = Number.NEGATIVE_INFINITY;
  let since = 0;
  return () => {
    observer.connectionDropped?.();
    since++;
    const now = clock.now();
    if (now - lastLine < WARN_EVERY_MS) return;
    logger.warn(
      { refused: since, maxConnections: limit },
      `new connections refused: server.maxConnections (${limit}) are open`,
    );
    lastLine = now;
    since = 0;
  };
}
