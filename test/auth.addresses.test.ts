// The source-address resolver without HTTP: how single addresses and X-Forwarded-For entries are
// parsed (IPv6, IPv4-mapped, ip:port, [v6]:port, garbage) and which entry becomes the client,
// also when the trusted proxy itself connects over IPv6.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clientAddressResolver,
  compileRanges,
  formatAddress,
  type IpAddress,
  normalizeRange,
  parseAddress,
  throttleSubject,
} from '../src/auth/addresses.js';

/** The address as text, or undefined, so assertions read like the table in docs/auth.md. */
function text(address: IpAddress | undefined): string | undefined {
  return address === undefined ? undefined : formatAddress(address);
}

describe('parseAddress', () => {
  it('accepts plain IPv4 and IPv6, trimmed, IPv6 in RFC 5952 form', () => {
    assert.equal(text(parseAddress('198.51.100.7')), '198.51.100.7');
    assert.equal(text(parseAddress(' \t198.51.100.7 ')), '198.51.100.7');
    assert.equal(text(parseAddress('2001:db8::7')), '2001:db8::7');
    assert.equal(text(parseAddress('2001:DB8:0:0:0:0:0:7')), '2001:db8::7');
    assert.equal(text(parseAddress('::1')), '::1');
    assert.equal(parseAddress('2001:db8::7')?.kind(), 'ipv6');
  });

  it('turns IPv4-mapped IPv6 (dotted or hex, bare or bracketed) into IPv4', () => {
    for (const entry of [
      '::ffff:198.51.100.7',
      '::FFFF:198.51.100.7',
      '::ffff:c633:6407',
      '0:0:0:0:0:ffff:198.51.100.7',
      '[::ffff:198.51.100.7]',
      '[::ffff:198.51.100.7]:443',
    ]) {
      const address = parseAddress(entry);
      assert.equal(address?.kind(), 'ipv4', entry);
      assert.equal(text(address), '198.51.100.7', entry);
    }
  });

  it('keeps the deprecated IPv4-compatible form ::a.b.c.d IPv6, as it is: never the IPv4 address', () => {
    for (const [entry, expected] of [
      ['::127.0.0.9', '::7f00:9'],
      ['[::127.0.0.9]:443', '::7f00:9'],
      ['::0.0.0.1', '::1'],
      ['::127.0.0.9%eth0', '::7f00:9%eth0'],
    ]) {
      const address = parseAddress(entry);
      assert.equal(address?.kind(), 'ipv6', entry);
      assert.equal(text(address), expected, entry);
    }
    assert.equal(compileRanges(['127.0.0.9/32']).contains(parseAddress('::127.0.0.9')), false);
    assert.equal(compileRanges(['127.0.0.9/32']).contains(parseAddress('::127.0.0.9%eth0')), false);
    assert.notEqual(throttleSubject(parseAddress('::127.0.0.9')), throttleSubject(parseAddress('127.0.0.9')));
    assert.equal(normalizeRange('::10.0.0.0/104'), '::a00:0/104', 'an IPv6 range, not 10.0.0.0/8');
    assert.equal(normalizeRange('::ffff:10.0.0.0/104'), '10.0.0.0/8');
  });

  it('strips a port from ip:port and [v6]:port', () => {
    assert.equal(text(parseAddress('198.51.100.7:5040')), '198.51.100.7');
    assert.equal(text(parseAddress('198.51.100.7:0')), '198.51.100.7');
    assert.equal(text(parseAddress('198.51.100.7:65535')), '198.51.100.7');
    assert.equal(text(parseAddress('[2001:db8::7]:443')), '2001:db8::7');
    assert.equal(text(parseAddress('[2001:db8::7]')), '2001:db8::7');
    assert.equal(text(parseAddress('[::1]:8080')), '::1');
  });

  it('reads an unbracketed v6 with a trailing group as an address, never as address and port', () => {
    // 2001:db8::7:443 is itself a valid IPv6 address; a port needs brackets ([2001:db8::7]:443).
    assert.equal(text(parseAddress('2001:db8::7:443')), '2001:db8::7:443');
  });

  it('rejects garbage, non-decimal IPv4, out-of-range ports and malformed brackets', () => {
    for (const entry of [
      '',
      ' ',
      'unknown',
      'not-an-address',
      '_hidden',
      'for=198.51.100.7',
      '"198.51.100.7"',
      '198.51.100.7/32',
      '10.1',
      '127.1',
      '0x7f.0.0.1',
      '010.0.0.1',
      '256.0.0.1',
      '1.2.3.4.5',
      '198.51.100.7:',
      '198.51.100.7:abc',
      '198.51.100.7:65536',
      '198.51.100.7:99999',
      '198.51.100.7:123456',
      '1::2::3',
      '2001:db8::7]',
      '[2001:db8::7',
      '[2001:db8::7]:',
      '[2001:db8::7]:65536',
      '[2001:db8::7]443',
      '[198.51.100.7]',
      '[198.51.100.7]:443',
      '[]',
      '[garbage]:80',
    ]) {
      assert.equal(parseAddress(entry), undefined, JSON.stringify(entry));
    }
  });
});

describe('throttleSubject', () => {
  it('counts IPv4 by address, IPv6 by /64, mapped IPv6 as IPv4, unknown as one bucket', () => {
    assert.equal(throttleSubject(parseAddress('198.51.100.7:5040')), '198.51.100.7');
    assert.equal(throttleSubject(parseAddress('[2001:db8:1:2:aaaa::7]:443')), '2001:db8:1:2::/64');
    assert.equal(throttleSubject(parseAddress('2001:db8:1:2:ffff::1')), '2001:db8:1:2::/64');
    assert.equal(throttleSubject(parseAddress('::ffff:198.51.100.7')), '198.51.100.7');
    assert.equal(throttleSubject(undefined), 'unknown');
  });
});

describe('compileRanges', () => {
  it('matches IPv4-mapped clients against IPv4 ranges and mapped ranges against IPv4 clients', () => {
    const ranges = compileRanges(['198.51.100.0/24', '::ffff:10.20.0.0/120', '2001:db8::/32']);
    assert.equal(ranges.contains(parseAddress('::ffff:198.51.100.7')), true);
    assert.equal(ranges.contains(parseAddress('10.20.0.9')), true);
    assert.equal(ranges.contains(parseAddress('10.20.1.9')), false);
    assert.equal(ranges.contains(parseAddress('[2001:db8::7]:443')), true);
    assert.equal(ranges.contains(parseAddress('2001:db9::7')), false);
    assert.equal(ranges.contains(undefined), false);
  });

  it('keeps an IPv4-compatible range (::a.b.c.d/n, as in the configuration) IPv6: it matches no IPv4 peer', () => {
    // Read by ipaddr.js alone as the mapped ::ffff:127.0.0.1, so as IPv4: trustedProxies
    // ["::127.0.0.1/128"] believed X-Forwarded-For from 127.0.0.1, and metrics.ranges
    // ["::127.0.0.0/104"] let IPv4 loopback read the metrics.
    for (const range of ['::127.0.0.1/128', '::127.0.0.0/104', '::127.0.0.1']) {
      const ranges = compileRanges([range]);
      assert.equal(ranges.contains(parseAddress('127.0.0.1')), false, range);
      assert.equal(ranges.contains(parseAddress('::ffff:127.0.0.1')), false, range);
      assert.equal(ranges.contains(parseAddress('::127.0.0.1')), true, range);
    }
    const resolve = clientAddressResolver(['::127.0.0.1/128']);
    assert.equal(text(resolve('127.0.0.1', '198.51.100.7')), '127.0.0.1', 'an IPv4 peer is no trusted proxy');
  });
});

describe('clientAddressResolver', () => {
  // An IPv4 proxy network, the IPv6 loopback, and an IPv6 proxy network.
  const resolve = clientAddressResolver(['10.20.0.0/24', '::1/128', 'fd00:1::/64']);
  const client = (peer: string | undefined, xff?: string) => text(resolve(peer, xff));

  it('uses the peer when it is not a trusted proxy, whatever the header says', () => {
    assert.equal(client('192.0.2.10', '198.51.100.7'), '192.0.2.10');
    assert.equal(client('2001:db8::99', '198.51.100.7'), '2001:db8::99');
    assert.equal(client('::ffff:192.0.2.10', '198.51.100.7'), '192.0.2.10');
    assert.equal(client('::2', '198.51.100.7'), '::2');
  });

  it('fails closed without a usable peer', () => {
    assert.equal(client(undefined, '198.51.100.7'), undefined);
    assert.equal(client('', '198.51.100.7'), undefined);
    assert.equal(client('garbage', '198.51.100.7'), undefined);
  });

  it('believes a trusted proxy connecting over IPv6 (::1 and a ULA /64)', () => {
    assert.equal(client('::1', '198.51.100.7'), '198.51.100.7');
    assert.equal(client('::1', '2001:db8::7'), '2001:db8::7');
    assert.equal(client('::1', '[2001:db8::7]:443'), '2001:db8::7');
    assert.equal(client('fd00:1::5', 'fd00:1::6, 2001:db8::7'), '2001:db8::7');
    assert.equal(client('fd00:1::5', '2001:db8::7, fd00:1::6'), '2001:db8::7');
  });

  it('believes a trusted IPv4 proxy seen as an IPv4-mapped peer on a dual-stack socket', () => {
    assert.equal(client('::ffff:10.20.0.5', '198.51.100.7:5040'), '198.51.100.7');
  });

  it('reads IPv6, IPv4-mapped, ip:port and [v6]:port entries', () => {
    assert.equal(client('10.20.0.5', '2001:db8::7'), '2001:db8::7');
    assert.equal(client('10.20.0.5', '::ffff:198.51.100.7'), '198.51.100.7');
    assert.equal(resolve('10.20.0.5', '::ffff:198.51.100.7')?.kind(), 'ipv4');
    assert.equal(client('10.20.0.5', '198.51.100.7:5040'), '198.51.100.7');
    assert.equal(client('10.20.0.5', '[2001:db8::7]:443'), '2001:db8::7');
    assert.equal(client('10.20.0.5', '[::ffff:198.51.100.7]:443'), '198.51.100.7');
  });

  it('skips trusted proxies from the right, in any notation', () => {
    assert.equal(client('10.20.0.5', '198.51.100.7, 10.20.0.9:1234'), '198.51.100.7');
    assert.equal(client('10.20.0.5', '198.51.100.7, ::ffff:10.20.0.9'), '198.51.100.7');
    assert.equal(client('10.20.0.5', '198.51.100.7, [::1]:80, 10.20.0.9'), '198.51.100.7');
    assert.equal(client('::1', '2001:db8::7, [fd00:1::6]:443'), '2001:db8::7');
  });

  it('takes the rightmost untrusted entry: forged entries on its left are never used', () => {
    assert.equal(client('10.20.0.5', '10.1.1.1, 198.51.100.7'), '198.51.100.7');
    assert.equal(client('10.20.0.5', '::1, 198.51.100.7'), '198.51.100.7');
    // Garbage the client wrote on the left does not matter either.
    assert.equal(client('10.20.0.5', 'garbage, 198.51.100.7'), '198.51.100.7');
    assert.equal(client('::1', 'unknown, [2001:db8::7]:443'), '2001:db8::7');
  });

  it('fails closed on garbage where the client should be (or between trusted proxies)', () => {
    assert.equal(client('10.20.0.5', '198.51.100.7, garbage'), undefined);
    assert.equal(client('10.20.0.5', '198.51.100.7, garbage, 10.20.0.9'), undefined);
    assert.equal(client('10.20.0.5', '198.51.100.7:99999'), undefined);
    assert.equal(client('::1', '[198.51.100.7]:443'), undefined);
    assert.equal(client('::1', 'unknown'), undefined);
  });

  it('ignores empty entries and uses the peer when the header is missing or empty', () => {
    assert.equal(client('10.20.0.5', '198.51.100.7,, ,10.20.0.9'), '198.51.100.7');
    assert.equal(client('10.20.0.5', undefined), '10.20.0.5');
    assert.equal(client('10.20.0.5', ''), '10.20.0.5');
    assert.equal(client('10.20.0.5', ' , '), '10.20.0.5');
    assert.equal(client('::1', undefined), '::1');
  });

  it('takes the leftmost entry when every hop is a trusted proxy', () => {
    assert.equal(client('10.20.0.5', '10.20.0.7, 10.20.0.9'), '10.20.0.7');
    assert.equal(client('::1', 'fd00:1::6, 10.20.0.9'), 'fd00:1::6');
  });

  it('believes nothing when no proxy is trusted', () => {
    const none = clientAddressResolver([]);
    assert.equal(text(none('127.0.0.1', '198.51.100.7')), '127.0.0.1');
    assert.equal(text(none('::1', '198.51.100.7')), '::1');
  });
});
