import { setTimeout as sleep } from 'node:timers/promises';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import type { DeadLetterStore, DeliveryPage, DeliveryStore, NewAttempt, PendingCount } from '../../dispatch/store.js';
import type { DeadLetterFilter, Delivery, DeliveryAttempt, DeliveryError, DeliveryQuery, DeliveryRecord, DeliveryStatus, StoredDeadLetter } from '../../dispatch/types.js';
import { describeFault, notFound, unavailable } from '../../errors.js';
import type { EventPageQuery, RetentionPolicy } from '../../events/types.js';
import type { EventPage, EventStore } from '../../events/store.js';
import { DueTimes } from '../../dispatch/schedule.js';
import { fillBySize, fillInBatches, unbounded } from '../../paging.js';
import type { SubscriberKind } from '../../workspaces/types.js';
import type { ChangeFeed } from './change-feed.js';
import { lostMidStatement, qualified, type Database, type Prepared } from './database.js';

export interface PostgresDispatchOptions {
  /** PLATFORM_DELIVERY_LEASE: how long a claimed delivery stays this daemon's without a renewal. */
  leaseMs: number;
  /** External deliveries a daemon takes for itself as it publishes them; beyond, they go to the shared queue for any daemon. */
  holdAtMost: number;
  logError: (message: string) => void;
}

/** Other daemons are woken at most this often: a commit that notifies serialises every commit of the cluster. */
const NOTIFY_INTERVAL_MS = 50;
/** Waits before each new run of a publish whose connection was lost (see settledPublish). */
const PUBLISH_RETRIES_MS = [50, 250, 1_000];
/** Counts for /metrics and the status page are read at most this often. */
const COUNT_CACHE_MS = 1_000;
const TOPIC = 'deliveries';

/** The columns of DeliveryRow, in statements that are prepared (no `*` there). */
const DELIVERY_COLUMNS = `seq, id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth, status,
  run_attempts, replay_count, due_at, created_at, enqueued_at, completed_at, first_attempt_at, last_error, dead_letter_id, dead_at`;

/**
 * Publishes a group of events with their deliveries in one statement. Ids are
 * made by the daemon, so running it again after a lost answer inserts only
 * what the first run did not commit (see publishGroups).
 */
const PUBLISH: Prepared = {
  name: 'publish-events',
  text: `WITH published AS (
           INSERT INTO events (workspace_id, id, event_key, occurred_at, event)
           SELECT workspace_id, id, event_key, occurred_at, event::json
           FROM json_to_recordset($1::json) AS e(workspace_id text, id uuid, event_key text, occurred_at timestamptz, event text)
           ON CONFLICT (id) DO NOTHING
         )
         INSERT INTO deliveries (id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url,
                                 depth, status, due_at, created_at, enqueued_at, lease_owner, lease_until)
         SELECT id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth, 'PENDING',
                due_at, enqueued_at, enqueued_at,
                CASE WHEN leased THEN $3::uuid END, CASE WHEN leased THEN now() + $4 * interval '1 millisecond' END
         FROM json_to_recordset($2::json) AS d(id text, workspace_id text, event_id uuid, event_key text, subscription_id text,
              extension_key text, kind text, service_base_url text, depth integer, due_at timestamptz, enqueued_at timestamptz, leased boolean)
         ON CONFLICT (id) DO NOTHING`,
};

/** Due deliveries no daemon holds, leased to this one, with their events. */
const CLAIM: Prepared = {
  name: 'claim-deliveries',
  text: `WITH claimed AS (
           UPDATE deliveries SET lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond'
           WHERE id IN (
             SELECT id FROM deliveries
             WHERE status = 'PENDING' AND due_at <= now() AND (lease_until IS NULL OR lease_until < now())
             ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED
           )
           RETURNING ${DELIVERY_COLUMNS}
         )
         SELECT ${qualified(DELIVERY_COLUMNS, 'claimed')}, events.event FROM claimed JOIN events ON events.id = claimed.event_id`,
};

const RENEW: Prepared = {
  name: 'renew-delivery-leases',
  text: `UPDATE deliveries SET lease_until = now() + $3 * interval '1 millisecond'
         WHERE id = ANY($1::text[]) AND lease_owner = $2 AND status = 'PENDING' RETURNING id`,
};

/** Results of attempts, each releasing its lease (only this daemon's lease: one taken over is left alone). */
const WRITE_RESULTS: Prepared = {
  name: 'write-delivery-results',
  text: `WITH r AS (
           SELECT id, status, attempt::json, due_at, run_attempts, first_attempt_at, last_error::json, completed_at, dead_letter_id, dead_at
           FROM json_to_recordset($1::json) AS r(id text, status text, attempt text, due_at timestamptz, run_attempts integer,
             first_attempt_at timestamptz, last_error text, completed_at timestamptz, dead_letter_id uuid, dead_at timestamptz)
         ), changed AS (
           UPDATE deliveries d SET status = r.status, due_at = r.due_at, run_attempts = r.run_attempts,
             first_attempt_at = r.first_attempt_at, last_error = r.last_error, completed_at = r.completed_at,
             dead_letter_id = coalesce(r.dead_letter_id, d.dead_letter_id), dead_at = r.dead_at,
             attempt_count = d.attempt_count + (r.attempt IS NOT NULL)::integer, lease_owner = NULL, lease_until = NULL
           FROM r WHERE d.id = r.id AND d.lease_owner = $2 AND d.status = 'PENDING'
           RETURNING d.id, d.attempt_count
         )
         INSERT INTO delivery_attempts (delivery_id, number, attempt)
         SELECT changed.id, changed.attempt_count, r.attempt FROM changed JOIN r ON r.id = changed.id WHERE r.attempt IS NOT NULL`,
};

interface DeliveryRow {
  seq: string;
  id: string;
  workspace_id: string;
  event_id: string;
  event_key: string;
  subscription_id: string | null;
  extension_key: string;
  kind: SubscriberKind;
  service_base_url: string | null;
  depth: number;
  status: DeliveryStatus;
  run_attempts: number;
  replay_count: number;
  due_at: Date;
  created_at: Date;
  enqueued_at: Date;
  completed_at: Date | null;
  first_attempt_at: Date | null;
  last_error: DeliveryError | null;
  dead_letter_id: string | null;
  dead_at: Date | null;
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

interface Publication {
  event: PlatformEvent;
  deliveries: readonly Delivery[];
  /** With the deliveries this daemon holds (leased to it as they were inserted). */
  resolve: (held: readonly Delivery[]) => void;
  reject: (error: unknown) => void;
}

const jsonText = (value: unknown) => (value === null ? null : JSON.stringify(value));
const iso = (date: Date | null) => (date === null ? null : date.toISOString());

/**
 * The events domain on PostgreSQL (see decisions: "Events and dispatch on
 * PostgreSQL"). One object per daemon holds the deliveries leased to it, so
 * that publishing, claiming, replaying and the lease renewal share that set.
 */
export class PostgresDispatch {
  readonly events: EventStore;
  readonly deliveries: DeliveryStore;
  readonly deadLetters: DeadLetterStore;
  /** Deliveries leased to this daemon, by id: renewed while held. */
  private readonly held = new Map<string, Delivery>();
  /**
   * Until when (performance.now()) each held delivery's lease surely lasts: from the moment
   * the statement that set it was sent, the database's now() being later.
   */
  private readonly leaseEnds = new WeakMap<Delivery, number>();
  private readonly renewal: NodeJS.Timeout;
  private readonly expiry: NodeJS.Timeout;
  private readonly expiryMargin: number;
  private lost: (deliveryId: string) => void = () => undefined;
  private publications: Publication[] = [];
  private publishing: Promise<void> | null = null;
  private results: Result[] = [];
  private writing: Promise<void> | null = null;
  private lastNotify = 0;
  private notifyTimer: NodeJS.Timeout | null = null;
  private wake: () => void = () => undefined;
  /** When the retries this daemon released fall due: it claims then (other daemons may be first). */
  private readonly retriesDue = new DueTimes();
  private pendingCount: { value: PendingCount; readAt: number; reading: Promise<PendingCount> | null } = {
    value: { count: 0, oldestEnqueuedAt: null },
    readAt: 0,
    reading: null,
  };
  /** `changes`: dead letters this daemon made, replayed or discarded; a count read across one is not kept. */
  private deadCount = { count: 0, readAt: 0, changes: 0 };

  constructor(
    private readonly database: Database,
    private readonly feed: ChangeFeed,
    private readonly options: PostgresDispatchOptions,
  ) {
    this.renewal = setInterval(() => void this.renew(), Math.max(100, options.leaseMs / 3));
    this.renewal.unref();
    this.expiryMargin = Math.max(50, options.leaseMs / 10);
    this.expiry = setInterval(() => this.letLapsingGo(), this.expiryMargin);
    this.expiry.unref();
    feed.subscribe(TOPIC, () => this.wake());
    this.events = this.eventStore();
    this.deliveries = this.deliveryStore();
    this.deadLetters = this.deadLetterStore();
  }

  private get owner(): string {
    return this.database.instanceId;
  }

  // Publishing: concurrent publishes share one statement (one commit, one WAL flush).

  private publish(event: PlatformEvent, deliveries: readonly Delivery[]): Promise<readonly Delivery[]> {
    const published = new Promise<readonly Delivery[]>((resolve, reject) => this.publications.push({ event, deliveries, resolve, reject }));
    this.publishing ??= this.publishGroups();
    return published;
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
          const hold = delivery.subscriber.kind === 'IN_PROCESS' || this.held.size + leased.size < this.options.holdAtMost;
          if (hold) leased.add(delivery);
          else shared = true;
          return { ...deliveryColumns(delivery), leased: hold };
        }),
      );
      const values = [
        JSON.stringify(group.map(({ event }) => ({ workspace_id: event.tenantId, id: event.id, event_key: event.eventKey, occurred_at: event.occurredAt, event: JSON.stringify(event) }))),
        JSON.stringify(rows),
        this.owner,
        this.options.leaseMs,
      ];
      try {
        await this.settledPublish(values);
      } catch (error) {
        for (const publication of group) publication.reject(error);
        continue;
      }
      for (const delivery of leased) this.hold(delivery, sentAt);
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
      await this.database.query(PUBLISH, values);
      return;
    } catch (error) {
      if (!lostMidStatement(error)) throw error;
    }
    for (const wait of PUBLISH_RETRIES_MS) {
      await sleep(wait);
      try {
        await this.database.query(PUBLISH, values);
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
      this.feed.notify(this.database, TOPIC, 'work').catch((error: unknown) => this.options.logError(`could not wake other daemons: ${describeFault(error)}`));
    };
    const wait = this.lastNotify + NOTIFY_INTERVAL_MS - Date.now();
    if (wait <= 0) send();
    else {
      this.notifyTimer = setTimeout(send, wait);
      this.notifyTimer.unref();
    }
  }

  // Claiming, leases and results

  private async claim(limit: number): Promise<Delivery[]> {
    const sentAt = performance.now();
    const { rows } = await this.database.query<DeliveryRow & { event: PlatformEvent }>(CLAIM, [this.owner, this.options.leaseMs, limit]);
    return rows.map((row) => this.hold(deliveryOf(row, row.event), sentAt));
  }

  private hold(delivery: Delivery, leasedAt: number): Delivery {
    this.held.set(delivery.id, delivery);
    this.leaseEnds.set(delivery, leasedAt + this.options.leaseMs);
    return delivery;
  }

  /**
   * Lets go of held deliveries whose lease may lapse before the next look (renewals failed:
   * the database did not answer): once it lapses another daemon may claim one, so an attempt
   * in flight ends and none starts here.
   */
  private letLapsingGo(): void {
    const soon = performance.now() + this.expiryMargin;
    let given = 0;
    for (const [id, delivery] of this.held) {
      if ((this.leaseEnds.get(delivery) ?? 0) > soon) continue;
      this.held.delete(id);
      this.lost(id);
      given += 1;
    }
    if (given > 0) this.options.logError(`let go of ${given} deliveries whose lease could not be renewed in time (other daemons may take them)`);
  }

  /** Renews the lease of every delivery held; one another daemon took over (this one stalled past its lease) is let go. */
  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const ids = [...this.held.keys()];
    const sentAt = performance.now();
    try {
      const { rows } = await this.database.query<{ id: string }>(RENEW, [ids, this.owner, this.options.leaseMs]);
      const kept = new Set(rows.map((row) => row.id));
      for (const id of ids) {
        const delivery = this.held.get(id);
        if (!delivery) continue;
        if (kept.has(id)) this.leaseEnds.set(delivery, sentAt + this.options.leaseMs);
        else if (!this.resultQueued(id)) {
          this.held.delete(id);
          this.lost(id);
        }
      }
    } catch (error) {
      this.options.logError(`could not renew delivery leases: ${describeFault(error)}`);
    }
  }

  /**
   * The dead-letter count is cached for a second, but what this daemon changed itself
   * counts at once: a console re-reading the status on each stream item must see it.
   */
  private deadLettersChanged(): void {
    this.deadCount = { count: 0, readAt: 0, changes: this.deadCount.changes + 1 };
  }

  private resultQueued(id: string): boolean {
    return this.results.some((result) => result.id === id);
  }

  private result(delivery: Delivery, status: DeliveryStatus, attempt: NewAttempt | null, letter: StoredDeadLetter | null): Promise<void> {
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
          [JSON.stringify(group.map(({ written: _written, attempt, last_error, ...result }) => ({ ...result, attempt: jsonText(attempt), last_error: jsonText(last_error) }))), this.owner],
        );
        for (const result of group) result.written.resolve();
      } catch (error) {
        for (const result of group) result.written.reject(error);
      }
    }
    this.writing = null;
  }

  private finished(delivery: Delivery, status: DeliveryStatus, attempt: NewAttempt | null, letter: StoredDeadLetter | null): Promise<void> {
    if (this.held.get(delivery.id) === delivery) this.held.delete(delivery.id);
    return this.result(delivery, status, attempt, letter);
  }

  private reportLost(id: string) {
    // Not written: the lease lapses and the delivery is attempted again (at least once).
    return (error: unknown) => this.options.logError(`could not record the attempt of delivery ${id}: ${describeFault(error)}`);
  }

  private async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.database.query(
      `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE id = ANY($1::text[]) AND lease_owner = $2`,
      [ids, this.owner],
    );
  }

  /** Read at most once a second for every caller (the status page, each scrape): one read serves all who ask meanwhile. */
  private pending(): Promise<PendingCount> {
    const cached = this.pendingCount;
    if (Date.now() - cached.readAt < COUNT_CACHE_MS) return Promise.resolve(cached.value);
    cached.reading ??= this.database
      .query<{ count: string; oldest: Date | null }>(`SELECT count(*) AS count, min(enqueued_at) AS oldest FROM deliveries WHERE status = 'PENDING'`)
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

  private async withAttempts(rows: DeliveryRow[]): Promise<DeliveryRecord[]> {
    if (rows.length === 0) return [];
    const { rows: attempts } = await this.database.query<{ delivery_id: string; number: number; attempt: NewAttempt }>(
      'SELECT delivery_id, number, attempt FROM delivery_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, number',
      [rows.map((row) => row.id)],
    );
    const byDelivery = new Map<string, DeliveryAttempt[]>();
    for (const { delivery_id, number, attempt } of attempts) {
      const list = byDelivery.get(delivery_id) ?? [];
      list.push({ number, ...attempt });
      byDelivery.set(delivery_id, list);
    }
    return rows.map((row) => recordOf(row, byDelivery.get(row.id) ?? []));
  }

  private eventStore(): EventStore {
    return {
      publish: (event, deliveries) => this.publish(event, deliveries),
      page: async (workspaceId: string, query: EventPageQuery, policy: RetentionPolicy, now: number, budget = unbounded<PlatformEvent>()): Promise<EventPage> => {
        const since = Math.max(now - policy.maxAgeMs, query.since ?? 0);
        // The page's rows and their sizes first (the column holds the event's JSON text as sent), then
        // only the events that fit, in batches: a page of large events never has them all in memory.
        const { items, last, more } = await fillBySize(
          query.limit,
          budget,
          async (after: string | undefined, count) => {
            const { rows } = await this.database.query<{ key: string; bytes: number }>(
              `WITH kept AS (
                 SELECT seq FROM events WHERE workspace_id = $1 ORDER BY seq DESC LIMIT $8
               ), cursor_event AS (SELECT seq FROM events WHERE workspace_id = $1 AND id = $6::uuid)
               SELECT seq AS key, octet_length(event::text) AS bytes FROM events
               WHERE workspace_id = $1 AND seq >= coalesce((SELECT min(seq) FROM kept), 0)
                 AND occurred_at >= $2 AND ($3::timestamptz IS NULL OR occurred_at <= $3) AND ($4::text IS NULL OR event_key = $4)
                 AND ($6::uuid IS NULL OR CASE WHEN EXISTS (SELECT 1 FROM cursor_event) THEN seq < (SELECT seq FROM cursor_event) ELSE occurred_at < $7 END)
                 AND ($9::bigint IS NULL OR seq < $9)
               ORDER BY seq DESC LIMIT $5`,
              [
                workspaceId,
                new Date(since).toISOString(),
                query.until === undefined ? null : new Date(query.until).toISOString(),
                query.eventKey ?? null,
                count,
                query.before?.id ?? null,
                query.before ? new Date(query.before.at).toISOString() : null,
                policy.maxPerWorkspace,
                after ?? null,
              ],
            );
            return rows;
          },
          async (keys) => (await this.database.query<{ event: PlatformEvent }>('SELECT event FROM events WHERE seq = ANY($1::bigint[]) ORDER BY seq DESC', [keys])).rows,
          (row) => row.event,
        );
        // `segment` has no meaning here: the cursor's event is found by its id.
        return { items, more, ...(more && last ? { last: { segment: 0, at: Date.parse(last.event.occurredAt), id: last.event.id } } : {}) };
      },
      find: async (workspaceId, eventId) => {
        const { rows } = await this.database.query<{ event: PlatformEvent }>('SELECT event FROM events WHERE workspace_id = $1 AND id = $2::uuid', [workspaceId, eventId]);
        return rows[0]?.event;
      },
      // One daemon at a time runs it: the job's lock (PostgresJobLock).
      // A delivery still PENDING or DEAD keeps its event (hidden from listings, which apply the
      // policy themselves): the row is the queue entry and the dead letter, which on files
      // outlive the event in their own files. A later run removes the event once they end.
      applyRetention: (policy, now) =>
        this.database.transaction(async (tx) => {
          const { rows } = await tx.query<{ id: string }>(
            `DELETE FROM events WHERE seq IN (
               SELECT seq FROM (
                 SELECT seq, occurred_at, row_number() OVER (PARTITION BY workspace_id ORDER BY seq DESC) AS rank FROM events
               ) ranked WHERE rank > $1 OR occurred_at < $2
             ) AND NOT EXISTS (SELECT 1 FROM deliveries WHERE event_id = events.id AND status IN ('PENDING', 'DEAD'))
             RETURNING id`,
            [policy.maxPerWorkspace, new Date(now - policy.maxAgeMs).toISOString()],
          );
          const removed = await tx.query('DELETE FROM deliveries WHERE event_id = ANY($1::uuid[])', [rows.map((row) => row.id)]);
          return { removedEvents: rows.length, removedDeliveries: removed.rowCount ?? 0 };
        }),
      storedCount: async () => {
        const { rows } = await this.database.query<{ count: string }>('SELECT count(*) AS count FROM events');
        return Number(rows[0]!.count);
      },
      recentBytes: 0,
      close: async () => {
        clearInterval(this.renewal);
        clearInterval(this.expiry);
        if (this.notifyTimer) clearTimeout(this.notifyTimer);
        await this.publishing;
        await this.writing;
      },
    };
  }

  private deliveryStore(): DeliveryStore {
    return {
      shared: true,
      onWork: (wake) => {
        this.wake = wake;
      },
      onLeaseLost: (lost) => {
        this.lost = lost;
      },
      claim: (limit) => this.claim(limit),
      nextDueAt: () => this.retriesDue.next(Date.now()),
      holds: (delivery) => this.held.get(delivery.id) === delivery,
      succeeded: (delivery, attempt) => void this.finished(delivery, 'SUCCEEDED', attempt, null).catch(this.reportLost(delivery.id)),
      retrying: (delivery, attempt) => {
        this.retriesDue.add(delivery.nextAttemptAt);
        void this.finished(delivery, 'PENDING', attempt, null).catch(this.reportLost(delivery.id));
      },
      dead: async (delivery, attempt, letter) => {
        await this.finished(delivery, 'DEAD', attempt, letter);
        this.deadLettersChanged();
      },
      released: (delivery) => {
        this.retriesDue.add(delivery.nextAttemptAt);
        if (this.held.get(delivery.id) !== delivery) return;
        this.held.delete(delivery.id);
        this.release([delivery.id]).catch(this.reportLost(delivery.id));
      },
      settled: async () => {
        await this.writing;
        // What this daemon still holds and will not attempt now (it stops): free for others at once.
        await this.release([...this.held.keys()]).catch((error: unknown) => this.options.logError(`could not release leases: ${describeFault(error)}`));
        this.held.clear();
      },
      pending: () => this.pending(),
      ofEvent: async (workspaceId, eventId) => {
        const { rows } = await this.database.query<DeliveryRow>('SELECT * FROM deliveries WHERE workspace_id = $1 AND event_id = $2::uuid ORDER BY seq', [workspaceId, eventId]);
        return this.withAttempts(rows);
      },
      list: async (workspaceId: string, query: DeliveryQuery, budget = unbounded<DeliveryRecord>()): Promise<DeliveryPage> => {
        // In batches sized to the budget, each with its attempts.
        const { items, last, more } = await fillInBatches(
          query.limit,
          budget,
          async (after: { seq: number; record: DeliveryRecord } | undefined, count) => {
            const { rows } = await this.database.query<DeliveryRow>(
              `SELECT * FROM deliveries WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR subscription_id = $3)
                 AND ($4::text IS NULL OR event_key = $4) AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at <= $6)
                 AND ($7::bigint IS NULL OR seq < $7)
               ORDER BY seq DESC LIMIT $8`,
              [
                workspaceId,
                query.status ?? null,
                query.subscriptionId ?? null,
                query.eventKey ?? null,
                query.since === undefined ? null : new Date(query.since).toISOString(),
                query.until === undefined ? null : new Date(query.until).toISOString(),
                after?.seq ?? query.before ?? null,
                count,
              ],
            );
            const records = await this.withAttempts(rows);
            return records.map((record, index) => ({ seq: Number(rows[index]!.seq), record }));
          },
          (row) => row.record,
        );
        return { items, lastSeq: last?.seq ?? null, more };
      },
      removeWorkspace: async (workspaceId) => {
        await this.database.transaction(async (tx) => {
          await tx.query('DELETE FROM deliveries WHERE workspace_id = $1', [workspaceId]);
          await tx.query('DELETE FROM events WHERE workspace_id = $1', [workspaceId]);
        });
      },
      close: async () => undefined,
    };
  }

  private deadLetterStore(): DeadLetterStore {
    const filtered = (filter: DeadLetterFilter, first: number): { where: string; values: unknown[] } => ({
      // Qualified: the queries join events, which has columns of the same names.
      where: `d.status = 'DEAD' AND ($${first}::text IS NULL OR d.workspace_id = $${first}) AND ($${first + 1}::text IS NULL OR d.event_key = $${first + 1})
              AND ($${first + 2}::text IS NULL OR d.extension_key = $${first + 2})`,
      values: [filter.workspaceId ?? null, filter.eventKey ?? null, filter.extensionKey ?? null],
    });
    const letters = async (text: string, values: unknown[]) => {
      const { rows } = await this.database.query<DeliveryRow & { event: PlatformEvent }>(text, values);
      return rows;
    };
    return {
      count: async () => {
        if (Date.now() - this.deadCount.readAt < COUNT_CACHE_MS) return this.deadCount.count;
        const { changes } = this.deadCount;
        const { rows } = await this.database.query<{ count: string }>(`SELECT count(*) AS count FROM deliveries WHERE status = 'DEAD'`);
        const count = Number(rows[0]!.count);
        if (this.deadCount.changes === changes) this.deadCount = { count, readAt: Date.now(), changes };
        return count;
      },
      get: async (id) => {
        const rows = await letters(
          `SELECT d.*, e.event FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.dead_letter_id = $1::uuid AND d.status = 'DEAD'`,
          [isUuid(id) ? id : null],
        );
        if (!rows[0]) throw notFound(`dead letter ${id} not found`);
        return letterOfRow(rows[0]);
      },
      list: async (filter, page, budget = unbounded<StoredDeadLetter>()) => {
        const { where, values } = filtered(filter, 1);
        // In batches sized to the budget: each letter carries its event's payload. A batch after the
        // first continues after the last row read, not at an offset: a letter dying meanwhile would
        // shift offsets and show a letter twice on one page.
        const { items } = await fillInBatches(
          page.limit,
          budget,
          (after: (DeliveryRow & { event: PlatformEvent }) | undefined, count) =>
            after === undefined
              ? letters(
                  `SELECT d.*, e.event FROM deliveries d JOIN events e ON e.id = d.event_id
                   WHERE ${where} ORDER BY d.dead_at DESC, d.seq DESC LIMIT $4 OFFSET $5`,
                  [...values, count, page.offset],
                )
              : letters(
                  `SELECT d.*, e.event FROM deliveries d JOIN events e ON e.id = d.event_id
                   WHERE ${where} AND (d.dead_at, d.seq) < ($4::timestamptz, $5::bigint) ORDER BY d.dead_at DESC, d.seq DESC LIMIT $6`,
                  [...values, after.dead_at, after.seq, count],
                ),
          letterOfRow,
        );
        const counted = await this.database.query<{ total: string }>(`SELECT count(*) AS total FROM deliveries d WHERE ${where}`, values);
        return { items, total: Number(counted.rows[0]!.total) };
      },
      matchingIds: async (filter, after, limit) => {
        const { where, values } = filtered(filter, 1);
        // The cursor is the last row's (dead_at, seq), dead_at as PostgreSQL's own text (to the microsecond).
        const [deadAt, seq] = after === null ? [null, null] : (JSON.parse(after) as [string, string]);
        const { rows } = await this.database.query<{ dead_letter_id: string; subscription_id: string | null; dead_at: string; seq: string }>(
          `SELECT d.dead_letter_id, d.subscription_id, d.dead_at::text AS dead_at, d.seq::text AS seq FROM deliveries d
           WHERE ${where} AND ($4::timestamptz IS NULL OR (d.dead_at, d.seq) > ($4::timestamptz, $5::bigint))
           ORDER BY d.dead_at, d.seq LIMIT $6`,
          [...values, deadAt, seq, limit],
        );
        const last = rows.at(-1);
        return {
          letters: rows.map((row) => ({ id: row.dead_letter_id, subscriptionId: row.subscription_id })),
          next: rows.length === limit && last ? JSON.stringify([last.dead_at, last.seq]) : null,
        };
      },
      replay: async (ids, now) => {
        const sentAt = performance.now();
        // The row lock decides: of two daemons replaying one letter at once, the second finds it PENDING and leaves it.
        const rows = await letters(
          `WITH replayed AS (
             UPDATE deliveries SET status = 'PENDING', replay_count = replay_count + 1, run_attempts = 0, first_attempt_at = NULL,
               last_error = NULL, due_at = $2, enqueued_at = $2, completed_at = NULL, dead_at = NULL,
               lease_owner = $3, lease_until = now() + $4 * interval '1 millisecond'
             WHERE dead_letter_id = ANY($1::uuid[]) AND status = 'DEAD'
             RETURNING *
           )
           SELECT replayed.*, events.event FROM replayed JOIN events ON events.id = replayed.event_id`,
          [ids.filter(isUuid), new Date(now).toISOString(), this.owner, this.options.leaseMs],
        );
        this.deadLettersChanged();
        return rows.map((row) => this.hold(deliveryOf(row, row.event), sentAt));
      },
      discard: async (ids, now) => {
        const { rowCount } = await this.database.query(
          `UPDATE deliveries SET status = 'DISCARDED', completed_at = $2 WHERE dead_letter_id = ANY($1::uuid[]) AND status = 'DEAD'`,
          [ids.filter(isUuid), new Date(now).toISOString()],
        );
        this.deadLettersChanged();
        return rowCount ?? 0;
      },
      state: async (id) => {
        if (!isUuid(id)) return 'gone';
        const { rows } = await this.database.query<{ status: DeliveryStatus }>('SELECT status FROM deliveries WHERE dead_letter_id = $1::uuid', [id]);
        const status = rows[0]?.status;
        return status === 'DEAD' ? 'dead' : status === 'PENDING' ? 'queued' : 'gone';
      },
      // The dead letters are the workspace's deliveries, removed with them.
      removeWorkspace: async () => undefined,
    };
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (text: string) => UUID.test(text);

function deliveryColumns(delivery: Delivery) {
  return {
    id: delivery.id,
    workspace_id: delivery.event.tenantId,
    event_id: delivery.event.id,
    event_key: delivery.event.eventKey,
    subscription_id: delivery.subscriber.subscriptionId,
    extension_key: delivery.subscriber.extensionKey,
    kind: delivery.subscriber.kind,
    service_base_url: delivery.subscriber.serviceBaseUrl,
    depth: delivery.depth,
    due_at: new Date(delivery.nextAttemptAt).toISOString(),
    enqueued_at: delivery.enqueuedAt,
  };
}

function deliveryOf(row: DeliveryRow, event: PlatformEvent): Delivery {
  return {
    id: row.id,
    event,
    depth: row.depth,
    subscriber: { subscriptionId: row.subscription_id, extensionKey: row.extension_key, kind: row.kind, serviceBaseUrl: row.service_base_url },
    attempts: row.run_attempts,
    nextAttemptAt: row.due_at.getTime(),
    enqueuedAt: row.enqueued_at.toISOString(),
    firstAttemptAt: iso(row.first_attempt_at),
    lastError: row.last_error,
    replayCount: row.replay_count,
    ...(row.dead_letter_id === null ? {} : { deadLetterId: row.dead_letter_id }),
  };
}

function recordOf(row: DeliveryRow, attempts: DeliveryAttempt[]): DeliveryRecord {
  return {
    id: row.id,
    eventId: row.event_id,
    eventKey: row.event_key,
    workspaceId: row.workspace_id,
    subscriptionId: row.subscription_id,
    extensionKey: row.extension_key,
    kind: row.kind,
    status: row.status,
    attempts,
    ...(row.status === 'PENDING' ? { nextAttemptAt: row.due_at.toISOString() } : {}),
    createdAt: row.created_at.toISOString(),
    ...(row.completed_at === null ? {} : { completedAt: row.completed_at.toISOString() }),
  };
}

function letterOfRow(row: DeliveryRow & { event: PlatformEvent }): StoredDeadLetter {
  return {
    id: row.dead_letter_id!,
    deliveryId: row.id,
    event: row.event,
    subscriber: { subscriptionId: row.subscription_id, extensionKey: row.extension_key, kind: row.kind, serviceBaseUrl: row.service_base_url },
    attempts: row.run_attempts,
    lastError: row.last_error ?? { message: 'unknown', status: null },
    firstAttemptAt: iso(row.first_attempt_at),
    deadAt: row.dead_at!.toISOString(),
    replayCount: row.replay_count,
    depth: row.depth,
  };
}
