// Shared set-up of the migration tests: the "old server" is a second idm-compat in translate mode
// on its own sandbox (it speaks the legacy API exactly); the proxy under test sits in front of it
// with migration.legacy pointing there, translating to the file's shared sandbox.
import { parseConfig } from '../src/config/load.js';
import { systemClock } from '../src/lib/clock.js';
import { createLogger } from '../src/lib/logger.js';
import { loadCompareRules } from '../src/migration/compare-rules.js';
import { ShadowRunner } from '../src/migration/shadow.js';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../src/sandbox/index.js';
import type { Store } from '../src/store/types.js';
import { type AuthHarness, type HarnessOptions, startHarness } from './auth-helpers.js';
import { LogSink } from './log-sink.js';

/** The old server: its URL, legacy base, own sandbox, and the account the front proxy signs in with. */
export interface OldServer {
  harness: AuthHarness;
  sandbox: RunningSandbox;
  /** `http://127.0.0.1:PORT/iserv/api`. */
  baseUrl: string;
  username: string;
  password: string;
  close(): Promise<void>;
}

/** Starts the old server on a sandbox of its own (optionally with a fixture that differs on purpose). */
export async function startOldServer(sandboxOptions: SandboxOptions = {}): Promise<OldServer> {
  const sandbox = await startSandbox(sandboxOptions);
  const harness = await startHarness({ sandbox });
  const username = 'proxy-account';
  const password = await harness.addUser(username, ['127.0.0.0/8']);
  return {
    harness,
    sandbox,
    baseUrl: `${harness.url}/iserv/api`,
    username,
    password,
    async close() {
      await harness.close();
      await sandbox.close();
    },
  };
}

/** Starts the proxy under test in front of `old`, with `migration` keys merged over the upstream. */
export function startFront(
  old: Pick<OldServer, 'baseUrl' | 'username' | 'password'>,
  migration: Record<string, unknown>,
  options: HarnessOptions = {},
): Promise<AuthHarness> {
  return startHarness({
    ...options,
    config: {
      ...options.config,
      migration: {
        legacy: { baseUrl: old.baseUrl, username: old.username, password: old.password },
        ...migration,
      },
    },
  });
}

/**
 * A shadow runner on `store` with the default shadow settings, flushing only when told and
 * logging into a sink of its own.
 */
export function shadowRunnerOn(store: Pick<Store, 'shadow'>): { runner: ShadowRunner; log: LogSink } {
  const log = new LogSink();
  const settings = parseConfig({ sandbox: { enabled: true } }, { label: 'test', env: {}, baseDir: '.' })
    .migration.shadow;
  const runner = new ShadowRunner({
    settings,
    rules: loadCompareRules(),
    repository: store.shadow,
    observer: { shadowComparison: () => undefined },
    clock: systemClock,
    logger: createLogger({ destination: log }),
    flushIntervalMs: 0,
  });
  return { runner, log };
}
