import { mostSpecific } from '../lib/operation-patterns.js';

/** How the proxy serves one legacy operation during a migration. */
export type Mode = 'translate' | 'passthrough' | 'shadow';

/** Operations the proxy always serves itself, whatever `migration.modes` says (their state is the proxy's own). */
const ALWAYS_TRANSLATED = new Set(['sso.authenticate']);

/**
 * `migration.modes` compiled for every operation: the most specific pattern wins (an exact id
 * over `group.link.*` over `group.*` over `*`); operations no pattern covers are translated.
 */
export class ModeTable {
  readonly #modes = new Map<string, Mode>();

  constructor(
    readonly patterns: Readonly<Record<string, Mode>>,
    operationIds: readonly string[],
  ) {
    for (const id of operationIds) {
      const pattern = ALWAYS_TRANSLATED.has(id) ? undefined : mostSpecific(Object.keys(patterns), id);
      this.#modes.set(id, pattern === undefined ? 'translate' : (patterns[pattern] ?? 'translate'));
    }
  }

  /** The mode of an operation id. */
  modeOf(operationId: string): Mode {
    return this.#modes.get(operationId) ?? 'translate';
  }

  /** Every operation with its mode, in the order of the operation ids. */
  entries(): [string, Mode][] {
    return [...this.#modes];
  }
}

/** The live mode table: swapped as a whole on reload (SIGHUP), never half-updated. */
export interface ModeHolder {
  current(): ModeTable;
  /** Puts new modes in force; the caller has validated them. */
  replace(table: ModeTable): void;
}

/** Holds `initial` until replaced. */
export function createModeHolder(initial: ModeTable): ModeHolder {
  let table = initial;
  return {
    current: () => table,
    replace(next) {
      table = next;
    },
  };
}
