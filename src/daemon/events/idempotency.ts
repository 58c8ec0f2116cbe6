import { createHash, randomUUID } from 'node:crypto';
import { conflict, describeFault, DomainError } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * Idempotent publishing (`Idempotency-Key`, docs/api.md): within a key's
 * lifetime, the same key in the same workspace with the same body bytes is
 * answered as the first request was and publishes nothing; with other bytes
 * it is 409 IDEMPOTENCY_KEY_REUSED. How each backend keeps keys, and what a
 * crash can still do, is in docs/decisions.md ("Idempotent publishing").
 */

/** A key as the store sees it: the workspace, and the SHA-256 of the key (fixed size, whatever the key). */
export interface KeyRef {
  workspaceId: string;
  keyDigest: Buffer;
}

/** What a kept key answers with: the SHA-256 of the first request's body bytes, and the id of the event it published. */
export interface KeptKey {
  bodyHash: Buffer;
  eventId: string;
}

/** A claim asked for: this request's body, the id its event will have, and how long the key lives from now. */
export interface ClaimRequest {
  bodyHash: Buffer;
  eventId: string;
  ttlMs: number;
}

/** A key this request holds: it publishes the claim's event, then settles the claim one way or the other, once. */
export interface KeyClaim {
  /** Published: the key answers with the claim's event until its lifetime ends. */
  commit(): Promise<void>;
  /**
   * Not published: the key is free again, so that a retry publishes. A store
   * that cannot tell whether a failed publish recorded its event after all
   * (a connection lost mid-commit) keeps the key when the event is there.
   */
  release(): Promise<void>;
}

export type ClaimOutcome =
  | { kind: 'claimed'; claim: KeyClaim }
  /** A request published with this key within its lifetime. */
  | { kind: 'kept'; kept: KeptKey }
  /** Another request holds the key: on another daemon, or one whose claim has not lapsed yet. */
  | { kind: 'held' };

/**
 * Where keys are kept (store/file/idempotency-keys.ts,
 * store/postgres/idempotency-keys.ts). A claim is recorded with its event id
 * before the event is published, and settled after: a claim that a crash left
 * unsettled is taken for published exactly when its event was recorded.
 */
export interface IdempotencyKeyStore {
  /** Claims the key for this request, unless it is kept (within its lifetime) or held by another request. */
  claim(key: KeyRef, request: ClaimRequest): Promise<ClaimOutcome>;
  /** Forgets keys whose lifetime has passed; answers how many. */
  prune(): Promise<number>;
  /** The workspace is deleted: its keys go with its events (where its events go). */
  forgetWorkspace(workspaceId: string): Promise<void>;
}

export interface IdempotencySettings {
  /** How long a key lives from its first request (PLATFORM_IDEMPOTENCY_TTL_SECONDS). */
  ttlMs: number;
  /** How long a request waits for an unfinished one with its key before it is answered 409. */
  waitMs: number;
}

/** Keys the file backend keeps at most unless PLATFORM_IDEMPOTENCY_MAX_KEYS says otherwise (about 16 MB of memory). */
export const DEFAULT_MAX_KEPT_KEYS = 100_000;

/** How often a request whose key another daemon holds looks again. */
const HELD_POLL_MS = 50;

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest();

/**
 * Runs publishes that carry an `Idempotency-Key`. On one daemon, the requests
 * with one key wait in memory for the first of them (`inFlight`): only that
 * one asks the store, so 50 concurrent requests cost one claim. Requests on
 * other daemons meet in the store, which lets one claim the key; the others
 * look again every HELD_POLL_MS. Nobody waits longer than `waitMs`.
 */
export class IdempotentPublishing {
  /** This daemon's request speaking for each key now, settled with what the key answers (null: free again). */
  private readonly inFlight = new Map<string, Promise<KeptKey | null>>();

  constructor(
    private readonly keys: IdempotencyKeyStore,
    private readonly settings: IdempotencySettings,
    private readonly logger: Logger,
  ) {}

  /**
   * Publishes through `publish` (given the id its event must have) unless the
   * key answers already; `replayed` says the answer is the first request's.
   * A publish that fails releases the key and its error is this request's.
   */
  async publish(
    workspaceId: string,
    key: string,
    body: Buffer,
    publish: (eventId: string) => Promise<unknown>,
  ): Promise<{ eventId: string; replayed: boolean }> {
    const ref: KeyRef = { workspaceId, keyDigest: sha256(key) };
    const bodyHash = sha256(body);
    const waitUntil = performance.now() + this.settings.waitMs;
    const local = `${workspaceId} ${ref.keyDigest.toString('base64')}`;
    for (;;) {
      const first = this.inFlight.get(local);
      if (first) {
        const kept = await this.waitFor(first, waitUntil);
        if (kept) return { eventId: answered(kept, bodyHash), replayed: true };
        continue;
      }
      let settle!: (kept: KeptKey | null) => void;
      this.inFlight.set(local, new Promise((resolve) => (settle = resolve)));
      let outcome: { kept: KeptKey; replayed: boolean } | null = null;
      try {
        outcome = await this.claimAndPublish(ref, bodyHash, waitUntil, publish);
      } finally {
        this.inFlight.delete(local);
        settle(outcome?.kept ?? null);
      }
      return { eventId: answered(outcome.kept, bodyHash), replayed: outcome.replayed };
    }
  }

  /** Forgets expired keys (the prune-idempotency-keys job). */
  prune(): Promise<number> {
    return this.keys.prune();
  }

  forgetWorkspace(workspaceId: string): Promise<void> {
    return this.keys.forgetWorkspace(workspaceId);
  }

  private async claimAndPublish(
    ref: KeyRef,
    bodyHash: Buffer,
    waitUntil: number,
    publish: (eventId: string) => Promise<unknown>,
  ): Promise<{ kept: KeptKey; replayed: boolean }> {
    for (;;) {
      const eventId = randomUUID();
      const outcome = await this.keys.claim(ref, { bodyHash, eventId, ttlMs: this.settings.ttlMs });
      if (outcome.kind === 'kept') return { kept: outcome.kept, replayed: true };
      if (outcome.kind === 'held') {
        await this.waitFor(new Promise<null>((resolve) => setTimeout(resolve, HELD_POLL_MS, null).unref()), waitUntil);
        continue;
      }
      try {
        await publish(eventId);
      } catch (error) {
        await outcome.claim.release().catch((failed: unknown) => this.logger.error(`an idempotency key could not be released: ${describeFault(failed)}`));
        throw error;
      }
      // Published: the answer stands. A claim left unsettled is settled by the next request with the key, from the event log.
      await outcome.claim.commit().catch((failed: unknown) => this.logger.error(`an idempotency key could not be marked published: ${describeFault(failed)}`));
      return { kept: { bodyHash, eventId }, replayed: false };
    }
  }

  /** What `pending` resolves to, unless `waitUntil` (performance.now()) comes first: then 409. */
  private async waitFor<T>(pending: Promise<T>, waitUntil: number): Promise<T> {
    const left = waitUntil - performance.now();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(stillInProgress()), Math.max(0, left));
    });
    try {
      return await Promise.race([pending, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The kept key's event, if this body is the first request's; otherwise the key is being reused. */
function answered(kept: KeptKey, bodyHash: Buffer): string {
  if (!kept.bodyHash.equals(bodyHash)) {
    throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used in this workspace for a request with another body: a new event needs a new key');
  }
  return kept.eventId;
}

const stillInProgress = () =>
  conflict('the first request with this Idempotency-Key is still being processed: send this one again once that one is answered');
