import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { closest } from '../lib/closest.js';

/** Largest `latencyMs` (ten minutes): more would outlast every client's timeout. */
export const MAX_LATENCY_MS = 600_000;

const ruleSchema = z
  .object({
    // Checked against the served keys by `patchSchemaFor`, which knows the routes.
    match: z.string(),
    skip: z.int().min(0).optional(),
    times: z.int().min(1).optional(),
    status: z.union([z.literal(0), z.int().min(400).max(599)]),
  })
  .strict();

/**
 * The shape of a fault-settings patch (start options, `faults.set`, `PUT /__sandbox/faults`); a
 * running sandbox also checks each rule's `match` against the keys it serves (`patchSchemaFor`).
 */
export const faultPatchSchema = z
  .object({
    latencyMs: z.int().min(0).max(MAX_LATENCY_MS),
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

/** `METHOD /route/pattern`, either part may be `*`. */
const KEY_SHAPE = /^(\*|[A-Z]+) (\*|\/\S*)$/;

function matches(match: string, key: string): boolean {
  const [ruleMethod, rulePath] = match.split(' ');
  const [method, path] = key.split(' ');
  return (ruleMethod === '*' || ruleMethod === method) && (rulePath === '*' || rulePath === path);
}

/**
 * `match` as the counters would write it, for suggestions: `:id` → `{id}`, no trailing slash,
 * and a full URL path (`/iserv/idm/api/v1/roles`) cut down to the served route it ends with.
 */
function asCounterKey(match: string, keys: readonly string[]): string {
  const [method = '', rawPath = ''] = match.split(' ');
  const path = rawPath.replace(/:(\w+)/g, '{$1}').replace(/(.)\/+$/, '$1');
  const paths = new Set(keys.map((key) => key.split(' ')[1]));
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const tail = `/${segments.slice(i).join('/')}`;
    if (paths.has(tail)) return `${method} ${tail}`;
  }
  return `${method} ${path}`;
}

/**
 * The settings schema of one sandbox: the shape, plus rules whose `match` some request the rules
 * apply to can produce (`keys`: the served routes and the token endpoint). A rule that can never
 * fire is refused, naming the closest keys, rather than accepted and silently never firing.
 */
function patchSchemaFor(keys: readonly string[]) {
  return faultPatchSchema.superRefine((patch, ctx) => {
    for (const [index, rule] of (patch.rules ?? []).entries()) {
      if (KEY_SHAPE.test(rule.match) && keys.some((key) => matches(rule.match, key))) continue;
      const offered = closest(asCounterKey(rule.match, keys), keys).map((key) => `"${key}"`);
      ctx.addIssue({
        code: 'custom',
        path: ['rules', index, 'match'],
        message: `"${rule.match}" matches no request that fault rules apply to: expected "METHOD /route/pattern" of a served API route as the counters name it, or "POST /token", with * for any method or any route (answers 405 and unknown paths are counted but never subject to rules); closest: ${offered.join(', ')}`,
      });
    }
  });
}

/** Holds the fault settings and decides, per request, whether and how it fails. */
export class Faults {
  private settings: FaultSettings = { ...DEFAULTS, rules: [] };
  /** Matching requests seen and failures dealt, per rule (index into `settings.rules`). */
  private ruleState: { seen: number; failed: number }[] = [];
  private readonly schema: ReturnType<typeof patchSchemaFor>;

  /**
   * `keys` are the counter keys of the requests that go through `decide` (every served API route
   * and the token endpoint): a rule must match one of them.
   */
  constructor(
    keys: readonly string[],
    initial: Partial<FaultSettings> = {},
    private readonly random: () => number = Math.random,
  ) {
    this.schema = patchSchemaFor(keys);
    this.set(initial);
  }

  /** A copy of the current settings. */
  get(): FaultSettings {
    return { ...this.settings, rules: this.settings.rules.map((r) => ({ ...r })) };
  }

  /**
   * Changes some settings (validated, rules against the served keys too; throws a zod error on
   * bad input). New `rules` start counting afresh.
   */
  set(patch: Partial<FaultSettings>): void {
    const parsed = this.schema.parse(patch);
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
      if (!state || !matches(rule.match, key)) return;
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
