import { AppendLog, stagedWrite, type LineSpan, type StagedWrite } from '../append-log.js';
import type { Delivery, DeliveryError } from '../../dispatch/types.js';
import { maskCredentials, showsCredentials } from '../../dispatch/url-credentials.js';

type OutboxRecord =
  | { t: 'add'; delivery: Delivery }
  | { t: 'retry'; key: string; attempts: number; nextAttemptAt: number; firstAttemptAt: string | null; lastError: DeliveryError }
  | { t: 'done'; key: string };

/**
 * A replay sends a dead letter again under the same delivery id (its webhook-id,
 * so receivers can deduplicate); the replay count tells the two runs apart.
 */
const keyOf = (delivery: Delivery) => `${delivery.id}:${delivery.replayCount}`;

/** Compact once the journal holds this many records more than there are pending deliveries. */
const COMPACT_SLACK = 10_000;

/**
 * The durable outbox: every pending delivery, as a journal (outbox.log).
 * Adding deliveries is durable before it resolves (a publish is acknowledged
 * only after that). Attempt results are journalled without waiting: a crash
 * may lose the last of them, and then a delivery runs once more than needed
 * (at least once, never lost). The journal is compacted to the pending set
 * when it has grown well past it.
 */
export class Outbox {
  private records = 0;
  /** Stagings neither committed nor retracted. */
  private staged = 0;
  private compacting: Promise<void> | null = null;

  private constructor(
    private readonly log: AppendLog<OutboxRecord>,
    private readonly pending: Map<string, Delivery>,
    private readonly reportError: (error: unknown) => void,
    records: number,
  ) {
    this.records = records;
  }

  static async open(file: string, reportError: (error: unknown) => void): Promise<Outbox> {
    const pending = new Map<string, Delivery>();
    let records = 0;
    const log = await AppendLog.open<OutboxRecord>(file, (record) => {
      records += 1;
      if (record.t === 'add') pending.set(keyOf(record.delivery), record.delivery);
      else if (record.t === 'done') pending.delete(record.key);
      else {
        const delivery = pending.get(record.key);
        if (!delivery) return;
        delivery.attempts = record.attempts;
        delivery.nextAttemptAt = record.nextAttemptAt;
        delivery.firstAttemptAt = record.firstAttemptAt;
        delivery.lastError = record.lastError;
      }
    });
    const outbox = new Outbox(log, pending, reportError, records);
    await outbox.maskClearCredentials();
    return outbox;
  }

  /**
   * A journal written before subscriber URLs were masked may hold their
   * credentials: masked in the pending deliveries (the dispatcher takes the
   * real URL from the subscription) and the journal rewritten without them.
   */
  private async maskClearCredentials(): Promise<void> {
    let masked = false;
    for (const { subscriber } of this.pending.values()) {
      if (showsCredentials(subscriber.serviceBaseUrl)) {
        subscriber.serviceBaseUrl = maskCredentials(subscriber.serviceBaseUrl);
        masked = true;
      }
    }
    if (!masked) return;
    await this.log.rewrite([...this.pending.values()].map((delivery) => ({ t: 'add' as const, delivery })));
    this.records = this.pending.size;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Whether this delivery (this run of it) is still pending. */
  holds(delivery: Delivery): boolean {
    return this.pending.get(keyOf(delivery)) === delivery;
  }

  values(): IterableIterator<Delivery> {
    return this.pending.values();
  }

  /** Durable: resolves once every delivery is on disk. */
  async add(deliveries: readonly Delivery[]): Promise<void> {
    (await this.stage(deliveries)).commit();
  }

  /**
   * The first half of `add`, for a write that spans files (a publish: its
   * event line too): resolves once the deliveries are on disk, and they are
   * pending only once committed. Retracting withdraws their lines from the
   * journal, so that the next start does not resume them. Until one or the
   * other, the journal is not compacted (a compaction would move the lines).
   */
  async stage(deliveries: readonly Delivery[]): Promise<StagedWrite> {
    if (deliveries.length === 0) return { commit: () => undefined, retract: async () => undefined };
    const records = deliveries.map((delivery) => ({ t: 'add' as const, delivery }));
    const spans: Array<LineSpan | null> = [];
    this.staged += 1;
    try {
      this.records += deliveries.length;
      await this.log.appendAll(records, (index, span) => (spans[index] = span));
    } catch (error) {
      this.staged -= 1;
      throw error;
    }
    return stagedWrite(
      'staged deliveries',
      () => (this.staged -= 1),
      () => {
        for (const delivery of deliveries) this.pending.set(keyOf(delivery), delivery);
      },
      // A span is null only where a rewrite superseded the line; none runs while deliveries are staged.
      () => this.log.retract(records.flatMap((record, index) => (spans[index] ? [{ span: spans[index]!, record }] : []))),
    );
  }

  rescheduled(delivery: Delivery): void {
    this.journal({
      t: 'retry',
      key: keyOf(delivery),
      attempts: delivery.attempts,
      nextAttemptAt: delivery.nextAttemptAt,
      firstAttemptAt: delivery.firstAttemptAt,
      lastError: delivery.lastError!,
    });
  }

  /** Delivered, or moved to the dead letters. */
  done(delivery: Delivery): void {
    const key = keyOf(delivery);
    if (this.pending.get(key) !== delivery) return;
    this.pending.delete(key);
    this.journal({ t: 'done', key });
    if (this.records > this.pending.size + COMPACT_SLACK && !this.compacting && this.staged === 0) {
      const snapshot = [...this.pending.values()].map((delivery) => ({ t: 'add' as const, delivery }));
      const recordsBefore = this.records;
      this.compacting = this.log
        .rewrite(snapshot)
        .then(() => {
          // The new journal: the snapshot, then whatever was appended while it was written.
          this.records = snapshot.length + (this.records - recordsBefore);
        })
        .catch(this.reportError)
        .finally(() => (this.compacting = null));
    }
  }

  /** Resolves once a compaction in progress, if any, has ended. */
  async compacted(): Promise<void> {
    if (this.compacting) await this.compacting;
  }

  async close(): Promise<void> {
    await this.compacted();
    await this.log.close();
  }

  private journal(record: OutboxRecord): void {
    this.records += 1;
    this.log.appendLazily(record, this.reportError);
  }
}
