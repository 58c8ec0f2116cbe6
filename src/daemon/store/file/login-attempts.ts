import type { LoginAttemptStore, Reservation } from '../../auth/throttle.js';

/** Bounds memory when someone sprays failed logins for random e-mails. */
const MAX_TRACKED_KEYS = 100_000;

interface KeyState {
  /** Times of failures inside the window, oldest first. */
  failures: number[];
  /** Attempts reserved and still being checked: they count as failures until they end. */
  inFlight: Set<string>;
}

/**
 * Login throttling of the file backend, kept in memory: a restart forgives, by
 * design (docs/decisions.md, Authentication), and the data directory has one
 * daemon, so nothing needs sharing. Holds at most MAX_TRACKED_KEYS keys.
 */
export class MemoryLoginAttemptStore implements LoginAttemptStore {
  private readonly states = new Map<string, KeyState>();
  private nextId = 0;
  /** The window of the latest call: what bounding the table may forget outside of. */
  private windowMs = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async reserve(key: string, limit: number, windowMs: number): Promise<Reservation> {
    this.windowMs = windowMs;
    const state = this.recent(key, windowMs);
    if (state.failures.length + state.inFlight.size >= limit) {
      // Attempts in flight are counted as failing now.
      const counted = [...state.failures, ...Array<number>(state.inFlight.size).fill(this.now())];
      return { retryAfterMs: counted[counted.length - limit]! + windowMs - this.now() };
    }
    const id = String((this.nextId += 1));
    state.inFlight.add(id);
    this.states.set(key, state);
    return { id };
  }

  async failed(key: string, id: string): Promise<void> {
    const state = this.states.get(key) ?? { failures: [], inFlight: new Set<string>() };
    state.inFlight.delete(id);
    state.failures.push(this.now());
    // Re-inserted last: Map order makes the keys that failed longest ago the first forgotten.
    this.states.delete(key);
    this.states.set(key, state);
    this.bound();
  }

  async succeeded(key: string, id: string): Promise<void> {
    const state = this.states.get(key);
    if (!state) return;
    state.inFlight.delete(id);
    state.failures = [];
    if (state.inFlight.size === 0) this.states.delete(key);
  }

  async abandoned(key: string, id: string): Promise<void> {
    const state = this.states.get(key);
    if (!state) return;
    state.inFlight.delete(id);
    if (state.inFlight.size === 0 && state.failures.length === 0) this.states.delete(key);
  }

  async prune(windowMs: number): Promise<void> {
    this.windowMs = windowMs;
    for (const key of [...this.states.keys()]) this.recent(key, windowMs);
  }

  private bound(): void {
    if (this.states.size <= MAX_TRACKED_KEYS) return;
    for (const key of [...this.states.keys()]) this.recent(key, this.windowMs);
    // Still full: forget the keys that failed longest ago, but never one with attempts in flight.
    for (const [key, state] of this.states) {
      if (this.states.size <= MAX_TRACKED_KEYS) break;
      if (state.inFlight.size === 0) this.states.delete(key);
    }
  }

  /** The key's state with failures outside the window dropped; a state with nothing left is forgotten. */
  private recent(key: string, windowMs: number): KeyState {
    const cutoff = this.now() - windowMs;
    const state = this.states.get(key) ?? { failures: [], inFlight: new Set<string>() };
    state.failures = state.failures.filter((at) => at > cutoff);
    if (state.failures.length === 0 && state.inFlight.size === 0) this.states.delete(key);
    return state;
  }
}
