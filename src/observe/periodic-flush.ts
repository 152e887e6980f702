/**
 * The clockwork of a write-behind: runs `flushOnce` every `intervalMs` (the timer never keeps the
 * process alive), never two at once, and once more at close, that last time with `final` true:
 * nothing it keeps after a refusal will be tried again. What a flush takes and writes, what it
 * keeps when the store refuses, and what it says of what the last one could not write, is the
 * owner's business.
 */
export class PeriodicFlush {
  #flushing: Promise<void> | undefined;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(
    intervalMs: number,
    private readonly flushOnce: (final: boolean) => Promise<void>,
  ) {
    if (intervalMs > 0) {
      this.#timer = setInterval(() => void this.flush(), intervalMs);
      this.#timer.unref();
    }
  }

  /** Runs one flush after the one under way, if any. */
  flush(): Promise<void> {
    return this.#run(false);
  }

  /** Stops the timer and flushes what is left, for the last time. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#run(true);
  }

  async #run(final: boolean): Promise<void> {
    while (this.#flushing) await this.#flushing;
    this.#flushing = this.flushOnce(final).finally(() => {
      this.#flushing = undefined;
    });
    await this.#flushing;
  }
}
