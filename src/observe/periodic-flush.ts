/**
 * The clockwork of a write-behind: runs `flushOnce` every `intervalMs` (the timer never keeps the
 * process alive), never two at once, and once more at close. What a flush takes and writes, and
 * what it keeps when the store refuses, is the owner's business.
 */
export class PeriodicFlush {
  #flushing: Promise<void> | undefined;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(
    intervalMs: number,
    private readonly flushOnce: () => Promise<void>,
  ) {
    if (intervalMs > 0) {
      this.#timer = setInterval(() => void this.flush(), intervalMs);
      this.#timer.unref();
    }
  }

  /** Runs one flush after the one under way, if any. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    this.#flushing = this.flushOnce().finally(() => {
      this.#flushing = undefined;
    });
    await this.#flushing;
  }

  /** Stops the timer and flushes what is left. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.flush();
  }
}
