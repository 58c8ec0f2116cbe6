import { isIP } from 'node:net';

/** Names of the loopback interface a Host header may use, with any port. */
const LOOPBACK_NAMES = ['127.0.0.1', '[::1]', 'localhost'];

/** `name` or `name:port`, the name an IPv6 address in brackets or anything without a colon. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[^[\]:]+)(?::\d{1,5})?$/;

const isLoopbackAddress = (address: string) =>
  isIP(address) !== 0 && (address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.'));

/**
 * Which Host headers the daemon answers (DNS rebinding): a page on a name the
 * attacker controls, pointed at 127.0.0.1 after loading, reaches the daemon as
 * that same origin, but its requests still name the attacker's host. On a
 * loopback address only loopback names and `--allowed-hosts` pass; on another
 * address the check is on only once `--allowed-hosts` is given. A request
 * without Host (HTTP/1.0) names nothing that can be checked, so it fails too.
 * Null: no check.
 */
export function hostCheck(listeningAddress: string, allowedHosts: readonly string[]): ((host: string | undefined) => boolean) | null {
  if (allowedHosts.length === 0 && !isLoopbackAddress(listeningAddress)) return null;
  const accepted = new Set([...LOOPBACK_NAMES, ...allowedHosts]);
  // Clients name the same host request after request: the last verdict is kept.
  let lastHost: string | undefined;
  let lastVerdict = false;
  return (host) => {
    if (host === undefined) return false;
    if (host === lastHost) return lastVerdict;
    const name = HOST_HEADER.exec(host.toLowerCase())?.[1];
    lastHost = host;
    lastVerdict = name !== undefined && accepted.has(name);
    return lastVerdict;
  };
}
