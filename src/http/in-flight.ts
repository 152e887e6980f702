/**
 * The requests whose handlers still run, counted by the request pipeline from its start until the
 * handler has answered (a streamed answer's rest is not counted: it ends with its connection). A
 * shutdown cuts the connections still open after `server.shutdownTimeoutMs`, but their handlers
 * go on; it waits for them (`settled`) before it closes the successor client, so that a multi-step
 * write whose client was cut off still ends whole, or rolled back, instead of failing half-way on
 * a closed connection pool.
 */
export class InFlightRequests {
  #running = 0;
  #idle: (() => void)[] = [];
  #cutOff = false;

  /**
   * Whether a shutdown has cut the connections still open (`server.shutdownTimeoutMs` passed): an
   * answer that ends unfinished from now on was cut off by the proxy, not left by its client.
   */
  get cutOff(): boolean {
    return this.#cutOff;
  }

  /** Marks the connections as cut off by the shutdown (see `cutOff`). */
  cuttingOff(): void {
    this.#cutOff = true;
  }

  /** How many handlers run now. */
  get running(): number {
    return this.#running;
  }

  begin(): void {
    this.#running += 1;
  }

  end(): void {
    this.#running -= 1;
    if (this.#running > 0 || this.#idle.length === 0) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }

  /** Resolves once no handler runs, or after `timeoutMs`: with how many still run then. */
  settled(timeoutMs: number): Promise<number> {
    if (this.#running === 0) return Promise.resolve(0);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(0);
      };
      const timer = setTimeout(() => {
        this.#idle = this.#idle.filter((waiting) => waiting !== done);
        resolve(this.#running);
      }, timeoutMs);
      this.#idle.push(done);
    });
  }
}
