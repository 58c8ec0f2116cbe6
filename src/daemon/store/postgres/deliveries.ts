import { DueTimes } from '../../dispatch/schedule.js';
import type { DeliveryPage, DeliveryStore, NewAttempt, PendingCount } from '../../dispatch/store.js';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { CarriedEvent, type Delivery, type DeliveryAttempt, type DeliveryError, type DeliveryQuery, type DeliveryRecord, type DeliveryStatus, type StoredDeadLetter } from '../../dispatch/types.js';
import { describeFault } from '../../errors.js';
import { fillInBatches, unbounded } from '../../paging.js';
import type { ChangeFeed } from './change-feed.js';
import type { Database } from './database.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { deliveryColumns, deliveryOf, recordOf, type DeliveryAttemptRow, type DeliveryRow, type EventRow } from './rows.js';
import { CLAIM_DELIVERIES } from './sql/claim-deliveries.js';
import { COUNT_PENDING } from './sql/count-pending.js';
import { DELIVERIES_OF_EVENT } from './sql/deliveries-of-event.js';
import { FIND_DELIVERY } from './sql/find-delivery.js';
import { FIND_EVENT } from './sql/find-event.js';
import { INSERT_REDELIVERY } from './sql/insert-redelivery.js';
import { LIST_DELIVERIES } from './sql/list-deliveries.js';
import { READ_ATTEMPTS } from './sql/read-attempts.js';
import { DELETE_WORKSPACE_DELIVERIES, DELETE_WORKSPACE_EVENTS } from './sql/remove-workspace.js';
import { WRITE_RESULTS } from './sql/write-results.js';

/** The change feed's topic on which daemons wake each other for deliveries no daemon holds. */
export const WORK_TOPIC = 'deliveries';
/** Counts for /metrics and the status page are read at most this often. */
export const COUNT_CACHE_MS = 1_000;

export interface PostgresDeliveryOptions {
  logError: (message: string) => void;
  /** A delivery became a dead letter here (the dead-letter count must show it at once). */
  deadLettersChanged: () => void;
}

/** Queued results of attempts: written together, each releasing its delivery's lease. */
interface Result {
  id: string;
  status: DeliveryStatus;
  attempt: NewAttempt | null;
  due_at: string;
  run_attempts: number;
  first_attempt_at: string | null;
  last_error: DeliveryError | null;
  completed_at: string | null;
  dead_letter_id: string | null;
  dead_at: string | null;
  written: { resolve: () => void; reject: (error: unknown) => void };
}

/**
 * A claimed delivery comes with its event up to this size; a larger one is
 * read when it is sent, so that a backlog of large events retried against a
 * subscriber that is down costs no reads.
 */
const CLAIMED_WITH_EVENT_BYTES = 16 * 1024;

const jsonText = (value: unknown) => (value === null ? null : JSON.stringify(value));

/**
 * The deliveries on PostgreSQL (see decisions: "Events and dispatch on
 * PostgreSQL"): the queue every daemon claims from, each delivery under a
 * lease the lease keeper renews while this daemon holds it, and the records.
 */
export class PostgresDeliveryStore implements DeliveryStore {
  readonly shared = true;
  private results: Result[] = [];
  private writing: Promise<void> | null = null;
  private wake: () => void = () => undefined;
  /** When the retries this daemon released fall due: it claims then (other daemons may be first). */
  private readonly retriesDue = new DueTimes();
  private pendingCount: { value: PendingCount; readAt: number; reading: Promise<PendingCount> | null } = {
    value: { count: 0, oldestEnqueuedAt: null },
    readAt: 0,
    reading: null,
  };

  constructor(
    private readonly database: Database,
    feed: ChangeFeed,
    private readonly leases: LeaseKeeper,
    private readonly options: PostgresDeliveryOptions,
  ) {
    feed.subscribe(WORK_TOPIC, () => this.wake());
    leases.whileWriting((id) => this.results.some((result) => result.id === id));
  }

  onWork(wake: () => void): void {
    this.wake = wake;
  }

  onLeaseLost(lost: (deliveryId: string) => void): void {
    this.leases.onLost(lost);
  }

  async claim(limit: number): Promise<Delivery[]> {
    const sentAt = performance.now();
    const { rows } = await this.database.query<DeliveryRow & { event: PlatformEvent | null }>(CLAIM_DELIVERIES, [
      this.leases.owner,
      this.leases.leaseMs,
      limit,
      CLAIMED_WITH_EVENT_BYTES,
    ]);
    return rows.map((row) => this.leases.hold(deliveryOf(row, () => this.bodyOf(row.workspace_id, row.event_id)), sentAt));
  }

  /** The body of a large event, read when its delivery is sent (see CLAIM_DELIVERIES). */
  private async bodyOf(workspaceId: string, eventId: string): Promise<Buffer> {
    const { rows } = await this.database.query<Pick<EventRow, 'event'>>(FIND_EVENT, [workspaceId, eventId]);
    if (!rows[0]) throw new Error(`event ${eventId} is no longer stored`);
    return CarriedEvent.of(rows[0].event).body();
  }

  nextDueAt(): number | null {
    return this.retriesDue.next(Date.now());
  }

  holds(delivery: Delivery): boolean {
    return this.leases.holds(delivery);
  }

  succeeded(delivery: Delivery, attempt: NewAttempt): void {
    void this.finished(delivery, 'SUCCEEDED', attempt, null).catch(this.reportLost(delivery.id));
  }

  retrying(delivery: Delivery, attempt: NewAttempt): void {
    this.retriesDue.add(delivery.nextAttemptAt);
    void this.finished(delivery, 'PENDING', attempt, null).catch(this.reportLost(delivery.id));
  }

  async dead(delivery: Delivery, attempt: NewAttempt | null, letter: StoredDeadLetter): Promise<void> {
    await this.finished(delivery, 'DEAD', attempt, letter);
    this.options.deadLettersChanged();
  }

  released(delivery: Delivery): void {
    this.retriesDue.add(delivery.nextAttemptAt);
    if (!this.leases.letGo(delivery)) return;
    this.leases.release([delivery.id]).catch(this.reportLost(delivery.id));
  }

  async settled(): Promise<void> {
    await this.writing;
    // What this daemon still holds and will not attempt now (it stops): free for others at once.
    await this.leases.releaseAll();
  }

  /** Read at most once a second for every caller (the status page, each scrape): one read serves all who ask meanwhile. */
  pending(): Promise<PendingCount> {
    const cached = this.pendingCount;
    if (Date.now() - cached.readAt < COUNT_CACHE_MS) return Promise.resolve(cached.value);
    cached.reading ??= this.database
      .query<{ count: string; oldest: Date | null }>(COUNT_PENDING)
      .then(({ rows }) => {
        cached.value = { count: Number(rows[0]!.count), oldestEnqueuedAt: rows[0]!.oldest?.getTime() ?? null };
        cached.readAt = Date.now();
        return cached.value;
      })
      .catch((error: unknown) => {
        // The gauge and the status page keep the last count while the database does not answer (ready says why).
        this.options.logError(`could not count pending deliveries: ${describeFault(error)}`);
        return cached.value;
      })
      .finally(() => (cached.reading = null));
    return cached.reading;
  }

  async ofEvent(workspaceId: string, eventId: string): Promise<DeliveryRecord[]> {
    const { rows } = await this.database.query<DeliveryRow>(DELIVERIES_OF_EVENT, [workspaceId, eventId]);
    return this.withAttempts(rows);
  }

  async find(workspaceId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    const { rows } = await this.database.query<DeliveryRow>(FIND_DELIVERY, [workspaceId, deliveryId]);
    return (await this.withAttempts(rows))[0];
  }

  /** Leased to this daemon as it is inserted, like a delivery it publishes and runs itself. */
  async redeliver(delivery: Delivery): Promise<readonly Delivery[]> {
    const sentAt = performance.now();
    await this.database.query(INSERT_REDELIVERY, [JSON.stringify(deliveryColumns(delivery)), delivery.redeliveryOf ?? null, this.leases.owner, this.leases.leaseMs]);
    return [this.leases.hold(delivery, sentAt)];
  }

  async list(workspaceId: string, query: DeliveryQuery, budget = unbounded<DeliveryRecord>()): Promise<DeliveryPage> {
    // In batches sized to the budget, each with its attempts.
    const { items, last, more } = await fillInBatches(
      query.limit,
      budget,
      async (after: { seq: number; record: DeliveryRecord } | undefined, count) => {
        const { rows } = await this.database.query<DeliveryRow>(LIST_DELIVERIES, [
          workspaceId,
          query.status ?? null,
          query.subscriptionId ?? null,
          query.eventKey ?? null,
          query.since === undefined ? null : new Date(query.since).toISOString(),
          query.until === undefined ? null : new Date(query.until).toISOString(),
          after?.seq ?? query.before ?? null,
          count,
        ]);
        const records = await this.withAttempts(rows);
        return records.map((record, index) => ({ seq: Number(rows[index]!.seq), record }));
      },
      (row) => row.record,
    );
    return { items, lastSeq: last?.seq ?? null, more };
  }

  async removeWorkspace(workspaceId: string): Promise<void> {
    await this.database.transaction(async (tx) => {
      await tx.query(DELETE_WORKSPACE_DELIVERIES, [workspaceId]);
      await tx.query(DELETE_WORKSPACE_EVENTS, [workspaceId]);
    });
  }

  /** Once every result handed over is written. */
  async close(): Promise<void> {
    await this.writing;
  }

  private finished(delivery: Delivery, status: DeliveryStatus, attempt: NewAttempt | null, letter: StoredDeadLetter | null): Promise<void> {
    this.leases.letGo(delivery);
    const now = new Date().toISOString();
    const written = new Promise<void>((resolve, reject) => {
      this.results.push({
        id: delivery.id,
        status,
        attempt,
        due_at: new Date(delivery.nextAttemptAt).toISOString(),
        run_attempts: delivery.attempts,
        first_attempt_at: delivery.firstAttemptAt,
        last_error: letter?.lastError ?? delivery.lastError,
        completed_at: status === 'PENDING' ? null : (letter?.deadAt ?? now),
        dead_letter_id: letter?.id ?? null,
        dead_at: letter?.deadAt ?? null,
        written: { resolve, reject },
      });
    });
    this.writing ??= this.writeResults();
    return written;
  }

  /** Results queued meanwhile go in one statement; each releases its lease (only this daemon's lease: one taken over is left alone). */
  private async writeResults(): Promise<void> {
    while (this.results.length > 0) {
      const group = this.results;
      this.results = [];
      try {
        await this.database.query(
          WRITE_RESULTS,
          // json within json_to_recordset is unescaped on the way (U+0000 would fail): nested as strings, cast back.
          [JSON.stringify(group.map(({ written: _written, attempt, last_error, ...result }) => ({ ...result, attempt: jsonText(attempt), last_error: jsonText(last_error) }))), this.leases.owner],
        );
        for (const result of group) result.written.resolve();
      } catch (error) {
        for (const result of group) result.written.reject(error);
      }
    }
    this.writing = null;
  }

  private reportLost(id: string) {
    // Not written: the lease lapses and the delivery is attempted again (at least once).
    return (error: unknown) => this.options.logError(`could not record the attempt of delivery ${id}: ${describeFault(error)}`);
  }

  private async withAttempts(rows: DeliveryRow[]): Promise<DeliveryRecord[]> {
    if (rows.length === 0) return [];
    const { rows: attempts } = await this.database.query<DeliveryAttemptRow>(READ_ATTEMPTS, [rows.map((row) => row.id)]);
    const byDelivery = new Map<string, DeliveryAttempt[]>();
    for (const { delivery_id, number, attempt } of attempts) {
      const list = byDelivery.get(delivery_id) ?? [];
      list.push({ number, ...attempt });
      byDelivery.set(delivery_id, list);
    }
    return rows.map((row) => recordOf(row, byDelivery.get(row.id) ?? []));
  }
}
