/** The contract's defaults: attempts after 1 s, 5 s, 30 s, 2 min and 10 min; then a dead letter. */
export const DEFAULT_RETRY_SCHEDULE: number[] = [1_000, 5_000, 30_000, 120_000, 600_000];

/** A subscriber may ask for a pause with Retry-After; longer requests are cut to this. */
const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/** Network errors, timeouts, 408, 429 and 5xx are worth another attempt; any other status is final. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** ±20 % so that deliveries failing together do not all come back together. */
export function withJitter(delayMs: number, random: () => number): number {
  return Math.round(delayMs * (0.8 + 0.4 * random()));
}

/** Retry-After as seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  const delay = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(delay)) return null;
  return Math.min(Math.max(0, delay), MAX_RETRY_AFTER_MS);
}
