import type { IncomingMessage } from 'node:http';

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface CrossSitePolicy {
  /** `--cors-origin`: other origins the operator trusts. */
  corsOrigins: readonly string[];
  /** `--secure-cookies`: TLS terminates in front of the daemon, so browsers see it at https. */
  secureCookies: boolean;
}

/**
 * A write that a browser sent from another site (CSRF). Browsers attach the
 * session cookie to such requests on their own, so one that names another site
 * in `Sec-Fetch-Site` or `Origin` is refused. Bearer tokens are not sent by
 * browsers on their own, and requests without either header do not come from a
 * browser page (or from one too old to tell); both pass.
 */
export function isCrossSiteWrite(req: IncomingMessage, policy: CrossSitePolicy): boolean {
  if (!UNSAFE_METHODS.has(req.method ?? '')) return false;
  if (/^bearer /i.test(req.headers.authorization ?? '')) return false;
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  return origin !== ownOrigin(req, policy.secureCookies) && !policy.corsOrigins.includes(origin);
}

/**
 * The origin the browser reached the daemon at: the Host it asked for, at
 * https when a proxy says so (`X-Forwarded-Proto`; a page cannot send that
 * header cross-site) or the daemon is configured for TLS in front, else http.
 */
function ownOrigin(req: IncomingMessage, secureCookies: boolean): string | null {
  const host = req.headers.host;
  if (!host) return null;
  const forwarded = String(req.headers['x-forwarded-proto'] ?? '').split(',', 1)[0]!.trim().toLowerCase();
  const scheme = forwarded === 'http' || forwarded === 'https' ? forwarded : secureCookies ? 'https' : 'http';
  try {
    return new URL(`${scheme}://${host}`).origin;
  } catch {
    return null;
  }
}
