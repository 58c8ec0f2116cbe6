import { createHash } from 'node:crypto';
import { REPLAY_WINDOW_MS, type ReplayClaim, type WebhookReplayStore } from '../../webhooks/replays.js';

const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * The replay check of the file backend, kept in memory (a restart forgets,
 * as it always did; the data directory has one daemon, so nothing needs
 * sharing). Bounded in time and in memory: entries are fixed-size
 * fingerprints, so long ids cannot inflate it, and past `maxEntries` the
 * oldest are forgotten first.
 */
export class MemoryWebhookReplayStore implements WebhookReplayStore {
  readonly #expiresAt = new Map<string, number>();
  /** Claims in flight, settled when committed or released; as many as concurrent verified calls. */
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #now: () => number;
  readonly #maxEntries: number;

  constructor(now: () => number = Date.now, maxEntries = DEFAULT_MAX_ENTRIES) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
    this.#now = now;
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#expiresAt.size;
  }

  async claim(extensionKey: string, messageId: string): Promise<ReplayClaim | null> {
    const key = fingerprint(extensionKey, messageId);
    for (;;) {
      if (this.#isRecorded(key)) return null;
      const inFlight = this.#inFlight.get(key);
      if (!inFlight) break;
      await inFlight;
    }
    let settle!: () => void;
    this.#inFlight.set(key, new Promise<void>((resolve) => (settle = resolve)));
    let open = true;
    const finish = async (published: boolean) => {
      if (!open) return;
      open = false;
      this.#inFlight.delete(key);
      if (published) this.#record(key);
      settle();
    };
    return { commit: () => finish(true), release: () => finish(false) };
  }

  async prune(): Promise<void> {
    this.#dropExpired(this.#now());
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
    this.#expiresAt.set(key, this.#now() + REPLAY_WINDOW_MS);
    for (const oldest of this.#expiresAt.keys()) {
      if (this.#expiresAt.size <= this.#maxEntries) break;
      this.#expiresAt.delete(oldest);
    }
  }

  /** Insertion order is expiry order (one window for all): sweeping from the front stays cheap. */
  #dropExpired(now: number): void {
    for (const [key, expiresAt] of this.#expiresAt) {
      if (expiresAt > now) break;
      this.#expiresAt.delete(key);
    }
  }
}

/** Length-prefixed so that no (extension, id) pair can collide with another. */
function fingerprint(extensionKey: string, messageId: string): string {
  return createHash('sha256').update(`${extensionKey.length}:${extensionKey}:${messageId}`, 'utf8').digest('base64');
}
