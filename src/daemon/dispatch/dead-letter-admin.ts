import { DomainError } from '../errors.js';
import type { Inactivity } from '../workspaces/service.js';
import type { DeadLetterStore, StoredDeadLetter } from './dead-letters.js';
import type { DeliveryRecords } from './delivery-records.js';
import type { Outbox } from './outbox.js';
import type { DeadLetterFilter, Delivery } from './types.js';

export interface DeadLetterAdminDependencies {
  deadLetters: DeadLetterStore;
  outbox: Outbox;
  records: DeliveryRecords;
  inactivity(subscriptionId: string | null): Inactivity;
  /** Hands deliveries already in the outbox to the dispatcher. */
  enqueue(deliveries: readonly Delivery[]): void;
  now?: () => number;
}

/**
 * Replay and discard of dead letters: the administration beside the dispatcher's
 * loop. Each moves the delivery's record (PENDING again, or DISCARDED).
 */
export class DeadLetterAdmin {
  private readonly now: () => number;

  constructor(private readonly deps: DeadLetterAdminDependencies) {
    this.now = deps.now ?? Date.now;
  }

  /** Re-queues one dead letter to its one subscriber, with a fresh attempt count. */
  async replay(deadLetterId: string): Promise<void> {
    const letter = this.deps.deadLetters.get(deadLetterId);
    const inactive = this.deps.inactivity(letter.subscriber.subscriptionId);
    if (inactive) throw new DomainError('CONFLICT', `cannot replay ${deadLetterId}: ${inactive}`);
    await this.requeue([letter]);
  }

  /**
   * Replays the oldest `limit` matching dead letters whose subscriber is still
   * active; `skipped` counts the matching ones whose subscriber is gone or disabled.
   */
  async replayMatching(filter: DeadLetterFilter, limit: number): Promise<{ replayed: number; skipped: number }> {
    const replayable: StoredDeadLetter[] = [];
    let skipped = 0;
    for (const letter of this.deps.deadLetters.matching(filter)) {
      if (this.deps.inactivity(letter.subscriber.subscriptionId) !== null) skipped += 1;
      else if (replayable.length < limit) replayable.push(letter);
    }
    await this.requeue(replayable);
    return { replayed: replayable.length, skipped };
  }

  async discard(deadLetterId: string): Promise<void> {
    const letter = this.deps.deadLetters.get(deadLetterId);
    await this.deps.deadLetters.remove([deadLetterId]);
    await this.deps.records.movedDurably([letter.deliveryId], 'DISCARDED', this.now());
  }

  async discardMatching(filter: DeadLetterFilter): Promise<{ discarded: number }> {
    const letters = this.deps.deadLetters.matching(filter);
    await this.deps.deadLetters.remove(letters.map((letter) => letter.id));
    await this.deps.records.movedDurably(letters.map((letter) => letter.deliveryId), 'DISCARDED', this.now());
    return { discarded: letters.length };
  }

  /**
   * Where a dead letter stands: `dead` while it is one (again, if a replay failed),
   * `queued` while a replay of it is pending, `gone` otherwise (delivered or discarded).
   */
  state(deadLetterId: string): { state: 'dead' | 'queued' | 'gone' } {
    if (this.deps.deadLetters.has(deadLetterId)) return { state: 'dead' };
    for (const delivery of this.deps.outbox.values()) {
      if (delivery.deadLetterId === deadLetterId) return { state: 'queued' };
    }
    return { state: 'gone' };
  }

  private async requeue(letters: readonly StoredDeadLetter[]): Promise<void> {
    if (letters.length === 0) return;
    const now = this.now();
    const deliveries = letters.map(
      (letter): Delivery => ({
        id: letter.deliveryId,
        event: letter.event,
        depth: letter.depth,
        subscriber: letter.subscriber,
        attempts: 0,
        nextAttemptAt: now,
        enqueuedAt: new Date(now).toISOString(),
        firstAttemptAt: null,
        lastError: null,
        replayCount: letter.replayCount + 1,
        deadLetterId: letter.id,
      }),
    );
    // Outbox first: a crash in between leaves a delivery both pending and dead, never neither.
    await this.deps.outbox.add(deliveries);
    await this.deps.records.movedDurably(deliveries.map((delivery) => delivery.id), 'PENDING', now);
    await this.deps.deadLetters.remove(letters.map((letter) => letter.id));
    this.deps.enqueue(deliveries);
  }
}
