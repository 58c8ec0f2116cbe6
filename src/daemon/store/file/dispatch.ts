import { join } from 'node:path';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { DeadLetterFile } from './dead-letters.js';
import { DeliveryRecords } from './delivery-records.js';
import { Outbox } from './outbox.js';
import type { DeadLetterStore, DeliveryPage, DeliveryStore, MatchingDeadLetters, NewAttempt, PendingCount } from '../../dispatch/store.js';
import { CarriedEvent, type DeadLetterFilter, type Delivery, type DeliveryQuery, type DeliveryRecord, type StoredDeadLetter } from '../../dispatch/types.js';
import { EventLog, type EventPosition } from './event-log.js';
import { notACursor } from '../../errors.js';
import type { EventPageQuery, RetentionPolicy } from '../../events/types.js';
import type { ListedEvent } from '../../events/delivery-summary.js';
import type { RecentLimits } from './recent.js';
import type { EventPage, EventStore } from '../../events/store.js';
import { unbounded, type PageBudget } from '../../paging.js';

export interface FileDispatchOptions {
  /** What the event log keeps in memory for listing, beyond each workspace's latest 1,000 (byte budgets). */
  recentMemory?: Omit<RecentLimits, 'perWorkspace'>;
  /** False (the bench's comparison only) keeps no delivery records. */
  recordDeliveries?: boolean;
  /** Events per segment of the event log (default 100,000). */
  segmentEvents?: number;
  /** Journal bytes between two checkpoints of the outbox and of the delivery records. */
  journalCheckpointBytes?: number;
  reportError: (error: unknown) => void;
}

/**
 * The events domain on files: the segmented event log (events/), the outbox
 * journal (outbox.log), the delivery records (deliveries.log) and the dead
 * letters (dead-letters.log), each a class of its own beside this file; these
 * adapters put them behind EventStore, DeliveryStore and DeadLetterStore.
 */
export async function openFileDispatch(dataDir: string, options: FileDispatchOptions): Promise<{
  events: EventStore;
  deliveries: DeliveryStore;
  deadLetters: DeadLetterStore;
  /** Bytes of event JSON the log keeps in memory for listing (a detail of files: PostgreSQL keeps none). */
  recentEventBytes: () => number;
}> {
  const log = await EventLog.open(join(dataDir, 'events'), {
    segmentMaxEvents: options.segmentEvents ?? 100_000,
    recent: { perWorkspace: 1_000, ...(options.recentMemory ?? DEFAULT_RECENT_MEMORY) },
  });
  const { outbox, letters, records } = await openDeliveryFiles(dataDir, options.reportError, options.recordDeliveries ?? true, options.journalCheckpointBytes);
  const deliveries = new FileDeliveryStore(outbox, records, letters);
  return {
    events: new FileEventStore(log, outbox, records, deliveries),
    deliveries,
    deadLetters: new FileDeadLetterStore(letters, outbox, records),
    recentEventBytes: () => log.recentBytes,
  };
}

/**
 * The deliveries' files as a daemon start finds them: the outbox, the dead
 * letters, and the records brought in step with both (after a crash a record
 * may be missing or still say PENDING). Also read by `platform db import`.
 */
export async function openDeliveryFiles(
  dataDir: string,
  reportError: (error: unknown) => void,
  recordDeliveries = true,
  checkpointBytes?: number,
): Promise<{ outbox: Outbox; letters: DeadLetterFile; records: DeliveryRecords }> {
  const outbox = await Outbox.open(join(dataDir, 'outbox.log'), reportError, { checkpointBytes });
  const letters = await DeadLetterFile.open(dataDir, reportError);
  const records = await DeliveryRecords.open(join(dataDir, 'deliveries.log'), reportError, recordDeliveries, checkpointBytes);
  const pending = outbox.startFingerprints();
  // Without records (the bench's comparison) there is nothing to reconcile.
  if (recordDeliveries) records.reconcile(pending, (slots) => outbox.loadRuns(slots), (id) => letters.holdsDelivery(id), Date.now());
  return { outbox, letters, records };
}

/** Bytes of events a listing reads from the log in one synchronous step. */
const SYNC_READ_BYTES = 512 * 1024;

const DEFAULT_RECENT_MEMORY = { bytesPerWorkspace: 4 * 1024 * 1024, bytesTotal: 16 * 1024 * 1024 };

/**
 * The event cursor on files: `segment:occurredAt:id` of the page's last event
 * (the order of the log is segment, then line; the time finds what is older
 * when retention removed that event).
 */
const EVENT_CURSOR = /^(\d{1,9}):(\d{1,15}):([0-9a-f-]{36})$/;

function positionOf(cursor: string): EventPosition {
  const parts = EVENT_CURSOR.exec(cursor);
  if (!parts) throw notACursor();
  return { segment: Number(parts[1]), at: Number(parts[2]), id: parts[3]! };
}

const cursorOf = (position: EventPosition) => `${position.segment}:${position.at}:${position.id}`;

class FileEventStore implements EventStore {
  constructor(
    private readonly log: EventLog,
    private readonly outbox: Outbox,
    private readonly records: DeliveryRecords,
    private readonly deliveries: FileDeliveryStore,
  ) {}

  /**
   * Two files written at once; the event is listed and its deliveries pending
   * only once both are on disk. When either write fails, the one that
   * succeeded is withdrawn before the failure is answered, so that neither
   * this daemon nor its next start holds half a publish (see decisions:
   * "Errors leave nothing behind").
   */
  async publish(event: PlatformEvent, deliveries: readonly Delivery[]): Promise<readonly Delivery[]> {
    const [logged, queued] = await Promise.allSettled([this.log.stage(event), this.outbox.stage(deliveries)]);
    if (logged.status === 'fulfilled' && queued.status === 'fulfilled') {
      const held = queued.value.commit();
      logged.value.commit();
      this.records.created(deliveries);
      if (held.length < deliveries.length) this.deliveries.queuedUnheld();
      return held;
    }
    const written = [logged, queued].flatMap((staged) => (staged.status === 'fulfilled' ? [staged.value] : []));
    // A retraction the disk refuses keeps its log refusing writes until it succeeds (see AppendLog.retract).
    await Promise.allSettled(written.map((staged) => staged.retract()));
    throw logged.status === 'rejected' ? logged.reason : (queued as PromiseRejectedResult).reason;
  }

  /**
   * Read from the log in chunks of SYNC_READ_BYTES (filtered by deliveries, of
   * one batch of events at most), each synchronous, the event loop free
   * between them; each chunk goes on from the last event the one before
   * decided, as a client's next page would (same guarantee).
   */
  async page(workspaceId: string, query: EventPageQuery, policy: RetentionPolicy, now: number, budget = unbounded<ListedEvent>()): Promise<EventPage> {
    let last = query.before === undefined ? undefined : positionOf(query.before);
    for (;;) {
      budget.startChunk(SYNC_READ_BYTES);
      const chunk = this.log.page(workspaceId, { ...query, before: last }, policy, now, budget, (hashes) => this.records.summariesOf(workspaceId, hashes));
      last = chunk.last ?? last;
      const paused = chunk.more && !budget.full && budget.count < query.limit;
      if (!paused) return { more: chunk.more, ...(chunk.more && last ? { last: cursorOf(last) } : {}) };
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async find(workspaceId: string, eventId: string): Promise<PlatformEvent | undefined> {
    return this.log.find(workspaceId, eventId);
  }

  async applyRetention(policy: RetentionPolicy, now: number): Promise<{ removedEvents: number; removedDeliveries: number }> {
    const { removedEvents, removedIds } = await this.log.applyRetention(policy, now);
    const removedDeliveries = await this.records.removeEvents(removedIds);
    return { removedEvents, removedDeliveries };
  }

  async storedCount(): Promise<number> {
    return this.log.storedCount;
  }

  /** The event log closes last: the deliveries' files first, as before. */
  async close(): Promise<void> {
    await this.deliveries.close();
    await this.log.close();
  }
}

/**
 * Pending deliveries in the outbox (an index entry each in memory, the rest
 * on disk): a publish hands the dispatcher at most a few hundred of them (see
 * OutboxOptions.holdAtMost), the others wait for `claim`, which reads them
 * back due first, each subscriber in turn.
 */
class FileDeliveryStore implements DeliveryStore {
  readonly shared = false;
  /** Outbox forgets waiting for their record to be on disk. */
  private readonly writes = new Set<Promise<void>>();
  private wake: () => void = () => undefined;
  private waking = false;

  constructor(
    private readonly outbox: Outbox,
    private readonly records: DeliveryRecords,
    private readonly letters: DeadLetterFile,
  ) {
    outbox.onCompacted(() => this.wake());
  }

  onWork(wake: () => void): void {
    this.wake = wake;
  }

  onLeaseLost(): void {}

  /** A publish left deliveries for a claim: the dispatcher claims them once the publisher has its answer (one wake a turn). */
  queuedUnheld(): void {
    if (this.waking) return;
    this.waking = true;
    setImmediate(() => {
      this.waking = false;
      this.wake();
    });
  }

  async claim(limit: number): Promise<Delivery[]> {
    return this.outbox.claim(limit, Date.now());
  }

  nextDueAt(): number | null {
    return this.outbox.nextDueAt();
  }

  holds(delivery: Delivery): boolean {
    return this.outbox.holds(delivery);
  }

  succeeded(delivery: Delivery, attempt: NewAttempt): void {
    this.records.attempted(delivery.id, attempt, null, 'SUCCEEDED');
    this.outbox.finished(delivery);
    this.doneOnceRecorded(delivery);
  }

  retrying(delivery: Delivery, attempt: NewAttempt): void {
    this.records.attempted(delivery.id, attempt, delivery.nextAttemptAt, 'PENDING');
    this.outbox.rescheduled(delivery);
  }

  async dead(delivery: Delivery, attempt: NewAttempt | null, letter: StoredDeadLetter): Promise<void> {
    if (attempt) this.records.attempted(delivery.id, attempt, null, 'PENDING');
    await this.letters.add(letter);
    this.records.moved(delivery.id, 'DEAD', Date.parse(letter.deadAt));
    this.outbox.finished(delivery);
    this.doneOnceRecorded(delivery);
  }

  /** The delivery waits in the outbox again, for the next claim (or the next start). */
  released(delivery: Delivery): void {
    this.outbox.rescheduled(delivery);
  }

  async settled(): Promise<void> {
    await Promise.all([...this.writes]);
  }

  async pending(): Promise<PendingCount> {
    return { count: this.outbox.size, oldestEnqueuedAt: this.outbox.oldestEnqueuedAt() };
  }

  async ofEvent(workspaceId: string, eventId: string): Promise<DeliveryRecord[]> {
    return this.records.ofEvent(workspaceId, eventId);
  }

  async list(workspaceId: string, query: DeliveryQuery, budget?: PageBudget<DeliveryRecord>): Promise<DeliveryPage> {
    return this.records.list(workspaceId, query, budget);
  }

  async find(workspaceId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    return this.records.find(workspaceId, deliveryId);
  }

  /**
   * As a publish queues deliveries: the outbox line (with its own copy of the
   * event) is durable first, and the record follows without waiting; a crash
   * before it is written leaves the delivery pending, and the next start
   * records it again from the outbox, `redeliveryOf` included.
   */
  async redeliver(delivery: Delivery): Promise<readonly Delivery[]> {
    const held = await this.outbox.add([delivery], true);
    this.records.created([delivery]);
    return held;
  }

  async removeWorkspace(workspaceId: string): Promise<void> {
    await this.records.removeWorkspace(workspaceId);
  }

  /** The records close before the outbox: a record written at the last moment still lets the outbox forget its delivery. */
  async close(): Promise<void> {
    await this.settled();
    await this.records.close();
    await this.outbox.close();
    await this.letters.close();
  }

  /**
   * The outbox forgets a delivery only once its record is on disk (else a
   * crash could lose the record). That wait does not hold the delivery's slot:
   * records are written in groups some milliseconds later. Shutdown waits for
   * the first try of each group; a record that could not be written keeps its
   * delivery in the outbox.
   */
  private doneOnceRecorded(delivery: Delivery): void {
    const recorded = this.records.whenRecorded(delivery.id, () => this.outbox.done(delivery));
    // Records are written in groups: closing waits for each group once.
    if (!recorded || this.writes.has(recorded)) return;
    this.writes.add(recorded);
    void recorded.finally(() => this.writes.delete(recorded));
  }
}

class FileDeadLetterStore implements DeadLetterStore {
  /** Letters being replayed now: a second replay of one at the same moment leaves it out. */
  private readonly replaying = new Set<string>();

  constructor(
    private readonly letters: DeadLetterFile,
    private readonly outbox: Outbox,
    private readonly records: DeliveryRecords,
  ) {}

  async count(): Promise<number> {
    return this.letters.size;
  }

  async get(id: string): Promise<StoredDeadLetter> {
    return this.letters.get(id);
  }

  async list(filter: DeadLetterFilter, page: { limit: number; offset: number }, budget = unbounded<StoredDeadLetter>()): Promise<{ items: StoredDeadLetter[]; total: number }> {
    return this.letters.list(filter, page, budget);
  }

  async matchingIds(filter: DeadLetterFilter, after: string | null, limit: number): Promise<MatchingDeadLetters> {
    return this.letters.matchingIds(filter, after, limit);
  }

  async countBySubscription(filter: DeadLetterFilter): Promise<Map<string | null, number>> {
    return this.letters.countBySubscription(filter);
  }

  async replay(ids: readonly string[], now: number): Promise<Delivery[]> {
    const letters = ids.filter((id) => this.letters.has(id) && !this.replaying.has(id)).map((id) => this.letters.get(id));
    if (letters.length === 0) return [];
    for (const letter of letters) this.replaying.add(letter.id);
    try {
      const deliveries = letters.map((letter) => replayOf(letter, now));
      // Outbox first: a crash in between leaves a delivery both pending and dead, never neither.
      await this.outbox.add(deliveries, true);
      await this.records.movedDurably(deliveries.map((delivery) => delivery.id), 'PENDING', now);
      await this.letters.remove(letters.map((letter) => letter.id));
      return deliveries;
    } finally {
      for (const letter of letters) this.replaying.delete(letter.id);
    }
  }

  async discard(ids: readonly string[], now: number): Promise<number> {
    const letters = ids.filter((id) => this.letters.has(id) && !this.replaying.has(id)).map((id) => this.letters.get(id));
    await this.letters.remove(letters.map((letter) => letter.id));
    await this.records.movedDurably(letters.map((letter) => letter.deliveryId), 'DISCARDED', now);
    return letters.length;
  }

  async state(id: string): Promise<'dead' | 'queued' | 'gone'> {
    if (this.letters.has(id)) return 'dead';
    return this.outbox.replaysLetter(id) ? 'queued' : 'gone';
  }

  /** In batches of REMOVED_AT_ONCE, each removed before the next is read. */
  async removeWorkspace(workspaceId: string): Promise<void> {
    let after: string | null = null;
    do {
      const batch = this.letters.matchingIds({ workspaceId }, after, REMOVED_AT_ONCE);
      await this.letters.remove(batch.letters.map((letter) => letter.id));
      after = batch.next;
    } while (after !== null);
  }
}

/** Dead letters of a deleted workspace removed with one line of the log. */
const REMOVED_AT_ONCE = 1_000;

/** A dead letter queued again to its one subscriber, under its delivery id, with a fresh attempt count. */
export function replayOf(letter: StoredDeadLetter, now: number): Delivery {
  return {
    id: letter.deliveryId,
    event: CarriedEvent.of(letter.event),
    depth: letter.depth,
    subscriber: letter.subscriber,
    attempts: 0,
    nextAttemptAt: now,
    enqueuedAt: new Date(now).toISOString(),
    firstAttemptAt: null,
    lastError: null,
    replayCount: letter.replayCount + 1,
    deadLetterId: letter.id,
  };
}
