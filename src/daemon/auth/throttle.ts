import { RateLimitedError } from '../errors.js';

/** Bounds memory when someone sprays failed logins for random e-mails. */
const MAX_TRACKED_KEYS = 100_000;

/**
 * Password checks one client address may have running at once. Well under the
 * password hasher's queue (256), so that one address flooding logins for random
 * e-mails cannot fill the queue and starve everyone else.
 */
const MAX_IN_FLIGHT_PER_ADDRESS = 16;

interface KeyState {
  /** Times of failures inside the window, oldest first; never more than maxFailures. */
  failures: number[];
  /** Attempts reserved and still being checked: they count as failures until they end. */
  inFlight: number;
}

/** One password check holding its place in the throttle; exactly one of these ends it. */
export interface ThrottledAttempt {
  /** The password was wrong: the attempt stays counted as a failure for the window. */
  failed(): void;
  /** The password was right: the key's failures are forgiven. */
  succeeded(): void;
  /** The check could not run (the hasher refused it): the attempt counts for nothing. */
  abandoned(): void;
}

/**
 * Failed-login throttling per key, (e-mail, client address) for logins: after
 * `maxFailures` failures inside the window, further attempts are refused until
 * the oldest of them leaves the window. An attempt takes its place before its
 * password is compared, so concurrent attempts cannot overtake the limit; and
 * each client address has a small budget of checks in flight.
 * Kept in memory: a restart forgives, by design.
 */
export class LoginThrottle {
  private readonly states = new Map<string, KeyState>();
  private readonly inFlightByAddress = new Map<string, number>();

  constructor(
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  static key(email: string, clientAddress: string): string {
    return `${email.trim().toLowerCase()}\u0000${clientAddress}`;
  }

  /** The current-password check of an authenticated user: per account, whatever the address. */
  static passwordChangeKey(userId: string): string {
    return `password-change:${userId}`;
  }

  /** Reserves an attempt; throws 429 with the seconds to wait when the key or the address is exhausted. */
  begin(key: string, clientAddress: string): ThrottledAttempt {
    const fromAddress = this.inFlightByAddress.get(clientAddress) ?? 0;
    if (fromAddress >= MAX_IN_FLIGHT_PER_ADDRESS) {
      throw new RateLimitedError('too many logins in progress from this address; retry shortly', 1);
    }
    const state = this.recent(key);
    if (state.failures.length + state.inFlight >= this.maxFailures) {
      // Attempts in flight are counted as failing now.
      const counted = [...state.failures, ...Array<number>(state.inFlight).fill(this.now())];
      const retryAfterMs = counted[counted.length - this.maxFailures]! + this.windowMs - this.now();
      throw new RateLimitedError(
        'too many failed attempts for this account from this address; try again later',
        Math.max(1, Math.ceil(retryAfterMs / 1000)),
      );
    }
    state.inFlight += 1;
    this.states.set(key, state);
    this.inFlightByAddress.set(clientAddress, fromAddress + 1);

    let ended = false;
    const end = () => {
      if (ended) return false;
      ended = true;
      state.inFlight -= 1;
      const left = this.inFlightByAddress.get(clientAddress)! - 1;
      if (left > 0) this.inFlightByAddress.set(clientAddress, left);
      else this.inFlightByAddress.delete(clientAddress);
      return true;
    };
    return {
      failed: () => {
        if (!end()) return;
        state.failures.push(this.now());
        // Re-inserted last: Map order makes the keys that failed longest ago the first forgotten.
        this.states.delete(key);
        this.states.set(key, state);
        this.bound();
      },
      succeeded: () => {
        if (!end()) return;
        state.failures = [];
        if (state.inFlight === 0) this.states.delete(key);
      },
      abandoned: () => {
        if (end() && state.inFlight === 0 && state.failures.length === 0) this.states.delete(key);
      },
    };
  }

  prune(): void {
    for (const key of [...this.states.keys()]) this.recent(key);
  }

  private bound(): void {
    if (this.states.size <= MAX_TRACKED_KEYS) return;
    this.prune();
    // Still full: forget the keys that failed longest ago, but never one with attempts in flight.
    for (const [key, state] of this.states) {
      if (this.states.size <= MAX_TRACKED_KEYS) break;
      if (state.inFlight === 0) this.states.delete(key);
    }
  }

  /** The key's state with failures outside the window dropped; a state with nothing left is forgotten. */
  private recent(key: string): KeyState {
    const cutoff = this.now() - this.windowMs;
    const state = this.states.get(key) ?? { failures: [], inFlight: 0 };
    state.failures = state.failures.filter((at) => at > cutoff);
    if (state.failures.length === 0 && state.inFlight === 0) this.states.delete(key);
    return state;
  }
}
