/** Per-endpoint request counters, keyed `METHOD /route/pattern` (e.g. `GET /users/{id}`, `POST /token`). */
export class Counters {
  private readonly counts = new Map<string, number>();

  /** Counts one request. */
  increment(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** All counters, keys sorted. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** One counter; 0 when never hit. */
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Sum over every counter. */
  total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }

  /** Sets every counter back to zero. */
  reset(): void {
    this.counts.clear();
  }
}
