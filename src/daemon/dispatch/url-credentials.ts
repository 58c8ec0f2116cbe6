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

/** Whether a stored URL still shows its credentials in clear (written before they were masked). */
export function showsCredentials(url: string | null): url is string {
  return url !== null && maskCredentials(url) !== url;
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

/**
 * Shorter values are not searched for: too short to be a secret worth the
 * name, and masking every `2` of `?v=2` would leave an answer unreadable.
 */
const SHORTEST_SECRET = 3;
/** A response excerpt is cut at 2 KiB: a secret cut there leaves this much of its beginning or more at the end. */
const SHORTEST_CUT = 4;

/**
 * Every form in which a subscriber may echo the credentials of its
 * subscription: the user information (as in the URL, decoded, and as the
 * HTTP Basic token it is sent as), the query string (whole, and each value as
 * in the URL and decoded), and the signing secrets (`whsec_…` and the base64
 * key after it), each also as escaped inside a JSON string. Longest first, so
 * that a secret inside another is not masked first.
 */
export function credentialsOf(url: string | null, signingSecrets: readonly string[]): string[] {
  const found = new Set<string>();
  const add = (value: string) => {
    found.add(value);
    found.add(decodeSafely(value));
  };
  const parsed = url !== null && URL.canParse(url) ? new URL(url) : null;
  if (parsed) {
    add(parsed.username);
    add(parsed.password);
    if (parsed.username !== '' || parsed.password !== '') {
      found.add(Buffer.from(`${decodeSafely(parsed.username)}:${decodeSafely(parsed.password)}`).toString('base64'));
    }
    const query = parsed.search.slice(1);
    add(query);
    for (const pair of query.split('&')) add(pair.slice(pair.indexOf('=') + 1));
    for (const value of parsed.searchParams.values()) found.add(value);
  }
  for (const secret of signingSecrets) {
    found.add(secret);
    found.add(secret.replace(/^whsec_/, ''));
  }
  for (const value of [...found]) found.add(JSON.stringify(value).slice(1, -1));
  return [...found].filter((value) => value.length >= SHORTEST_SECRET).sort((a, b) => b.length - a.length);
}

/** `text` with every one of `secrets` (longest first) replaced by `****`, and the beginning of one cut off at its end. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of secrets) redacted = redacted.replaceAll(secret, MASK);
  for (const secret of secrets) {
    const cut = cutSecretAt(redacted, secret);
    if (cut !== -1) return `${redacted.slice(0, cut)}${MASK}`;
  }
  return redacted;
}

/**
 * Where the longest beginning of `secret` (SHORTEST_CUT characters or more,
 * not the whole) that ends `text` starts in it; -1 if none does. Only where
 * the secret's first characters occur near the end is compared further: this
 * runs over every header and excerpt a subscriber answers.
 */
function cutSecretAt(text: string, secret: string): number {
  if (secret.length <= SHORTEST_CUT) return -1;
  const start = secret.slice(0, SHORTEST_CUT);
  for (let at = text.indexOf(start, Math.max(0, text.length - secret.length + 1)); at !== -1; at = text.indexOf(start, at + 1)) {
    if (secret.startsWith(text.slice(at))) return at;
  }
  return -1;
}

function decodeSafely(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
