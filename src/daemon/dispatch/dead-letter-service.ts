import { DomainError, notFound } from '../errors.js';
import type { PageBudget } from '../paging.js';
import type { Inactivity } from '../workspaces/types.js';
import type { DeadLetterStore, MatchingDeadLetters } from './store.js';
import type { DeadLetterFilter, Delivery, StoredDeadLetter } from './types.js';

/**
 * Dead letters a bulk replay or discard reads and moves at once: a replay
 * holds each batch's letters whole (their events) while it queues them.
 */
const BATCH = 100;

export interface DeadLetterServiceDependencies {
  deadLetters: DeadLetterStore;
  /** Throws NOT_FOUND for a workspace that does not exist. */
  assertWorkspaceExists(workspaceId: string): Promise<void>;
  /** In the catalog, or a plugin's. */
  extensionExists(extensionKey: string): boolean;
  inactivity(subscriptionId: string | null): Inactivity;
  /** Hands deliveries the store queued (and holds for this daemon) to the dispatcher. */
  enqueue(deliveries: readonly Delivery[]): void;
  now?: () => number;
}

/**
 * Dead letters, and their administration beside the dispatcher's loop:
 * listing, replay and discard. A replay or discard moves the delivery's
 * record (PENDING again, or DISCARDED). A filter naming a workspace or
 * extension that does not exist is a typo: 404, not an empty result.
 */
export class DeadLetterService {
  private readonly now: () => number;

  constructor(private readonly deps: DeadLetterServiceDependencies) {
    this.now = deps.now ?? Date.now;
  }

  count(): Promise<number> {
    return this.deps.deadLetters.count();
  }

  /** Newest first, `page.limit` from `page.offset`, into `budget`; `total` counts every match. */
  async list(filter: DeadLetterFilter, page: { limit: number; offset: number }, budget: PageBudget<StoredDeadLetter>): Promise<{ items: StoredDeadLetter[]; total: number }> {
    await this.assertKnown(filter);
    return this.deps.deadLetters.list(filter, page, budget);
  }

  /** 404 when there is no such dead letter. */
  get(deadLetterId: string): Promise<StoredDeadLetter> {
    return this.deps.deadLetters.get(deadLetterId);
  }

  /** Re-queues one dead letter to its one subscriber, with a fresh attempt count. */
  async replay(deadLetterId: string): Promise<void> {
    const letter = await this.deps.deadLetters.get(deadLetterId);
    const inactive = this.deps.inactivity(letter.subscriber.subscriptionId);
    if (inactive) throw new DomainError('CONFLICT', `cannot replay ${deadLetterId}: ${inactive}`);
    await this.requeue([letter.id]);
  }

  /**
   * Replays the oldest `limit` matching dead letters whose subscriber is still
   * active; `skipped` counts every matching one whose subscriber is gone or
   * disabled, from the store's counts by subscription. The store is read a
   * batch at a time and only until `limit` are queued: a replay of 50 out of a
   * million reads about 50, so replaying everything in steps stays linear.
   */
  async replayMatching(filter: DeadLetterFilter, limit: number): Promise<{ replayed: number; skipped: number }> {
    await this.assertKnown(filter);
    let skipped = 0;
    for (const [subscriptionId, count] of await this.deps.deadLetters.countBySubscription(filter)) {
      if (this.deps.inactivity(subscriptionId) !== null) skipped += count;
    }
    let replayed = 0;
    let wanted = limit;
    let after: string | null = null;
    do {
      const batch: MatchingDeadLetters = await this.deps.deadLetters.matchingIds(filter, after, BATCH);
      const replayable: string[] = [];
      for (const letter of batch.letters) {
        if (replayable.length === wanted) break;
        if (this.deps.inactivity(letter.subscriptionId) === null) replayable.push(letter.id);
      }
      wanted -= replayable.length;
      replayed += await this.requeue(replayable);
      after = batch.next;
    } while (after !== null && wanted > 0);
    return { replayed, skipped };
  }

  async discard(deadLetterId: string): Promise<void> {
    await this.deps.deadLetters.get(deadLetterId);
    await this.deps.deadLetters.discard([deadLetterId], this.now());
  }

  async discardMatching(filter: DeadLetterFilter): Promise<{ discarded: number }> {
    await this.assertKnown(filter);
    let discarded = 0;
    await this.inBatches(filter, async (letters) => {
      discarded += await this.deps.deadLetters.discard(letters.map((letter) => letter.id), this.now());
    });
    return { discarded };
  }

  private async assertKnown(filter: DeadLetterFilter): Promise<void> {
    if (filter.workspaceId !== undefined) await this.deps.assertWorkspaceExists(filter.workspaceId);
    const key = filter.extensionKey;
    if (key !== undefined && !this.deps.extensionExists(key)) throw notFound(`extension ${key} not found`);
  }

  /** Every matching letter, oldest first, BATCH at a time (each batch handled before the next is read). */
  private async inBatches(filter: DeadLetterFilter, handle: (letters: MatchingDeadLetters['letters']) => Promise<void>): Promise<void> {
    let after: string | null = null;
    do {
      const batch: MatchingDeadLetters = await this.deps.deadLetters.matchingIds(filter, after, BATCH);
      await handle(batch.letters);
      after = batch.next;
    } while (after !== null);
  }

  /**
   * Where a dead letter stands: `dead` while it is one (again, if a replay failed),
   * `queued` while a replay of it is pending, `gone` otherwise (delivered or discarded).
   */
  async state(deadLetterId: string): Promise<{ state: 'dead' | 'queued' | 'gone' }> {
    return { state: await this.deps.deadLetters.state(deadLetterId) };
  }

  /** Answers how many it queued: a letter replayed meanwhile (here or on another daemon) is not queued twice. */
  private async requeue(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const deliveries = await this.deps.deadLetters.replay(ids, this.now());
    this.deps.enqueue(deliveries);
    return deliveries.length;
  }
}
