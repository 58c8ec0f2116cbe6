import { createHash } from 'node:crypto';

export const REPLAY_WINDOW_MS = 5 * 60 * 1000;
const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * Remembers recently accepted message ids, bounded in time and in memory.
 * Entries are fixed-size fingerprints, so long ids cannot inflate it; past
 * `maxEntries` the oldest are forgotten first. Only ids whose signature has
 * been verified should be recorded, which is what keeps a flood of forged ids
 * from pushing genuine ones out.
 */
export class ReplayCache {
  readonly #expiresAt = new Map<string, number>();
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #maxEntries: number;

  constructor(ttlMs: number, now: () => number, maxEntries = DEFAULT_MAX_ENTRIES) {
    if (!(ttlMs > 0)) throw new RangeError('ttlMs must be positive');
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
    this.#ttlMs = ttlMs;
    this.#now = now;
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#expiresAt.size;
  }

  /**
   * True when `id` was recorded in `scope` and has not expired; otherwise
   * records it and answers false. `keepUntilMs` extends the memory of this id,
   * for a message that stays acceptable for longer than the ttl.
   */
  seenRecently(scope: string, id: string, keepUntilMs = 0): boolean {
    const now = this.#now();
    this.#dropExpired(now);
    const key = fingerprint(scope, id);
    const expiresAt = this.#expiresAt.get(key);
    if (expiresAt !== undefined && expiresAt > now) return true;
    // Deleted first so the re-inserted key moves to the end of the insertion order.
    this.#expiresAt.delete(key);
    this.#expiresAt.set(key, Math.max(now + this.#ttlMs, keepUntilMs));
    for (const oldest of this.#expiresAt.keys()) {
      if (this.#expiresAt.size <= this.#maxEntries) break;
      this.#expiresAt.delete(oldest);
    }
    return false;
  }

  /** Insertion order is roughly expiry order: sweeping from the front stays cheap. */
  #dropExpired(now: number): void {
    for (const [key, expiresAt] of this.#expiresAt) {
      if (expiresAt > now) break;
      this.#expiresAt.delete(key);
    }
  }
}

/** Length-prefixed so that no (scope, id) pair can collide with another. */
function fingerprint(scope: string, id: string): string {
  return createHash('sha256').update(`${scope.length}:${scope}:${id}`, 'utf8').digest('base64');
}
