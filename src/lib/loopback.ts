import ipaddr from 'ipaddr.js';

/** True for `localhost` and loopback IP addresses (127.0.0.0/8, ::1, IPv4-mapped loopback). */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (!ipaddr.isValid(bare)) return false;
  return ipaddr.process(bare).range() === 'loopback';
}
