import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Ranges a subscriber URL may not reach under --deny-private-targets: loopback,
 * private, link-local, shared (CGNAT), benchmarking, multicast, reserved and
 * broadcast, and the IPv6 forms that embed or translate to IPv4 addresses
 * (IPv4-compatible, NAT64, 6to4, IPv4-translated). IPv4-mapped addresses
 * (::ffff:a.b.c.d) are checked against the IPv4 ranges by BlockList itself.
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
NON_PUBLIC.addAddress('255.255.255.255', 'ipv4');
for (const [network, prefix] of [
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

export function isNonPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return NON_PUBLIC.check(mapped, 'ipv4');
  const family = isIP(address);
  return family === 0 ? false : NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class PrivateTargetError extends Error {
  readonly code = 'EPRIVATETARGET';
  constructor(host: string) {
    super(`${host} is a loopback, private or link-local address, refused by --deny-private-targets`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * dns.lookup for outgoing connections that refuses non-public answers. It is
 * consulted at every connection, so a name that resolves elsewhere after the
 * subscription was checked (DNS rebinding) is still refused.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    if (addresses.some((entry) => isNonPublicAddress(entry.address))) return callback(new PrivateTargetError(hostname), []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}

/** The host of an http(s) URL, without IPv6 brackets. */
export const hostOf = (url: string) => new URL(url).hostname.replace(/^\[|\]$/g, '');

/**
 * For a URL about to be subscribed: its host, or every address its name
 * resolves to now, must be public. A name that does not resolve yet is let
 * through: delivery checks again, at every connection.
 */
export async function assertPublicTarget(url: string): Promise<void> {
  const host = hostOf(url);
  if (isIP(host)) {
    if (isNonPublicAddress(host)) throw new PrivateTargetError(host);
    return;
  }
  await new Promise<void>((resolve, reject) =>
    publicOnlyLookup(host, {}, (error) => (error instanceof PrivateTargetError ? reject(error) : resolve())),
  );
}
