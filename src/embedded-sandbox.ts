// Imported lazily in sandbox mode only: production deployments never load the sandbox or its
// OAuth2 server.
import { type AppConfig, ConfigError, type ResolvedSuccessorConfig } from './config/load.js';
import { type SuccessorTuning, successorTuningDefaults } from './config/schema.js';
import type { Logger } from './lib/logger.js';
import { FixtureError, parseFixture, type SandboxFixture } from './sandbox/fixture.js';
import { type RunningSandbox, startSandbox } from './sandbox/index.js';
import { READ_SCOPE, WRITE_SCOPE } from './sandbox/oauth.js';
import { sandboxSso } from './sso/sandbox.js';

/**
 * The successor block that points a successor client at a running sandbox with its read-write
 * demo client; the configured timeouts, retries, pool, paging and answer cap are kept when given
 * (a `successor` block without baseUrl and auth gives only them), else the configuration's defaults.
 */
export function sandboxSuccessorConfig(
  sandbox: RunningSandbox,
  configured?: SuccessorTuning,
): ResolvedSuccessorConfig {
  const { timeouts, retries, pool, pageSize, pageConcurrency, maxResponseBytes } =
    configured ?? successorTuningDefaults();
  return {
    timeouts,
    retries,
    pool,
    pageSize,
    pageConcurrency,
    maxResponseBytes,
    baseUrl: sandbox.apiBaseUrl,
    auth: {
      type: 'oauth2',
      issuer: sandbox.issuer,
      clientId: sandbox.clients.readWrite.clientId,
      clientSecret: sandbox.clients.readWrite.clientSecret,
      scopes: { read: [READ_SCOPE], write: [READ_SCOPE, WRITE_SCOPE] },
      authMethod: 'auto',
      refreshMarginSeconds: 60,
    },
  };
}

/** The embedded sandbox of sandbox mode, and the configuration to run the proxy with against it. */
export interface EmbeddedSandbox {
  sandbox: RunningSandbox;
  /** The configuration with the successor (and, in sandbox mode, SSO's OIDC) pointing at the sandbox. */
  config: AppConfig & { successor: ResolvedSuccessorConfig };
}

/**
 * The fixture `sandbox.fixture` names, read and checked: a file that cannot be read or is no
 * valid fixture is a ConfigError naming the key (exit 2), for `config check` and `serve` alike
 * (the check passed such a file, and `serve` then failed with exit 1).
 */
export function sandboxFixture(config: Pick<AppConfig, 'sandbox' | 'source'>): SandboxFixture | undefined {
  const file = config.sandbox.fixture;
  if (file === undefined) return undefined;
  try {
    return parseFixture(file).fixture;
  } catch (error) {
    if (!(error instanceof FixtureError)) throw error;
    throw new ConfigError(config.source ?? '(embedded defaults)', [
      { path: 'sandbox.fixture', message: error.message },
    ]);
  }
}

/** Starts the sandbox IDM that sandbox mode runs against, as the `sandbox` block configures it. */
export async function startEmbeddedSandbox(config: AppConfig, logger: Logger): Promise<EmbeddedSandbox> {
  // Sandbox mode may point SSO at the sandbox's OpenID Provider (docs/sso.md).
  const sso = sandboxSso(config);
  const fixture = sandboxFixture(config);
  const sandbox = await startSandbox({
    port: config.sandbox.port,
    seed: config.sandbox.seed,
    ...(fixture === undefined ? {} : { fixture }),
    hydraPrefix: config.sandbox.hydraPrefix,
    pageSize: config.sandbox.pageSize,
    maxPageSize: config.sandbox.maxPageSize,
    retentionSeconds: config.sandbox.retentionSeconds,
    faults: config.sandbox.faults,
    logger,
    ...sso?.sandboxOptions,
  });
  const configured = sso ? sso.configure(sandbox) : config;
  return {
    sandbox,
    config: { ...configured, successor: sandboxSuccessorConfig(sandbox, config.successor) },
  };
}
