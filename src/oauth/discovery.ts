import * as oidc from 'openid-client';
import type { Logger } from '../lib/logger.js';
import { isLoopbackHost } from '../lib/loopback.js';

/** How a confidential client authenticates at the token endpoint. */
export type ClientAuthMethod = 'client_secret_post' | 'client_secret_basic';

export interface DiscoverIssuerOptions {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** A fixed method, or `auto`: what discovery advertises, `prefer` first when both are offered. */
  authMethod: 'auto' | ClientAuthMethod;
  prefer: ClientAuthMethod;
  timeoutMs: number;
  /** openid-client's `customFetch` (e.g. a pooled fetch with its own timeouts). */
  fetch?: oidc.CustomFetch;
  logger: Logger;
  /** The log field the issuer is reported under, e.g. `successor` or `sso`. */
  logKey: string;
  /** What a plain-http issuer exposes, for the warning, e.g. "the client secret". */
  exposes: string;
}

/** A discovered issuer, ready for openid-client grants. */
export interface DiscoveredIssuer {
  configuration: oidc.Configuration;
  authMethod: ClientAuthMethod;
  metadata: oidc.ServerMetadata;
}

/**
 * Discovers an OAuth2/OIDC issuer with openid-client and builds a client configuration:
 * plain http is allowed (with a warning unless the issuer is on loopback), the client
 * authentication method follows `authMethod`, and every call gets the timeout. Errors are
 * openid-client's own; callers translate them.
 */
export async function discoverIssuer(options: DiscoverIssuerOptions): Promise<DiscoveredIssuer> {
  const server = new URL(options.issuer);
  const insecure = server.protocol === 'http:';
  if (insecure && !isLoopbackHost(server.hostname)) {
    options.logger.warn(
      { [options.logKey]: { issuer: options.issuer } },
      `the issuer is plain http: ${options.exposes} travels unencrypted`,
    );
  }
  const timeout = options.timeoutMs / 1000;
  const discovered = await oidc.discovery(server, options.clientId, undefined, undefined, {
    ...(options.fetch ? { [oidc.customFetch]: options.fetch } : {}),
    timeout,
    execute: insecure ? [oidc.allowInsecureRequests] : [],
  });
  const metadata = discovered.serverMetadata();
  const authMethod = chooseAuthMethod(options, metadata.token_endpoint_auth_methods_supported);
  const auth =
    authMethod === 'client_secret_basic'
      ? oidc.ClientSecretBasic(options.clientSecret)
      : oidc.ClientSecretPost(options.clientSecret);
  const configuration = new oidc.Configuration(metadata, options.clientId, undefined, auth);
  if (options.fetch) configuration[oidc.customFetch] = options.fetch;
  configuration.timeout = timeout;
  if (insecure) oidc.allowInsecureRequests(configuration);
  options.logger.debug(
    { [options.logKey]: { issuer: options.issuer, tokenEndpoint: metadata.token_endpoint, authMethod } },
    'issuer discovered',
  );
  return { configuration, authMethod, metadata };
}

function chooseAuthMethod(options: DiscoverIssuerOptions, supported: string[] | undefined): ClientAuthMethod {
  if (options.authMethod !== 'auto') return options.authMethod;
  // RFC 8414: an absent list means client_secret_basic.
  if (supported === undefined) return 'client_secret_basic';
  const other: ClientAuthMethod =
    options.prefer === 'client_secret_post' ? 'client_secret_basic' : 'client_secret_post';
  if (supported.includes(options.prefer)) return options.prefer;
  if (supported.includes(other)) return other;
  options.logger.warn(
    { [options.logKey]: { issuer: options.issuer, supported } },
    `the issuer advertises neither client_secret_post nor client_secret_basic; trying ${options.prefer}`,
  );
  return options.prefer;
}
