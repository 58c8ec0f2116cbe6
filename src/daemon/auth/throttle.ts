import { RateLimitedError } from '../errors.js';

/** Bounds memory when someone sprays failed logins for random e-mails. */
const MAX_TRACKED_KEYS = 100_000;

/**
 * Failed-login throttling per (e-mail, client address): after `maxFailures`
 * failures inside the window, further attempts are refused until the oldest of
 * them leaves the window. Kept in memory: a restart forgives, by design.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  static key(email: string, clientAddress: string): string {
    return `${email.trim().toLowerCase()}\u0000${clientAddress}`;
  }

  /** Throws 429 with the seconds to wait when the key is throttled. */
  check(key: string): void {
    const recent = this.recent(key);
    if (recent.length < this.maxFailures) return;
    const retryAfterMs = recent[recent.length - this.maxFailures]! + this.windowMs - this.now();
    throw new RateLimitedError(
      'too many failed logins for this account from this address; try again later',
      Math.max(1, Math.ceil(retryAfterMs / 1000)),
    );
  }

  recordFailure(key: string): void {
    const recent = this.recent(key);
    recent.push(this.now());
    this.failures.delete(key);
    this.failures.set(key, recent);
    if (this.failures.size > MAX_TRACKED_KEYS) {
      this.prune();
      // Still full: forget the keys that failed longest ago (Map keeps insertion order).
      for (const oldest of this.failures.keys()) {
        if (this.failures.size <= MAX_TRACKED_KEYS) break;
        this.failures.delete(oldest);
      }
    }
  }

  reset(key: string): void {
    this.failures.delete(key);
  }

  prune(): void {
    for (const key of [...this.failures.keys()]) {
      if (this.recent(key).length === 0) this.failures.delete(key);
    }
  }

  private recent(key: string): number[] {
    const cutoff = this.now() - this.windowMs;
    const recent = (this.failures.get(key) ?? []).filter((at) => at > cutoff);
    if (recent.length === 0) this.failures.delete(key);
    else this.failures.set(key, recent);
    return recent;
  }
}
