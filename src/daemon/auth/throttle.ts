import { RateLimitedError } from '../errors.js';

/**
 * Password checks one client address may have running at once. Well under the
 * password hasher's queue (256), so that one address flooding logins for random
 * e-mails cannot fill the queue and starve everyone else. Per daemon, like the
 * hasher it protects.
 */
const MAX_IN_FLIGHT_PER_ADDRESS = 16;

/** A place held for one attempt, or how long until one may start. */
export type Reservation = { id: string } | { retryAfterMs: number };

/**
 * The failed-attempt counts of login throttling (store/file/login-attempts.ts,
 * store/postgres/login-attempts.ts). An attempt holds its place from `reserve`
 * until exactly one of failed, succeeded or abandoned; reserving checks and
 * takes the place in one step, so that concurrent attempts, on any daemon
 * sharing the store, cannot overtake the limit.
 */
export interface LoginAttemptStore {
  /**
   * Holds a place for one attempt at `key`, unless `limit` attempts already
   * count: failures inside the window, and attempts still being checked
   * (counted as failing now). Then: the milliseconds until the oldest of them
   * leaves the window.
   */
  reserve(key: string, limit: number, windowMs: number): Promise<Reservation>;
  /** The attempt failed: it counts for the window from now. */
  failed(key: string, id: string): Promise<void>;
  /** The attempt succeeded: the key's failures are forgiven. */
  succeeded(key: string, id: string): Promise<void>;
  /** The attempt could not be checked: it counts for nothing. */
  abandoned(key: string, id: string): Promise<void>;
  /** Forgets what no longer counts. */
  prune(windowMs: number): Promise<void>;
}

/** One password check holding its place in the throttle; exactly one of these ends it. */
export interface ThrottledAttempt {
  /** The password was wrong: the attempt stays counted as a failure for the window. */
  failed(): Promise<void>;
  /** The password was right: the key's failures are forgiven. */
  succeeded(): Promise<void>;
  /** The check could not run (the hasher refused it): the attempt counts for nothing. */
  abandoned(): Promise<void>;
}

/**
 * Failed-login throttling per key, (e-mail, client address) for logins: after
 * `maxFailures` failures inside the window, further attempts are refused until
 * the oldest of them leaves the window. An attempt takes its place before its
 * password is compared, so concurrent attempts cannot overtake the limit; and
 * each client address has a small budget of checks in flight.
 */
export class LoginThrottle {
  private readonly inFlightByAddress = new Map<string, number>();

  constructor(
    private readonly attempts: LoginAttemptStore,
    private readonly maxFailures: number,
    private readonly windowMs: number,
  ) {}

  static key(email: string, clientAddress: string): string {
    return `${email.trim().toLowerCase()}\u0000${clientAddress}`;
  }

  /** The current-password check of an authenticated user: per account, whatever the address. */
  static passwordChangeKey(userId: string): string {
    return `password-change:${userId}`;
  }

  /** Reserves an attempt; throws 429 with the seconds to wait when the key or the address is exhausted. */
  async begin(key: string, clientAddress: string): Promise<ThrottledAttempt> {
    const fromAddress = this.inFlightByAddress.get(clientAddress) ?? 0;
    if (fromAddress >= MAX_IN_FLIGHT_PER_ADDRESS) {
      throw new RateLimitedError('too many logins in progress from this address; retry shortly', 1);
    }
    // Counted before the store is asked, so that a burst cannot pass the check all at once.
    this.inFlightByAddress.set(clientAddress, fromAddress + 1);
    let ended = false;
    const end = () => {
      if (ended) return false;
      ended = true;
      const left = this.inFlightByAddress.get(clientAddress)! - 1;
      if (left > 0) this.inFlightByAddress.set(clientAddress, left);
      else this.inFlightByAddress.delete(clientAddress);
      return true;
    };
    let reservation: Reservation;
    try {
      reservation = await this.attempts.reserve(key, this.maxFailures, this.windowMs);
    } catch (error) {
      end();
      throw error;
    }
    if ('retryAfterMs' in reservation) {
      end();
      throw new RateLimitedError(
        'too many failed attempts for this account from this address; try again later',
        Math.max(1, Math.ceil(reservation.retryAfterMs / 1000)),
      );
    }
    const { id } = reservation;
    return {
      failed: async () => {
        if (end()) await this.attempts.failed(key, id);
      },
      succeeded: async () => {
        if (end()) await this.attempts.succeeded(key, id);
      },
      abandoned: async () => {
        if (end()) await this.attempts.abandoned(key, id);
      },
    };
  }

  prune(): Promise<void> {
    return this.attempts.prune(this.windowMs);
  }
}
