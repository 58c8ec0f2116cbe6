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

/**
 * Headers as a record keeps them, added in the order they came: repeated
 * names joined by `, `, values cut, and headers past `maxBytes` left out.
 * A plain object built in place: this runs twice for every attempt.
 */
export class HeaderRecorder {
  readonly headers: Record<string, string> = {};
  private bytes = 0;
  private full = false;

  constructor(private readonly maxBytes: number) {}

  /** False once a header did not fit: it and every later one are left out. */
  add(rawName: string, value: string): boolean {
    if (this.full) return false;
    const name = rawName.toLowerCase();
    const previous = Object.hasOwn(this.headers, name) ? this.headers[name] : undefined;
    const recorded = cut(previous === undefined ? value : `${previous}, ${value}`);
    const added = previous === undefined ? Buffer.byteLength(name) + Buffer.byteLength(recorded) : Buffer.byteLength(recorded) - Buffer.byteLength(previous!);
    if (this.bytes + added > this.maxBytes) {
      this.full = true;
      return false;
    }
    this.bytes += added;
    setHeader(this.headers, name, recorded);
    return true;
  }
}

/** Sets a header on a plain object; a header named `__proto__` is defined as one, not taken as the object's prototype. */
export function setHeader(headers: Record<string, string>, name: string, value: string): void {
  if (name === '__proto__') Object.defineProperty(headers, name, { value, enumerable: true, writable: true, configurable: true });
  else headers[name] = value;
}

const cut = (value: string) => (value.length > HEADER_VALUE_CHARS ? `${value.slice(0, HEADER_VALUE_CHARS)}${CUT_MARK}` : value);

/** The credentials of an Authorization header as `****`, its scheme kept (`Basic ****`). */
export function maskAuthorization(value: string): string {
  const scheme = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(?= )/.exec(value)?.[0];
  return scheme === undefined ? '****' : `${scheme} ****`;
}

/** Headers whose value is a credential: never recorded in clear. */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization']);
