import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';

/** A parsed IPv4 or IPv6 address. IPv4-mapped IPv6 addresses are always turned into IPv4. */
export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

type Cidr = [IpAddress, number];

/**
 * Parses one address strictly: IPv4 only in four-part decimal (no `127.1`, no hex), IPv6 with an
 * optional zone. Accepts `[v6]`, `[v6]:port` and `v4:port` (port 0..65535) as some proxies write
 * them; brackets only around IPv6. An unbracketed IPv6 is never split into address and port.
 * IPv4-mapped IPv6 (`::ffff:10.0.0.1`) becomes IPv4 so it matches IPv4 ranges. Undefined when not
 * an address.
 */
export function parseAddress(text: string): IpAddress | undefined {
  const value = text.trim();
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(value);
  if (bracketed) {
    const [, inner = '', port] = bracketed;
    if (!validPort(port) || !ipaddr.IPv6.isValid(inner)) return undefined;
    return unmap(parseIPv6(inner));
  }
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(value);
  const bare = withPort ? (validPort(withPort[2]) ? (withPort[1] ?? '') : '') : value;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (ipaddr.IPv6.isValid(bare)) return unmap(parseIPv6(bare));
  return undefined;
}

function validPort(port: string | undefined): boolean {
  return port === undefined || Number(port) <= 65535;
}

/** The text form used in logs, throttle keys and messages (RFC 5952 for IPv6). */
export function formatAddress(address: IpAddress): string {
  return address.kind() === 'ipv6' ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}

/**
 * The address as throttle counters see it: IPv4 as is, IPv6 as its /64 network (`2001:db8:1:2::/64`),
 * because one host usually controls a whole /64 and could otherwise rotate addresses to escape.
 */
export function throttleSubject(address: IpAddress | undefined): string {
  if (!address) return 'unknown';
  return address.kind() === 'ipv6'
    ? `${formatAddress(networkAddress(address, 64))}/64`
    : formatAddress(address);
}

/**
 * Validates an API-user range and returns its canonical form: the network address with its prefix
 * (`10.1.2.3/8` → `10.0.0.0/8`); a bare address becomes a single-host range (`/32`, `/128`); an
 * IPv4-mapped IPv6 range becomes the IPv4 range it covers. Throws RangeError saying what is wrong.
 */
export function normalizeRange(text: string): string {
  const value = text.trim();
  const slash = value.indexOf('/');
  const addressText = slash === -1 ? value : value.slice(0, slash);
  const prefixText = slash === -1 ? undefined : value.slice(slash + 1);
  const isV4 = ipaddr.IPv4.isValidFourPartDecimal(addressText);
  if (!isV4 && (!ipaddr.IPv6.isValid(addressText) || addressText.includes('%'))) {
    throw new RangeError(`not a CIDR range: ${JSON.stringify(text)} (e.g. 10.0.0.0/8 or 2001:db8::/32)`);
  }
  const parsed = isV4 ? ipaddr.IPv4.parse(addressText) : parseIPv6(addressText);
  // A mapped IPv6 range such as ::ffff:10.0.0.0/104 is stored as the IPv4 range it covers.
  const mapped = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress();
  const address = mapped ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
  const max = address.kind() === 'ipv4' ? 32 : 128;
  let prefix = max;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText)) {
      throw new RangeError(`not a CIDR range: ${JSON.stringify(text)} (e.g. 10.0.0.0/8 or 2001:db8::/32)`);
    }
    prefix = Number(prefixText);
    if (mapped) {
      if (prefix < 96 || prefix > 128)
        throw new RangeError(`IPv4-mapped range needs a prefix of 96..128: ${JSON.stringify(text)}`);
      prefix -= 96;
    }
    if (prefix > max) throw new RangeError(`prefix /${prefix} is too long for ${addressText}`);
  }
  const network = networkAddress(address, prefix);
  return `${formatAddress(network)}/${prefix}`;
}

/** A precompiled list of ranges; `contains` is what a request runs. */
export interface CompiledRanges {
  readonly ranges: readonly string[];
  contains(address: IpAddress | undefined): boolean;
}

/**
 * Compiles ranges (API-user ranges, `server.trustedProxies`, `metrics.ranges`) once, for matching
 * per request. Each is read as {@link normalizeRange} reads it (the configuration checks them with
 * it): an IPv4-compatible range (`::127.0.0.1/128`) stays IPv6, as an address of that form does.
 * ipaddr.js alone read it as the mapped `::ffff:127.0.0.1` and so as IPv4, which made an IPv6
 * range in the configuration trust IPv4 peers.
 */
export function compileRanges(ranges: readonly string[]): CompiledRanges {
  const cidrs: Cidr[] = ranges.map((range) => ipaddr.parseCIDR(normalizeRange(range)));
  return {
    ranges: [...ranges],
    contains(address) {
      if (!address) return false;
      // ipaddr.js throws when kinds differ; mapped addresses were already turned into IPv4.
      return cidrs.some(
        ([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix),
      );
    },
  };
}

/** Finds the client address of a request from its socket peer and `X-Forwarded-For`. */
export type ClientAddressResolver = (
  peer: string | undefined,
  forwardedFor: string | undefined,
) => IpAddress | undefined;

/**
 * Precompiles `server.trustedProxies` into a resolver: the client is the socket peer, unless the
 * peer is a trusted proxy; then it is the rightmost `X-Forwarded-For` entry that is not a trusted
 * proxy (each proxy appends the address it saw, so entries left of that one are the client's to
 * forge). Headers from untrusted peers are ignored. An unparseable entry where the client should
 * be gives undefined — an unknown address, which no range contains (fail closed).
 */
export function clientAddressResolver(trustedProxies: readonly string[]): ClientAddressResolver {
  const trusted = compileRanges(trustedProxies);
  // Peers are few and come back on every request of their connections: each is parsed and
  // checked against the trusted proxies once.
  const peers = new LRUCache<string, { address: IpAddress | undefined; trusted: boolean }>({ max: 1024 });
  const knownPeer = (peer: string) => {
    let known = peers.get(peer);
    if (known === undefined) {
      const address = parseAddress(peer);
      known = { address, trusted: address !== undefined && trusted.contains(address) };
      peers.set(peer, known);
    }
    return known;
  };
  return (peer, forwardedFor) => {
    const known = peer === undefined ? undefined : knownPeer(peer);
    const peerAddress = known?.address;
    if (!peerAddress || !known.trusted) return peerAddress;
    const entries = (forwardedFor ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    let client: IpAddress = peerAddress;
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = parseAddress(entries[i] ?? '');
      if (!entry) return undefined;
      client = entry;
      if (!trusted.contains(entry)) return entry;
    }
    // Every hop was a trusted proxy: the leftmost one is as close to the client as we can get.
    return client;
  };
}

/**
 * An IPv6 address as ipaddr.js parses it, but for the deprecated IPv4-compatible form `::a.b.c.d`
 * (RFC 4291 2.5.5.1), which it reads as the IPv4-mapped `::ffff:a.b.c.d`: it is `::a.b.c.d`, an
 * IPv6 address that is not the IPv4 one (Node writes such a peer so), with or without a zone
 * (`::a.b.c.d%eth0`). Read as mapped, it matched IPv4 ranges and counted as that IPv4 address.
 */
function parseIPv6(text: string): ipaddr.IPv6 {
  const [, compatible, zone] = /^::(\d{1,3}(?:\.\d{1,3}){3})(?:%(.+))?$/.exec(text) ?? [];
  if (compatible === undefined || !ipaddr.IPv4.isValidFourPartDecimal(compatible))
    return ipaddr.IPv6.parse(text);
  const address = new ipaddr.IPv6([
    0,
    0,
    0,
    0,
    0,
    0,
    ...ipaddr.IPv4.parse(compatible).toIPv4MappedAddress().parts.slice(6),
  ]);
  if (zone !== undefined) address.zoneId = zone;
  return address;
}

function unmap(address: ipaddr.IPv6): IpAddress {
  return address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

function networkAddress(address: IpAddress, prefix: number): IpAddress {
  const bytes = address.toByteArray();
  for (let bit = prefix; bit < bytes.length * 8; bit++) {
    const index = Math.floor(bit / 8);
    bytes[index] = (bytes[index] ?? 0) & ~(0x80 >> (bit % 8));
  }
  return ipaddr.fromByteArray(bytes);
}
