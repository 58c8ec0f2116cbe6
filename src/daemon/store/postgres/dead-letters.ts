import type { DeadLetterStore, MatchingDeadLetters } from '../../dispatch/store.js';
import type { DeadLetterFilter, Delivery, DeliveryStatus, StoredDeadLetter } from '../../dispatch/types.js';
import { notFound } from '../../errors.js';
import { fillInBatches, unbounded, type PageBudget } from '../../paging.js';
import type { Database } from './database.js';
import { COUNT_CACHE_MS } from './deliveries.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { deliveryOf, letterOfRow, type DeliveryWithEvent } from './rows.js';
import { COUNT_DEAD_LETTERS } from './sql/count-dead-letters.js';
import { DEAD_LETTER_STATE } from './sql/dead-letter-state.js';
import { DISCARD_DEAD_LETTERS } from './sql/discard-dead-letters.js';
import { GET_DEAD_LETTER } from './sql/get-dead-letter.js';
import { COUNT_DEAD_LETTERS_MATCHING, LIST_DEAD_LETTERS, LIST_DEAD_LETTERS_AFTER } from './sql/list-dead-letters.js';
import { COUNT_DEAD_LETTERS_BY_SUBSCRIPTION, MATCH_DEAD_LETTER_IDS } from './sql/match-dead-letters.js';
import { REPLAY_DEAD_LETTERS } from './sql/replay-dead-letters.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (text: string) => UUID.test(text);

/** The parameters of DEAD_LETTER_FILTER (sql/dead-letter-filter.ts), first in every statement that filters. */
const filtered = (filter: DeadLetterFilter): unknown[] => [filter.workspaceId ?? null, filter.eventKey ?? null, filter.extensionKey ?? null];

/** Dead letters on PostgreSQL: DEAD deliveries, read with their events; a replay leases the delivery to this daemon. */
export class PostgresDeadLetterStore implements DeadLetterStore {
  /** `changes`: dead letters this daemon made, replayed or discarded; a count read across one is not kept. */
  private deadCount = { count: 0, readAt: 0, changes: 0 };

  constructor(
    private readonly database: Database,
    private readonly leases: LeaseKeeper,
  ) {}

  /**
   * The dead-letter count is cached for a second, but what this daemon changed itself
   * counts at once: a console re-reading the status on each stream item must see it.
   */
  changed(): void {
    this.deadCount = { count: 0, readAt: 0, changes: this.deadCount.changes + 1 };
  }

  async count(): Promise<number> {
    if (Date.now() - this.deadCount.readAt < COUNT_CACHE_MS) return this.deadCount.count;
    const { changes } = this.deadCount;
    const { rows } = await this.database.query<{ count: string }>(COUNT_DEAD_LETTERS);
    const count = Number(rows[0]!.count);
    if (this.deadCount.changes === changes) this.deadCount = { count, readAt: Date.now(), changes };
    return count;
  }

  async get(id: string): Promise<StoredDeadLetter> {
    const rows = await this.letters(GET_DEAD_LETTER, [isUuid(id) ? id : null]);
    if (!rows[0]) throw notFound(`dead letter ${id} not found`);
    return letterOfRow(rows[0]);
  }

  async list(filter: DeadLetterFilter, page: { limit: number; offset: number }, budget: PageBudget<StoredDeadLetter> = unbounded<StoredDeadLetter>()) {
    const values = filtered(filter);
    // In batches sized to the budget: each letter carries its event's payload. A batch after the
    // first continues after the last row read, not at an offset (see LIST_DEAD_LETTERS_AFTER).
    const { items } = await fillInBatches(
      page.limit,
      budget,
      (after: DeliveryWithEvent | undefined, count) =>
        after === undefined
          ? this.letters(LIST_DEAD_LETTERS, [...values, count, page.offset])
          : this.letters(LIST_DEAD_LETTERS_AFTER, [...values, after.dead_at, after.seq, count]),
      letterOfRow,
    );
    const counted = await this.database.query<{ total: string }>(COUNT_DEAD_LETTERS_MATCHING, values);
    return { items, total: Number(counted.rows[0]!.total) };
  }

  async matchingIds(filter: DeadLetterFilter, after: string | null, limit: number): Promise<MatchingDeadLetters> {
    const [deadAt, seq] = after === null ? [null, null] : (JSON.parse(after) as [string, string]);
    const { rows } = await this.database.query<{ dead_letter_id: string; subscription_id: string | null; dead_at: string; seq: string }>(
      MATCH_DEAD_LETTER_IDS,
      [...filtered(filter), deadAt, seq, limit],
    );
    const last = rows.at(-1);
    return {
      letters: rows.map((row) => ({ id: row.dead_letter_id, subscriptionId: row.subscription_id })),
      next: rows.length === limit && last ? JSON.stringify([last.dead_at, last.seq]) : null,
    };
  }

  async countBySubscription(filter: DeadLetterFilter): Promise<Map<string | null, number>> {
    const { rows } = await this.database.query<{ subscription_id: string | null; count: number }>(COUNT_DEAD_LETTERS_BY_SUBSCRIPTION, filtered(filter));
    return new Map(rows.map((row) => [row.subscription_id, row.count]));
  }

  async replay(ids: readonly string[], now: number): Promise<Delivery[]> {
    const sentAt = performance.now();
    const rows = await this.letters(REPLAY_DEAD_LETTERS, [ids.filter(isUuid), new Date(now).toISOString(), this.leases.owner, this.leases.leaseMs]);
    this.changed();
    return rows.map((row) => this.leases.hold(deliveryOf(row), sentAt));
  }

  async discard(ids: readonly string[], now: number): Promise<number> {
    const { rowCount } = await this.database.query(DISCARD_DEAD_LETTERS, [ids.filter(isUuid), new Date(now).toISOString()]);
    this.changed();
    return rowCount ?? 0;
  }

  async state(id: string): Promise<'dead' | 'queued' | 'gone'> {
    if (!isUuid(id)) return 'gone';
    const { rows } = await this.database.query<{ status: DeliveryStatus }>(DEAD_LETTER_STATE, [id]);
    const status = rows[0]?.status;
    return status === 'DEAD' ? 'dead' : status === 'PENDING' ? 'queued' : 'gone';
  }

  /** The dead letters are the workspace's deliveries, removed with them. */
  async removeWorkspace(): Promise<void> {}

  private async letters(text: string, values: unknown[]): Promise<DeliveryWithEvent[]> {
    const { rows } = await this.database.query<DeliveryWithEvent>(text, values);
    return rows;
  }
}
