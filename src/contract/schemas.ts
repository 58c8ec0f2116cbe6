import * as v from 'valibot';

/**
 * Input rules a client can check before sending, with the daemon's wording.
 * Node-free; the daemon still checks everything itself.
 */
export const Slug = v.pipe(
  v.string(),
  v.regex(/^[a-z][a-z0-9-]{1,63}$/, 'must be 2-64 characters: a lowercase letter, then lowercase letters, digits or hyphens'),
);

export const EventKey = v.pipe(
  v.string(),
  v.maxLength(255, 'must be at most 255 characters'),
  v.regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/, 'must be two or more dot-separated segments of letters, digits, _ and -'),
);

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/** bcrypt's limits, in UTF-8 bytes. */
export const NewPassword = v.pipe(
  v.string(),
  v.check((text) => utf8Bytes(text) >= 8, 'must be at least 8 bytes'),
  v.check((text) => utf8Bytes(text) <= 72, 'must be at most 72 bytes (UTF-8)'),
);

/** The first issue's message, or null when the input passes. */
export function problemWith(schema: v.GenericSchema, input: unknown): string | null {
  const result = v.safeParse(schema, input);
  return result.success ? null : (result.issues[0]?.message ?? 'is not valid');
}
