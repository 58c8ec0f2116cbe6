import { createHash } from 'node:crypto';

/** CONTRACT 8: a provider's delivery id seen again within 24 hours is a duplicate. */
export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;
const DEFAULT_MAX_ENTRIES = 100_000;

/** A reserved id: commit once its event is published, release when that failed. */
export interface ReplayClaim {
  commit(): void;
  release(): void;
}

/**
 * Remembers the provider delivery ids whose events were published, bounded in
 * time and in memory. Entries are fixed-size fingerprints, so long ids cannot
 * inflate it; past `maxEntries` the oldest are forgotten first. Only ids of
 * calls whose signature has been verified should be claimed, which is what
 * keeps a flood of forged ids from pushing genuine ones out.
 *
 * An id counts as seen only once committed: a call that failed to publish
 * releases its claim, so the sender's retry is processed again. A claim is
 * exclusive while in flight, so concurrent calls with one id publish once.
 */
export class ReplayCache {
  readonly #expiresAt = new Map<string, number>();
  /** Claims in flight, settled when committed or released; as many as concurrent verified calls. */
  readonly #inFlight = new Map<string, Promise<void>>();
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
   * Null when `id` was committed in `scope` within the ttl: a duplicate.
   * Otherwise a claim on it; a call holding the same id waits for that claim
   * to settle first, so it learns whether the other one published.
   */
  async claim(scope: string, id: string): Promise<ReplayClaim | null> {
    const key = fingerprint(scope, id);
    for (;;) {
      if (this.#isRecorded(key)) return null;
      const inFlight = this.#inFlight.get(key);
      if (!inFlight) break;
      await inFlight;
    }
    let settle!: () => void;
    this.#inFlight.set(key, new Promise<void>((resolve) => (settle = resolve)));
    let open = true;
    const finish = (published: boolean) => {
      if (!open) return;
      open = false;
      this.#inFlight.delete(key);
      if (published) this.#record(key);
      settle();
    };
    return { commit: () => finish(true), release: () => finish(false) };
  }

  #isRecorded(key: string): boolean {
    const now = this.#now();
    this.#dropExpired(now);
    const expiresAt = this.#expiresAt.get(key);
    return expiresAt !== undefined && expiresAt > now;
  }

  #record(key: string): void {
    // Deleted first so the re-inserted key moves to the end of the insertion order.
    this.#expiresAt.delete(key);
    this.#expiresAt.set(key, this.#now() + this.#ttlMs);
    for (const oldest of this.#expiresAt.keys()) {
      if (this.#expiresAt.size <= this.#maxEntries) break;
      this.#expiresAt.delete(oldest);
    }
  }

  /** Insertion order is expiry order (one ttl for all): sweeping from the front stays cheap. */
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
