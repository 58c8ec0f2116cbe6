/** A provider's delivery id seen again within 24 hours is a duplicate. */
export const REPLAY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A reserved delivery id: commit once its event is published, release when that failed. The first of the two settles it. */
export interface ReplayClaim {
  commit(): Promise<void>;
  release(): Promise<void>;
}

/**
 * The webhook replay check: the provider delivery ids whose events were
 * published, per extension, each for REPLAY_WINDOW_MS from its publish
 * (store/file/webhook-replays.ts, store/postgres/webhook-replays.ts).
 *
 * An id counts as seen only once committed: a call that failed to publish
 * releases its claim, so the sender's retry is processed again. A claim is
 * exclusive while in flight, on every daemon sharing the store, so concurrent
 * calls with one id publish once: the others wait for it to settle and learn
 * whether it published. Only ids of calls whose signature has been verified
 * should be claimed, which is what keeps forged ids from filling the store.
 */
export interface WebhookReplayStore {
  /** Null when `messageId` was published for the extension within the window: a duplicate. Otherwise a claim on it. */
  claim(extensionKey: string, messageId: string): Promise<ReplayClaim | null>;
  /** Forgets ids whose window has passed. */
  prune(): Promise<void>;
}
