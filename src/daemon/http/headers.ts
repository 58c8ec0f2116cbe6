/**
 * The header policy of the web console (docs/security.md), in one place. The API's
 * own headers (nosniff, no-store) are written with its envelope.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** A year: Vite names built assets by the hash of their contents, so a name never changes meaning. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

export function consoleHeaders(kind: 'hashed-asset' | 'page'): Record<string, string> {
  return {
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    // The page (and any unhashed file) is revalidated on every load, so a new build shows at once.
    'cache-control': kind === 'hashed-asset' ? IMMUTABLE : 'no-cache',
  };
}
