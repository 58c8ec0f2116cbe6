/**
 * Headers as delivery records keep them: names lowercased, each value cut at
 * HEADER_VALUE_CHARS, and no more than a given number of bytes in all, so
 * that whatever a subscriber answers, a record stays small.
 */

/** A longer header value is kept cut, ending in `…`. */
export const HEADER_VALUE_CHARS = 512;
/** An answer's headers are kept in the order they came up to this many bytes (names and values); the rest are left out. */
export const RESPONSE_HEADER_BYTES = 2048;
/** A request's headers are the daemon's own, with a URL of at most 2,048 characters: well under this, bounded all the same. */
export const REQUEST_HEADER_BYTES = 4096;

const CUT_MARK = '…';

/** `entries` as a record's headers: repeated names joined by `, `, values cut, and headers past `maxBytes` left out. */
export function recordedHeaders(entries: Iterable<readonly [name: string, value: string]>, maxBytes: number): Record<string, string> {
  const kept = new Map<string, string>();
  let bytes = 0;
  for (const [rawName, value] of entries) {
    const name = rawName.toLowerCase();
    const previous = kept.get(name);
    const recorded = cut(previous === undefined ? value : `${previous}, ${value}`);
    const added = previous === undefined ? Buffer.byteLength(name) + Buffer.byteLength(recorded) : Buffer.byteLength(recorded) - Buffer.byteLength(previous);
    if (bytes + added > maxBytes) break;
    bytes += added;
    kept.set(name, recorded);
  }
  // fromEntries defines own properties, so that a header named `__proto__` is kept as one.
  return Object.fromEntries(kept);
}

const cut = (value: string) => (value.length > HEADER_VALUE_CHARS ? `${value.slice(0, HEADER_VALUE_CHARS)}${CUT_MARK}` : value);

/** The credentials of an Authorization header as `****`, its scheme kept (`Basic ****`). */
export function maskAuthorization(value: string): string {
  const scheme = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(?= )/.exec(value)?.[0];
  return scheme === undefined ? '****' : `${scheme} ****`;
}

/** Headers whose value is a credential: never recorded in clear. */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization']);
