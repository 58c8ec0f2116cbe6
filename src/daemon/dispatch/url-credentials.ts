/**
 * Subscriber URLs may carry credentials (`https://user:pass@host/...`). They
 * are stored sealed, and everything shown or written elsewhere (answers, dead
 * letters, the outbox, log lines, error messages) carries the masked form.
 */

const MASK = '****';

/** Whether the URL has user information. */
export function hasCredentials(url: string): boolean {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  return parsed !== null && (parsed.username !== '' || parsed.password !== '');
}

/** `https://user:pass@host/path` → `https://****@host/path`; a URL without credentials is returned as is. */
export function maskCredentials(url: string): string {
  if (!hasCredentials(url)) return url;
  const parsed = new URL(url);
  return `${parsed.protocol}//${MASK}@${parsed.host}${parsed.pathname}${parsed.search}${parsed.hash}`;
}

/** Masks the user information of every URL in a free text, such as an error message. */
export function redactCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi, (_, scheme: string) => `${scheme}${MASK}@`);
}
