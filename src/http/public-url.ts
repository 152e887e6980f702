import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';
import type { AppConfig } from '../config/load.js';
import type { AppEnv } from '../services.js';

/** `legacy.publicUrl` without its trailing slashes, when it is configured. */
export function configuredPublicUrl(config: AppConfig): string | undefined {
  return config.legacy.publicUrl?.replace(/\/+$/, '');
}

/**
 * `scheme://host[:port]` of the proxy's server (`tls`: https): an IPv6 address in brackets, its
 * zone (`fe80::1%eth0`) written `%25` as a URL needs it (RFC 6874); without a port when undefined.
 */
export function serverOrigin(tls: boolean, host: string, port?: number): string {
  const name = host.includes(':') ? `[${host.replace('%', '%25')}]` : host;
  return `${tls ? 'https' : 'http'}://${name}${port === undefined ? '' : `:${port}`}`;
}

/** The public URL the proxy will have, as far as it is known before it listens. */
export function expectedPublicUrl(config: AppConfig): string {
  const { host, port, tls } = config.server;
  return configuredPublicUrl(config) ?? serverOrigin(tls !== undefined, host, port === 0 ? undefined : port);
}

/**
 * The URL browsers reach the proxy at, for the links of single sign-on (`return_to`, the landing
 * page, the OIDC callback): the services' public URL (`legacy.publicUrl`, else the configured
 * listen address when its port is fixed); with port 0 the local address of the connection the
 * request came in on, which is where the proxy listens. Never the request's `Host` header: these
 * links are handed on to a browser, and one built from a forged Host would send its SSO token to
 * a host of the sender's choosing. Outside a Node server (shadow mode's in-process translation)
 * there is no connection: the listen address as configured.
 */
export function publicUrlOf(c: Context<AppEnv>): string {
  const services = c.get('services');
  return services.publicUrl ?? connectionUrl(c, services.config) ?? expectedPublicUrl(services.config);
}

/** `scheme://local-address:local-port` of the request's connection, or undefined without one. */
function connectionUrl(c: Context<AppEnv>, config: AppConfig): string | undefined {
  const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket;
  const address = socket?.localAddress;
  const port = socket?.localPort;
  if (!address || !port) return undefined;
  // A dual-stack socket reports IPv4 clients' connections as IPv4-mapped IPv6 (`::ffff:127.0.0.1`).
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return serverOrigin(config.server.tls !== undefined, mapped?.[1] ?? address, port);
}

/**
 * The origin of the `Location` headers of the legacy API (a create's, a passed-through answer's):
 * `legacy.publicUrl` when set, else the origin the client called, its `Host` header included, as
 * the legacy server built them. A legacy integration gets back the name it used (behind a
 * reverse proxy that passes `Host` on: the public name, where the listen address would be an
 * internal one, over TLS one the certificate does not name). A forged `Host` misleads only the
 * client that sent it: the answer to its own authenticated write goes to no one else. Set
 * `legacy.publicUrl` to pin it.
 */
export function legacyLinkOrigin(c: Context<AppEnv>): string {
  return configuredPublicUrl(c.get('services').config) ?? new URL(c.req.url).origin;
}
