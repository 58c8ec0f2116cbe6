import * as v from 'valibot';

/**
 * Input rules of the API, with the daemon's wording: the daemon validates
 * with them, and a client can check before it sends. Node-free (the console
 * imports them).
 */

/** Extension keys and workspace ids. */
export const SLUG_PATTERN = /^[a-z][a-z0-9-]{1,63}$/;

export const Slug = v.pipe(v.string(), v.regex(SLUG_PATTERN, 'must be 2-64 characters: a lowercase letter, then lowercase letters, digits or hyphens'));

export const EventKey = v.pipe(
  v.string(),
  v.maxLength(255, 'must be at most 255 characters'),
  v.regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/, 'must be two or more dot-separated segments of letters, digits, _ and -'),
);

export const NonEmptyString = (max: number) =>
  v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(max, `must be at most ${max} characters`));

export const HttpUrl = v.pipe(v.string(), v.maxLength(2048), v.url('must be an http(s) URL'), v.regex(/^https?:\/\//i, 'must be an http(s) URL'));

/** SemVer 2.0.0 (semver.org's own expression): no leading `v`, no leading zeros; build metadata allowed. */
const SEMVER_PATTERN =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

export const isStrictSemver = (text: string): boolean => {
  const match = SEMVER_PATTERN.exec(text);
  // Numbers a JavaScript number cannot hold exactly cannot be compared either.
  return match !== null && [match[1], match[2], match[3]].every((part) => Number(part) <= Number.MAX_SAFE_INTEGER);
};

export const SemVer = v.pipe(
  v.string(),
  v.maxLength(256, 'must be at most 256 characters'),
  v.check(isStrictSemver, 'must be a semantic version (SemVer 2.0.0) such as 1.4.0 or 2.0.0-beta.1, without a leading v'),
);

export const Uuid = (message: string) => v.pipe(v.string(), v.uuid(message));

/** Deliberately loose (admin@localhost is valid here); uniqueness is case-insensitive. */
export const Email = v.pipe(
  v.string(),
  v.trim(),
  v.maxLength(254, 'must be at most 254 characters'),
  v.regex(/^[^\s@]+@[^\s@]+$/, 'must be an e-mail address'),
);

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/** bcrypt reads at most 72 bytes; longer passwords would be silently truncated. */
export const NewPassword = v.pipe(
  v.string(),
  v.check((text) => utf8Bytes(text) >= 8, 'must be at least 8 bytes'),
  v.check((text) => utf8Bytes(text) <= 72, 'must be at most 72 bytes (UTF-8)'),
);

export const isPlainObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === 'object' && input !== null && !Array.isArray(input);

/**
 * A JSON object with exactly these fields. valibot's own object schemas accept
 * arrays and ignore unknown keys; this one rejects both, so a typo in a field
 * name is an error instead of a silently ignored value.
 */
export function jsonObject<const TEntries extends v.ObjectEntries>(entries: TEntries) {
  const fields = v.strictObject(entries);
  // Typed as the fields' input, so that a client's misspelt field does not compile; the check itself is isPlainObject's.
  return v.pipe(v.custom<v.InferInput<typeof fields>>(isPlainObject, 'Invalid type: Expected a JSON object'), fields);
}

/**
 * Query-string integers ("20" → 20) within bounds. The metadata is how the
 * API document shows it: an integer, which a client sends as digits.
 */
export const QueryInt = (min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d{1,9}$/, 'must be a whole number'),
    v.transform(Number),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
    v.metadata({ documentedAs: { type: 'integer', minimum: min, maximum: max } }),
  );

/** An ISO 8601 instant in a query string, as epoch milliseconds. */
export const QueryInstant = v.pipe(
  v.string(),
  v.isoTimestamp('must be an ISO 8601 timestamp such as 2026-01-31T12:00:00Z'),
  v.transform((text) => Date.parse(text)),
);

/** The query parameter of a paged listing: an opaque cursor from `meta.nextCursor`. */
export const CursorParam = v.optional(v.pipe(v.string(), v.maxLength(300, 'is not a cursor of this listing')));

/** The first issue's message, or null when the input passes. */
export function problemWith(schema: v.GenericSchema, input: unknown): string | null {
  const result = v.safeParse(schema, input);
  return result.success ? null : (result.issues[0]?.message ?? 'is not valid');
}
