// Imported lazily by server.ts in sandbox mode only, like the sandbox itself.
import { SSO_PATHS } from '../config/fixed-paths.js';
import type { AppConfig } from '../config/load.js';
import { expectedPublicUrl } from '../http/public-url.js';
import type { RunningSandbox, SandboxOptions } from '../sandbox/index.js';
import { DEFAULT_CLIENTS } from '../sandbox/oauth.js';
import { randomSecret } from './tokens.js';

/** The client the proxy uses at the embedded sandbox's OpenID Provider. */
export const SANDBOX_SSO_CLIENT_ID = 'idm-compat-sso';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Sandbox-mode SSO: what the sandbox must be started with, and the `sso` block to run with afterwards. */
export interface SandboxSso {
  sandboxOptions: Pick<SandboxOptions, 'interactiveLogin' | 'clients'>;
  /** The configuration with `sso.oidc` pointing at the started sandbox. */
  configure(sandbox: RunningSandbox): AppConfig;
}

/**
 * In sandbox mode (unless `sso.oidc` is configured or `sandbox.ssoLogin` is false) the proxy is a
 * relying party of the embedded sandbox, so `npm start` shows the whole SSO flow: the sandbox
 * starts with its auto-approving interactive login and a client `idm-compat-sso` (random secret)
 * whose redirect URI is the proxy's `/sso/callback`. The proxy's port may be known only once it
 * listens (port 0), so an http loopback redirect URI is registered as a native client's (RFC 8252
 * 7.3: any port matches).
 */
export function sandboxSso(config: AppConfig): SandboxSso | undefined {
  if (config.sso.oidc !== undefined || !config.sandbox.ssoLogin) return undefined;
  const clientSecret = randomSecret();
  const redirectUri = `${expectedPublicUrl(config)}${SSO_PATHS.callback}`;
  const parsed = new URL(redirectUri);
  const native = parsed.protocol === 'http:' && LOOPBACK.has(parsed.hostname);
  // Any loopback name, any port: the listen URL may say 127.0.0.1 where the config says localhost.
  // The path stays: a legacy.publicUrl with a path (behind a reverse proxy) is in the callback's.
  const redirectUris = native
    ? [...LOOPBACK].map((name) => `http://${name}${parsed.pathname}`)
    : [redirectUri];
  return {
    sandboxOptions: {
      interactiveLogin: 'auto-approve',
      clients: [
        ...DEFAULT_CLIENTS,
        {
          clientId: SANDBOX_SSO_CLIENT_ID,
          clientSecret,
          scopes: [],
          redirectUris,
          authMethod: 'client_secret_basic',
          applicationType: native ? 'native' : 'web',
        },
      ],
    },
    configure: (sandbox) => ({
      ...config,
      sso: {
        ...config.sso,
        oidc: {
          issuer: sandbox.issuer,
          clientId: SANDBOX_SSO_CLIENT_ID,
          clientSecret,
          scopes: ['openid', 'profile'],
          usernameClaim: 'preferred_username',
          loginTtlSeconds: 300,
          redirectUri: undefined,
        },
      },
    }),
  };
}
