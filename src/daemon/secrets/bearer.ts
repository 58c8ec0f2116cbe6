import { createHash, randomBytes } from 'node:crypto';

/**
 * Bearer secrets the daemon makes for scripts and extensions: a prefix that
 * says what the secret is (`plt_` a personal API token, `pli_` an
 * installation token) and 256 random bits as 43 base64url characters. Kept
 * only as a SHA-256 hash: the secret has all the entropy a guess would need,
 * so a slow hash would add nothing, and a lookup by hash compares no secret.
 */
export const newBearerSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

export const secretHashOf = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** Whether `text` has the shape of a secret with this prefix (anything else is refused before any lookup). */
export const isBearerSecret = (prefix: string, text: string): boolean =>
  text.length === prefix.length + 43 && text.startsWith(prefix) && /^[A-Za-z0-9_-]{43}$/.test(text.slice(prefix.length));
