import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Where a subscriber may not be under --deny-private-targets: every block of
 * the IANA Special-Purpose Address Registries (IPv4 and IPv6) that is not
 * globally reachable ("Globally Reachable" False or N/A), multicast, and the
 * IPv6 forms that embed an IPv4 address, which could lead to a private one.
 * Each entry names its registry entry (its RFC). Where a refused block holds
 * smaller entries the registry marks reachable (the anycast addresses of
 * 192.0.0.0/24 and 2001::/23, AS112, AMT, ORCHIDv2, drone ids), the whole block
 * is refused: no subscriber lives at those. An IPv4-mapped address
 * (::ffff:0:0/96, RFC 4291) is a connection to its IPv4 address: BlockList
 * judges it by the IPv4 entries (a ::ffff:0:0/96 entry here would refuse every
 * IPv4 address, which BlockList also checks as mapped).
 */
const NON_PUBLIC_RANGES: ReadonlyArray<readonly [network: string, prefix: number]> = [
  // IPv4 Special-Purpose Address Registry
  ['0.0.0.0', 8], // "This network" (RFC 791), with 0.0.0.0/32 "This host on this network"
  ['10.0.0.0', 8], // Private-Use (RFC 1918)
  ['100.64.0.0', 10], // Shared Address Space (RFC 6598)
  ['127.0.0.0', 8], // Loopback (RFC 1122)
  ['169.254.0.0', 16], // Link Local (RFC 3927)
  ['172.16.0.0', 12], // Private-Use (RFC 1918)
  ['192.0.0.0', 24], // IETF Protocol Assignments (RFC 6890): Service Continuity Prefix, dummy address, NAT64/DNS64 discovery
  ['192.0.2.0', 24], // Documentation, TEST-NET-1 (RFC 5737)
  ['192.88.99.0', 24], // Deprecated, 6to4 Relay Anycast (RFC 7526)
  ['192.168.0.0', 16], // Private-Use (RFC 1918)
  ['198.18.0.0', 15], // Benchmarking (RFC 2544)
  ['198.51.100.0', 24], // Documentation, TEST-NET-2 (RFC 5737)
  ['203.0.113.0', 24], // Documentation, TEST-NET-3 (RFC 5737)
  ['224.0.0.0', 4], // Multicast (RFC 5771, the IPv4 Multicast Address Space Registry)
  ['240.0.0.0', 4], // Reserved (RFC 1112), with 255.255.255.255/32 Limited Broadcast (RFC 919)
  // IPv6 Special-Purpose Address Registry
  ['::', 96], // IPv4-compatible, deprecated (RFC 4291), with ::/128 Unspecified and ::1/128 Loopback
  ['::ffff:0:0:0', 96], // IPv4-translated (RFC 2765), not in the registry: embeds an IPv4 address
  ['64:ff9b::', 96], // IPv4-IPv6 Translat. (RFC 6052): reachable, but a NAT64 takes it to any IPv4 address, private ones too
  ['64:ff9b:1::', 48], // IPv4-IPv6 Translat., local use (RFC 8215)
  ['100::', 64], // Discard-Only Address Block (RFC 6666)
  ['100:0:0:1::', 64], // Dummy IPv6 Prefix (RFC 9780)
  ['2001::', 23], // IETF Protocol Assignments (RFC 2928), with TEREDO 2001::/32 and Benchmarking 2001:2::/48
  ['2001:db8::', 32], // Documentation (RFC 3849)
  ['2002::', 16], // 6to4 (RFC 3056): embeds an IPv4 address
  ['3fff::', 20], // Documentation (RFC 9637)
  ['5f00::', 16], // Segment Routing (SRv6) SIDs (RFC 9602)
  ['fc00::', 7], // Unique-Local (RFC 4193)
  ['fe80::', 10], // Link-Local Unicast (RFC 4291)
  ['fec0::', 10], // Site-local, deprecated (RFC 3879): gone from the registry, still private where used
  ['ff00::', 8], // Multicast (RFC 4291)
];

const NON_PUBLIC = new BlockList();
for (const [network, prefix] of NON_PUBLIC_RANGES) NON_PUBLIC.addSubnet(network, prefix, isIP(network) === 4 ? 'ipv4' : 'ipv6');

/** Whether an IP address (IPv4, or IPv6 without brackets) is one a subscriber may not be at; false for anything else. */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  return family === 0 ? false : NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class PrivateTargetError extends Error {
  readonly code = 'EPRIVATETARGET';
  constructor(host: string) {
    super(`${host} is not a globally reachable address (loopback, private, link-local, documentation or another special-purpose range), refused by --deny-private-targets`);
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
