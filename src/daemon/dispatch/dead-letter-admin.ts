import { DomainError } from '../errors.js';
import type { Inactivity } from '../workspaces/service.js';
import type { DeadLetterStore } from './store.js';
import type { DeadLetterFilter, Delivery, StoredDeadLetter } from './types.js';

export interface DeadLetterAdminDependencies {
  deadLetters: DeadLetterStore;
  inactivity(subscriptionId: string | null): Inactivity;
  /** Hands deliveries the store queued (and holds for this daemon) to the dispatcher. */
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
    const letter = await this.deps.deadLetters.get(deadLetterId);
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
    for (const letter of await this.deps.deadLetters.matching(filter)) {
      if (this.deps.inactivity(letter.subscriber.subscriptionId) !== null) skipped += 1;
      else if (replayable.length < limit) replayable.push(letter);
    }
    return { replayed: await this.requeue(replayable), skipped };
  }

  async discard(deadLetterId: string): Promise<void> {
    await this.deps.deadLetters.get(deadLetterId);
    await this.deps.deadLetters.discard([deadLetterId], this.now());
  }

  async discardMatching(filter: DeadLetterFilter): Promise<{ discarded: number }> {
    const letters = await this.deps.deadLetters.matching(filter);
    return { discarded: await this.deps.deadLetters.discard(letters.map((letter) => letter.id), this.now()) };
  }

  /**
   * Where a dead letter stands: `dead` while it is one (again, if a replay failed),
   * `queued` while a replay of it is pending, `gone` otherwise (delivered or discarded).
   */
  async state(deadLetterId: string): Promise<{ state: 'dead' | 'queued' | 'gone' }> {
    return { state: await this.deps.deadLetters.state(deadLetterId) };
  }

  /** Answers how many it queued: a letter replayed meanwhile (here or on another daemon) is not queued twice. */
  private async requeue(letters: readonly StoredDeadLetter[]): Promise<number> {
    if (letters.length === 0) return 0;
    const deliveries = await this.deps.deadLetters.replay(letters.map((letter) => letter.id), this.now());
    this.deps.enqueue(deliveries);
    return deliveries.length;
  }
}
