/**
 * Subscriber URLs may carry credentials: user information
 * (`https://user:pass@host/...`) and a query string (`?api_key=...`), which
 * services commonly use for keys. Such a URL is stored sealed, and everything
 * shown or written elsewhere (answers, dead letters, the outbox, log lines,
 * error messages) carries the masked form `https://****@host/path?****`.
 */

const MASK = '****';

/** Whether the URL has user information or a query string. */
export function hasCredentials(url: string): boolean {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  return parsed !== null && (parsed.username !== '' || parsed.password !== '' || parsed.search !== '');
}

/** `https://user:pass@host/path?key=v` → `https://****@host/path?****`; a URL without credentials is returned as is. */
export function maskCredentials(url: string): string {
  if (!hasCredentials(url)) return url;
  const parsed = new URL(url);
  const userInfo = parsed.username !== '' || parsed.password !== '' ? `${MASK}@` : '';
  const query = parsed.search !== '' ? `?${MASK}` : '';
  return `${parsed.protocol}//${userInfo}${parsed.host}${parsed.pathname}${query}${parsed.hash}`;
}

/** Masks the user information and the query string of every URL in a free text, such as an error message. */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi, (_, scheme: string) => `${scheme}${MASK}@`)
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s?#"'<>]*)\?[^\s#"'<>]+/gi, (_, beforeQuery: string) => `${beforeQuery}?${MASK}`);
}
