import { createHash } from 'node:crypto';
import type { ResolvedMigrationConfig } from '../config/load.js';
import { nestedDeeperThan } from '../lib/json-depth.js';
import type { Logger } from '../lib/logger.js';
import { redactPath, redactQuery } from '../lib/redact.js';
import type { Observer, ShadowOutcomeKind } from '../observe/observer.js';
import { PeriodicFlush } from '../observe/periodic-flush.js';
import { isDataRefusal } from '../store/errors.js';
import type { ShadowCount, ShadowPathCount, ShadowRepository, ShadowSample } from '../store/shadow.js';
import { type Answer, type Comparison, compareAnswers, sampleOf } from './compare.js';
import type { CompareRules } from './compare-rules.js';
import { MAX_BODY_DEPTH, NO_SECRET_BODIES } from './recording.js';
import type { Sample } from './report.js';

/** One shadowed request: what the old server answered, and how to get the translation's answer. */
export interface ShadowRequest {
  operation: string;
  apiUser: string;
  requestId: string;
  method: string;
  /** Path below the legacy base path, and the raw query without `?`. */
  path: string;
  query: string;
  /** The body as `recordedRequestBody` gives it (a password operation's as a whole `[redacted]`). */
  requestBody: unknown;
  /** Whether the operation changes state (a write is shadowed only with `migration.shadow.writes`). */
  write: boolean;
  /**
   * The old server's answer, which the caller got; or how to read it (decoded, when the old server
   * compressed it), run only for a request that is compared, off the caller's path: undefined when
   * it cannot be read, and the comparison is then counted as skipped.
   */
  legacy: Answer | (() => Promise<Answer | undefined>);
  /** Runs the translation against the successor and resolves to its answer. */
  translate: () => Promise<Answer>;
}

/** Differences kept per sample, and samples kept per operation in the store. */
const DIFFERENCES_PER_SAMPLE = 20;
const SAMPLES_KEPT = 50;

/**
 * The background half of shadow mode (SPEC 8): the caller already has the old server's answer;
 * here the translation runs against the successor — sampled (`sampleRate`, per API user when
 * `sticky`), time-boxed (`timeoutMs`), at most `maxConcurrent` at once (beyond that the
 * comparison is skipped and counted, never queued; so is one whose old answer is too large to
 * hold) — and the two answers are compared under the
 * compare rules. Outcomes (match, mismatch with the differing paths and a redacted sample, error,
 * skipped) go to the metrics at once and to the store in batches, like the usage inventory.
 */
export class ShadowRunner {
  #running = 0;
  #counts = new Map<string, ShadowCount>();
  #paths = new Map<string, ShadowPathCount>();
  #samples: ShadowSample[] = [];
  readonly #flusher: PeriodicFlush;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly options: {
      settings: ResolvedMigrationConfig['shadow'];
      rules: CompareRules;
      repository: ShadowRepository;
      observer: Pick<Required<Observer>, 'shadowComparison'>;
      clock: { now(): number };
      logger: Logger;
      flushIntervalMs: number;
      random?: () => number;
      /** Operations whose answers are compared by shape only, every value redacted: the password resets. */
      secretAnswers?: ReadonlySet<string>;
    },
  ) {
    this.#flusher = new PeriodicFlush(options.flushIntervalMs, (final) => this.#flushOnce(final));
  }

  /** Background translations running now. */
  get running(): number {
    return this.#running;
  }

  /** Starts the comparison of one shadowed request, or counts it as skipped; never waits for it. */
  submit(request: ShadowRequest): void {
    const { settings } = this.options;
    if (
      (request.write && !settings.writes) ||
      !this.#sampled(request.apiUser) ||
      this.#running >= settings.maxConcurrent
    ) {
      this.#outcome(request.operation, 'skipped');
      return;
    }
    // The slot is held until the translation itself settles, not just until the time box: a
    // translation past its time cannot be cancelled, and it still loads the successor.
    this.#running += 1;
    const done: Promise<void> = this.#run(request).then(() => {
      this.#running -= 1;
      this.#inFlight.delete(done);
    });
    this.#inFlight.add(done);
  }

  /** Reads the old server's answer, then runs the translation and compares; settles once the translation has. */
  async #run(request: ShadowRequest): Promise<void> {
    const legacy =
      typeof request.legacy === 'function' ? await request.legacy().catch(() => undefined) : request.legacy;
    if (legacy === undefined) {
      this.#outcome(request.operation, 'skipped');
      return;
    }
    const translation = request.translate();
    await Promise.allSettled([this.#compare({ ...request, legacy }, translation), translation]);
  }

  /**
   * Counts a shadowed request that cannot be compared as skipped: the old server's answer was
   * larger than the comparison cap (`LegacyUpstream.forwardBuffered`), and was streamed to the
   * caller instead of read whole. Its translation is not run. (One compressed in a way that
   * cannot be read, or that decodes past the cap, is counted so once its `legacy` is read.)
   */
  countSkipped(operation: string): void {
    this.#outcome(operation, 'skipped');
  }

  /** Waits for the comparisons under way (tests, shutdown). */
  async settle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /** Writes what was counted since the last flush in one store call. */
  flush(): Promise<void> {
    return this.#flusher.flush();
  }

  /** Lets the comparisons under way finish (each is time-boxed), stops the timer and writes what is left. */
  async close(): Promise<void> {
    await this.settle();
    await this.#flusher.close();
  }

  async #flushOnce(final: boolean): Promise<void> {
    if (this.#counts.size === 0 && this.#samples.length === 0) return;
    const batch = {
      counts: [...this.#counts.values()],
      paths: [...this.#paths.values()],
      samples: this.#samples,
    };
    this.#counts = new Map();
    this.#paths = new Map();
    this.#samples = [];
    try {
      await this.options.repository.add(batch, SAMPLES_KEPT);
    } catch (error) {
      // The counts only: samples hold (redacted) answers, which belong in the store, not the log.
      const lost = { err: error, lost: batch.counts, paths: batch.paths, samples: batch.samples.length };
      if (final) {
        this.options.logger.error(lost, 'shadow outcomes not written at shutdown; these counts are lost');
        return;
      }
      // Kept unless the store refused what it holds: such a batch would be refused again at every
      // flush, together with every count added to it meanwhile.
      if (isDataRefusal(error)) {
        this.options.logger.error(lost, 'shadow outcomes refused by the store; these counts are dropped');
        return;
      }
      this.options.logger.warn({ err: error }, 'shadow outcomes not written; kept for the next flush');
      for (const c of batch.counts) this.#count(c.operation, c.outcome, c.count, c.hour);
      for (const p of batch.paths) this.#path(p.operation, p.path, p.count, p.hour);
      this.#samples.push(...batch.samples);
    }
  }

  #sampled(apiUser: string): boolean {
    const rate = this.options.settings.sampleRate;
    if (rate >= 1) return true;
    if (rate <= 0) return false;
    if (!this.options.settings.sticky) return (this.options.random ?? Math.random)() < rate;
    // Sticky: the same API user is always in or always out, so its whole traffic is compared.
    return createHash('sha256').update(apiUser).digest().readUInt32BE(0) / 2 ** 32 < rate;
  }

  async #compare(request: ShadowRequest & { legacy: Answer }, translation: Promise<Answer>): Promise<void> {
    const { settings, rules, logger } = this.options;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), settings.timeoutMs);
    });
    let translated: Answer | 'timeout';
    try {
      translated = await Promise.race([translation, timeout]);
    } catch (error) {
      this.#error(
        request,
        `the translation failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    } finally {
      clearTimeout(timer);
    }
    if (translated === 'timeout') {
      this.#error(
        request,
        `the translation took longer than ${settings.timeoutMs} ms (migration.shadow.timeoutMs)`,
      );
      return;
    }
    // A 5xx of the translation is a translation error, not a difference in content.
    if (translated.status >= 500) {
      const message = (translated.body as { message?: unknown } | null)?.message;
      this.#error(
        request,
        `the translation answered ${translated.status}${typeof message === 'string' ? `: ${message}` : ''}`,
      );
      return;
    }
    if (
      [request.requestBody, request.legacy.body, translated.body].some((body) =>
        nestedDeeperThan(body, MAX_BODY_DEPTH),
      )
    ) {
      this.#error(request, `a body nested deeper than ${MAX_BODY_DEPTH} levels is not compared`);
      return;
    }
    // Whatever goes wrong in the comparison is an error outcome: a rejection here would be
    // swallowed by submit's allSettled, and the request would be missing from the counts.
    let comparison: Comparison;
    let sample: Sample | undefined;
    try {
      comparison = compareAnswers(
        request.legacy,
        translated,
        rules.forOperation(request.operation),
        this.options.secretAnswers?.has(request.operation),
      );
      const status = { a: request.legacy.status, b: translated.status };
      sample = comparison.match
        ? undefined
        : // The request's body is recordedRequestBody's: a password operation's a whole [redacted] already.
          sampleOf(request, status, comparison, DIFFERENCES_PER_SAMPLE, NO_SECRET_BODIES);
    } catch (error) {
      this.#error(
        request,
        `the comparison failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    if (comparison.match) {
      this.#outcome(request.operation, 'match');
      return;
    }
    this.#outcome(request.operation, 'mismatch');
    for (const path of comparison.paths) this.#path(request.operation, storablePath(path), 1);
    if (sample) this.#sample(request, 'mismatch', sample);
    logger.debug({ shadow: { operation: request.operation, paths: comparison.paths } }, 'shadow mismatch');
  }

  #error(request: ShadowRequest, error: string): void {
    this.#outcome(request.operation, 'error');
    this.#sample(request, 'error', {
      requestId: request.requestId,
      method: request.method,
      path: redactPath(request.path),
      query: redactQuery(request.query),
      error,
    });
  }

  #sample(request: ShadowRequest, outcome: 'mismatch' | 'error', detail: unknown): void {
    this.#samples.push({
      at: this.options.clock.now(),
      operation: request.operation,
      apiUser: request.apiUser,
      requestId: request.requestId,
      outcome,
      detail,
    });
    // Bounded between flushes too: only the newest are kept anyway.
    if (this.#samples.length > 4 * SAMPLES_KEPT)
      this.#samples.splice(0, this.#samples.length - 4 * SAMPLES_KEPT);
  }

  /** One outcome: told to the metrics at once, counted for the next flush. */
  #outcome(operation: string, outcome: ShadowOutcomeKind): void {
    this.options.observer.shadowComparison(operation, outcome);
    this.#count(operation, outcome);
  }

  #count(operation: string, outcome: ShadowOutcomeKind, count = 1, hour = this.options.clock.now()): void {
    const key = `${operation}\u0000${outcome}`;
    const known = this.#counts.get(key);
    if (known) known.count += count;
    else this.#counts.set(key, { operation, outcome, hour, count });
  }

  #path(operation: string, path: string, count: number, hour = this.options.clock.now()): void {
    const key = `${operation}\u0000${path}`;
    const known = this.#paths.get(key);
    if (known) known.count += count;
    else this.#paths.set(key, { operation, path, hour, count });
  }
}

/** The longest differing path kept as it is; PostgreSQL's index on the path takes about 2.7 KB. */
const MAX_PATH_CHARS = 512;

/** A differing path as the store keeps it: one longer than MAX_PATH_CHARS is cut and ends with `…`. */
function storablePath(path: string): string {
  return path.length > MAX_PATH_CHARS ? `${path.slice(0, MAX_PATH_CHARS - 1)}…` : path;
}
