import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

const ruleSchema = z
  .object({
    match: z
      .string()
      .regex(
        /^(\*|[A-Z]+) (\*|\/\S*)$/,
        'expected "METHOD /route/pattern" as in the counters, e.g. "GET /users/{id}"',
      ),
    skip: z.int().min(0).optional(),
    times: z.int().min(1).optional(),
    status: z.union([z.literal(0), z.int().min(400).max(599)]),
  })
  .strict();

/** Validates a fault-settings patch (start options, `faults.set`, `PUT /__sandbox/faults`). */
export const faultPatchSchema = z
  .object({
    latencyMs: z.int().min(0).max(600_000),
    errorRate: z.number().min(0).max(1),
    errorStatus: z.int().min(400).max(599),
    tokenEndpointDown: z.boolean(),
    rules: z.array(ruleSchema),
    ssoLoginAs: z.string().min(1).nullable(),
  })
  .strict()
  .partial();

/**
 * A deterministic failure: requests whose counter key matches `match` (`*` for any method or
 * any route) pass `skip` times, then fail with `status` `times` times (for ever without
 * `times`). Status 0 drops the connection without an answer (a network error).
 */
export type FaultRule = z.infer<typeof ruleSchema>;

/** The fault switches of a running sandbox. */
export interface FaultSettings {
  /** Added to every API (and token) request. */
  latencyMs: number;
  /** 0..1: that share of API requests (not the token endpoint) answers `errorStatus`. */
  errorRate: number;
  /** Default 503. */
  errorStatus: number;
  /** The token endpoint answers 503. */
  tokenEndpointDown: boolean;
  rules: FaultRule[];
  /**
   * Interactive login only: log in this account (or UUID) instead of the `login_hint` user, once
   * the hint itself passed its checks — an identity provider that signs in the wrong person.
   * Absent when off; `null` in a patch turns it off.
   */
  ssoLoginAs?: string;
}

/** What a request gets from the fault injector. */
export type FaultOutcome =
  | { kind: 'pass' }
  | { kind: 'fail'; status: number; detail: string }
  | { kind: 'drop' };

const DEFAULTS: FaultSettings = {
  latencyMs: 0,
  errorRate: 0,
  errorStatus: 503,
  tokenEndpointDown: false,
  rules: [],
};

function matches(rule: FaultRule, key: string): boolean {
  const [ruleMethod, rulePath] = rule.match.split(' ');
  const [method, path] = key.split(' ');
  return (ruleMethod === '*' || ruleMethod === method) && (rulePath === '*' || rulePath === path);
}

/** Holds the fault settings and decides, per request, whether and how it fails. */
export class Faults {
  private settings: FaultSettings = { ...DEFAULTS, rules: [] };
  /** Matching requests seen and failures dealt, per rule (index into `settings.rules`). */
  private ruleState: { seen: number; failed: number }[] = [];

  constructor(
    initial: Partial<FaultSettings> = {},
    private readonly random: () => number = Math.random,
  ) {
    this.set(initial);
  }

  /** A copy of the current settings. */
  get(): FaultSettings {
    return { ...this.settings, rules: this.settings.rules.map((r) => ({ ...r })) };
  }

  /** Changes some settings (validated; throws a zod error on bad input). New `rules` start counting afresh. */
  set(patch: Partial<FaultSettings>): void {
    const parsed = faultPatchSchema.parse(patch);
    const next: FaultSettings = { ...this.settings };
    if (parsed.latencyMs !== undefined) next.latencyMs = parsed.latencyMs;
    if (parsed.errorRate !== undefined) next.errorRate = parsed.errorRate;
    if (parsed.errorStatus !== undefined) next.errorStatus = parsed.errorStatus;
    if (parsed.tokenEndpointDown !== undefined) next.tokenEndpointDown = parsed.tokenEndpointDown;
    if (parsed.ssoLoginAs === null) delete next.ssoLoginAs;
    else if (parsed.ssoLoginAs !== undefined) next.ssoLoginAs = parsed.ssoLoginAs;
    if (parsed.rules !== undefined) {
      next.rules = parsed.rules.map((r) => ({ ...r }));
      this.ruleState = next.rules.map(() => ({ seen: 0, failed: 0 }));
    }
    this.settings = next;
  }

  /** Back to no faults at all. */
  reset(): void {
    this.settings = { ...DEFAULTS, rules: [] };
    this.ruleState = [];
  }

  /**
   * Applies latency, then decides the request's fate: token endpoint down (token requests only),
   * the first rule that fires, then the random error rate (API requests only).
   */
  async decide(key: string, target: 'api' | 'token'): Promise<FaultOutcome> {
    const settings = this.settings;
    if (settings.latencyMs > 0) await sleep(settings.latencyMs);
    if (target === 'token' && settings.tokenEndpointDown) {
      return { kind: 'fail', status: 503, detail: 'The token endpoint is down (sandbox fault switch).' };
    }
    let fired: FaultRule | undefined;
    settings.rules.forEach((rule, index) => {
      const state = this.ruleState[index];
      if (!state || !matches(rule, key)) return;
      state.seen++;
      if (fired || state.seen <= (rule.skip ?? 0)) return;
      if (rule.times !== undefined && state.failed >= rule.times) return;
      state.failed++;
      fired = rule;
    });
    if (fired) {
      return fired.status === 0
        ? { kind: 'drop' }
        : {
            kind: 'fail',
            status: fired.status,
            detail: `Injected failure (sandbox fault rule "${fired.match}").`,
          };
    }
    if (target === 'api' && settings.errorRate > 0 && this.random() < settings.errorRate) {
      return {
        kind: 'fail',
        status: settings.errorStatus,
        detail: 'Injected random failure (sandbox error rate).',
      };
    }
    return { kind: 'pass' };
  }
}
