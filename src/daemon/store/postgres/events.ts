import { setTimeout as sleep } from 'node:timers/promises';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import type { Delivery } from '../../dispatch/types.js';
import { describeFault, notACursor, unavailable } from '../../errors.js';
import type { EventPage, EventStore } from '../../events/store.js';
import type { EventPageQuery, RetentionPolicy } from '../../events/types.js';
import type { DeliverySummary, ListedEvent } from '../../events/delivery-summary.js';
import { fillBySize, unbounded } from '../../paging.js';
import type { ChangeFeed } from './change-feed.js';
import { lostMidStatement, type Database } from './database.js';
import { WORK_TOPIC } from './deliveries.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { deliveryColumns, type EventRow } from './rows.js';
import { DELETE_DELIVERIES_OF_EVENTS, DELETE_EXPIRED_EVENTS } from './sql/apply-retention.js';
import { COUNT_EVENTS } from './sql/count-events.js';
import { FIND_EVENT } from './sql/find-event.js';
import { PAGE_EVENTS } from './sql/page-events.js';
import { PUBLISH_EVENTS } from './sql/publish-events.js';
import { READ_EVENTS } from './sql/read-events.js';

export interface PostgresEventOptions {
  /** External deliveries a daemon takes for itself as it publishes them; beyond, they go to the shared queue for any daemon. */
  holdAtMost: number;
  logError: (message: string) => void;
}

/** Other daemons are woken at most this often: a commit that notifies serialises every commit of the cluster. */
const NOTIFY_INTERVAL_MS = 50;
/** Waits before each new run of a publish whose connection was lost (see settledPublish). */
const PUBLISH_RETRIES_MS = [50, 250, 1_000];

/** Where a page stopped: the seq of its last event (bigint, as text), which the listing's ORDER BY pages on. */
const EVENT_CURSOR = /^-?\d{1,19}$/;
const SEQ_RANGE = { least: -(2n ** 63n), most: 2n ** 63n - 1n };

function seqOf(cursor: string): string {
  if (!EVENT_CURSOR.test(cursor)) throw notACursor();
  const seq = BigInt(cursor);
  if (seq < SEQ_RANGE.least || seq > SEQ_RANGE.most) throw notACursor();
  return cursor;
}

interface Publication {
  event: PlatformEvent;
  deliveries: readonly Delivery[];
  /** With the deliveries this daemon holds (leased to it as they were inserted). */
  resolve: (held: readonly Delivery[]) => void;
  reject: (error: unknown) => void;
}

/**
 * The event log on PostgreSQL (see decisions: "Events and dispatch on
 * PostgreSQL"). A publish inserts the event with its deliveries, leasing to
 * this daemon those it runs (the lease keeper holds them from then on).
 */
export class PostgresEventStore implements EventStore {
  private publications: Publication[] = [];
  private publishing: Promise<void> | null = null;
  private lastNotify = 0;
  private notifyTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
    private readonly leases: LeaseKeeper,
    private readonly options: PostgresEventOptions,
  ) {}

  // Publishing: concurrent publishes share one statement (one commit, one WAL flush).

  publish(event: PlatformEvent, deliveries: readonly Delivery[]): Promise<readonly Delivery[]> {
    const published = new Promise<readonly Delivery[]>((resolve, reject) => this.publications.push({ event, deliveries, resolve, reject }));
    this.publishing ??= this.publishGroups();
    return published;
  }

  async page(workspaceId: string, query: EventPageQuery, policy: RetentionPolicy, now: number, budget = unbounded<ListedEvent>()): Promise<EventPage> {
    const since = Math.max(now - policy.maxAgeMs, query.since ?? 0);
    const before = query.before === undefined ? null : seqOf(query.before);
    // The page's rows and their sizes first, then only the events that fit, in batches: a page of
    // large events never has them all in memory.
    const { last, more } = await fillBySize(
      query.limit,
      budget,
      async (after: string | undefined, count) => {
        const { rows } = await this.database.query<{ key: string; bytes: number }>(PAGE_EVENTS, [
          workspaceId,
          new Date(since).toISOString(),
          query.until === undefined ? null : new Date(query.until).toISOString(),
          query.eventKey ?? null,
          count,
          after ?? before,
          policy.maxPerWorkspace,
          query.deliveries ?? null,
        ]);
        return rows;
      },
      async (keys) => (await this.database.query<Pick<EventRow, 'seq' | 'event'> & DeliverySummary>(READ_EVENTS, [keys])).rows,
      ({ event, delivered, pending, dead, discarded }): ListedEvent => ({ ...event, deliverySummary: { delivered, pending, dead, discarded } }),
    );
    return { more, ...(more && last ? { last: last.seq } : {}) };
  }

  async find(workspaceId: string, eventId: string): Promise<PlatformEvent | undefined> {
    const { rows } = await this.database.query<Pick<EventRow, 'event'>>(FIND_EVENT, [workspaceId, eventId]);
    return rows[0]?.event;
  }

  /**
   * One daemon at a time runs it: the job's lock (PostgresJobLock). A delivery
   * still PENDING or DEAD keeps its event (hidden from listings, which apply the
   * policy themselves): the row is the queue entry and the dead letter, which on
   * files outlive the event in their own files. A later run removes the event
   * once they end.
   */
  applyRetention(policy: RetentionPolicy, now: number): Promise<{ removedEvents: number; removedDeliveries: number }> {
    return this.database.transaction(async (tx) => {
      const { rows } = await tx.query<Pick<EventRow, 'id'>>(DELETE_EXPIRED_EVENTS, [policy.maxPerWorkspace, new Date(now - policy.maxAgeMs).toISOString()]);
      const removed = await tx.query(DELETE_DELIVERIES_OF_EVENTS, [rows.map((row) => row.id)]);
      return { removedEvents: rows.length, removedDeliveries: removed.rowCount ?? 0 };
    });
  }

  async storedCount(): Promise<number> {
    const { rows } = await this.database.query<{ count: string }>(COUNT_EVENTS);
    return Number(rows[0]!.count);
  }

  /** Once the publishes under way are answered; other daemons are no longer woken. */
  async close(): Promise<void> {
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    await this.publishing;
  }

  private async publishGroups(): Promise<void> {
    while (this.publications.length > 0) {
      const group = this.publications;
      this.publications = [];
      const leased = new Set<Delivery>();
      let shared = false;
      const sentAt = performance.now();
      const rows = group.flatMap(({ deliveries }) =>
        deliveries.map((delivery) => {
          // In-process deliveries run where they were published (synchronous handlers before the answer).
          const hold = delivery.subscriber.kind === 'IN_PROCESS' || this.leases.count + leased.size < this.options.holdAtMost;
          if (hold) leased.add(delivery);
          else shared = true;
          return { ...deliveryColumns(delivery), leased: hold };
        }),
      );
      const values = [
        JSON.stringify(group.map(({ event }) => ({ workspace_id: event.tenantId, id: event.id, event_key: event.eventKey, occurred_at: event.occurredAt, event: JSON.stringify(event) }))),
        JSON.stringify(rows),
        this.leases.owner,
        this.leases.leaseMs,
      ];
      try {
        await this.settledPublish(values);
      } catch (error) {
        for (const publication of group) publication.reject(error);
        continue;
      }
      for (const delivery of leased) this.leases.hold(delivery, sentAt);
      for (const publication of group) publication.resolve(publication.deliveries.filter((delivery) => leased.has(delivery)));
      if (shared) this.notifyPeers();
    }
    this.publishing = null;
  }

  /**
   * A connection lost during the statement leaves its outcome unknown: it may
   * have committed with only its answer lost. Publishers must be answered
   * with what happened (an error means nothing was recorded), so the
   * statement runs again, a few times while the database stays out of reach:
   * it inserts whatever the lost run did not commit, and nothing twice. When
   * none of those runs gets through, the 503 says the event may have been
   * recorded.
   */
  private async settledPublish(values: unknown[]): Promise<void> {
    try {
      await this.database.query(PUBLISH_EVENTS, values);
      return;
    } catch (error) {
      if (!lostMidStatement(error)) throw error;
    }
    for (const wait of PUBLISH_RETRIES_MS) {
      await sleep(wait);
      try {
        await this.database.query(PUBLISH_EVENTS, values);
        return;
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'UNAVAILABLE') throw error;
      }
    }
    throw unavailable('the database was lost while the event was being recorded; it may have been recorded: read the events back before publishing again');
  }

  /** Wakes idle daemons, outside any publish's commit, at most once per NOTIFY_INTERVAL_MS. */
  private notifyPeers(): void {
    if (this.notifyTimer) return;
    const send = () => {
      this.notifyTimer = null;
      this.lastNotify = Date.now();
      this.feed.notify(this.database, WORK_TOPIC, 'work').catch((error: unknown) => this.options.logError(`could not wake other daemons: ${describeFault(error)}`));
    };
    const wait = this.lastNotify + NOTIFY_INTERVAL_MS - Date.now();
    if (wait <= 0) send();
    else {
      this.notifyTimer = setTimeout(send, wait);
      this.notifyTimer.unref();
    }
  }
}
