import type { PageBudget } from '../paging.js';
import type { DeadLetterFilter, Delivery, DeliveryAttempt, DeliveryQuery, DeliveryRecord, StoredDeadLetter } from './types.js';

/** An attempt as the dispatcher knows it; the store numbers it among the delivery's recorded attempts. */
export type NewAttempt = Omit<DeliveryAttempt, 'number'>;

export interface DeliveryPage {
  /** Also in the budget the listing was given, as JSON. */
  items: DeliveryRecord[];
  /** The creation position of the page's last record, for the cursor. */
  lastSeq: number | null;
  more: boolean;
}

export interface PendingCount {
  count: number;
  /** Unix milliseconds; null when nothing is pending. */
  oldestEnqueuedAt: number | null;
}

/**
 * Pending deliveries and their records, as the dispatcher and the listings
 * need them: the outbox and the record of each delivery in one. The store
 * keeps every pending delivery; the dispatcher holds only what it runs now:
 * what `publish` handed it and what it takes with `claim` as slots free up.
 * A retry goes back to the store, which answers `nextDueAt` so that the
 * dispatcher claims it in time. On files every pending delivery is this
 * daemon's; on a shared store (PostgreSQL) several daemons claim from one
 * queue, each delivery under a lease the store renews while this daemon
 * holds it.
 */
export interface DeliveryStore {
  /** Deliveries are shared by several daemons: the queue is also polled, should a notification of new work be lost. */
  readonly shared: boolean;
  /** The store calls `wake` when deliveries were queued that no daemon holds yet (another daemon's work, or more than the publisher took). */
  onWork(wake: () => void): void;
  /**
   * A shared store calls `lost` with a delivery whose lease it could not renew in time (the
   * database did not answer) or that another daemon took over: its attempt in flight must end,
   * since another daemon may start one once the lease lapses (files never do).
   */
  onLeaseLost(lost: (deliveryId: string) => void): void;
  /** Up to `limit` due deliveries no daemon holds, now this daemon's (leased, on a shared store). */
  claim(limit: number): Promise<Delivery[]>;
  /**
   * When the earliest delivery this daemon knows of that is pending and not
   * held becomes due (epoch ms; null when none): the dispatcher claims then.
   * A shared store may also learn of due work by `onWork` or the poll.
   */
  nextDueAt(): number | null;
  /** Whether this run of the delivery is still this daemon's to attempt (not replaced, finished or taken over). */
  holds(delivery: Delivery): boolean;
  /** Delivered: the record says SUCCEEDED, and the delivery leaves the queue once that is durable. */
  succeeded(delivery: Delivery, attempt: NewAttempt): void;
  /**
   * Failed, to be tried again at `delivery.nextAttemptAt` (attempts, lastError
   * and firstAttemptAt already updated): back to the store, no longer held.
   */
  retrying(delivery: Delivery, attempt: NewAttempt): void;
  /**
   * Failed for good (`attempt` null when it was not attempted: the subscriber
   * is inactive): a dead letter. Rejects when the store refused it; the
   * delivery then stays pending and this daemon's.
   */
  dead(delivery: Delivery, attempt: NewAttempt | null, letter: StoredDeadLetter): Promise<void>;
  /**
   * Not attempted now (shutdown aborted it, uncounted; or its dead letter could
   * not be stored): back to the store, due at `delivery.nextAttemptAt`, free
   * for the next claim (or another daemon's).
   */
  released(delivery: Delivery): void;
  /**
   * Resolves once every result handed over so far is durable; the dispatcher
   * calls it as it stops, so a shared store also releases the leases of what
   * it still holds (other daemons take it at once instead of after the lease).
   */
  settled(): Promise<void>;
  /** The pending queue (every daemon's on a shared store; read at most about once a second there). */
  pending(): Promise<PendingCount>;
  ofEvent(workspaceId: string, eventId: string): Promise<DeliveryRecord[]>;
  /** The record of one delivery of the workspace, whatever its status; undefined when it has none (or another workspace has it). */
  find(workspaceId: string, deliveryId: string): Promise<DeliveryRecord | undefined>;
  /**
   * Queues a new delivery (with `redeliveryOf`) of an event already recorded,
   * durably before it resolves, its record PENDING; answers it as this daemon
   * holds it, for the dispatcher. Rejects with nothing queued when it could
   * not be stored.
   */
  redeliver(delivery: Delivery): Promise<readonly Delivery[]>;
  /** Fills `budget` with the page's records, up to `query.limit`. */
  list(workspaceId: string, query: DeliveryQuery, budget?: PageBudget<DeliveryRecord>): Promise<DeliveryPage>;
  removeWorkspace(workspaceId: string): Promise<void>;
  close(): Promise<void>;
}

export interface MatchingDeadLetters {
  letters: Array<{ id: string; subscriptionId: string | null }>;
  next: string | null;
}

/** Dead letters: deliveries that failed for good, until replayed or discarded; each move keeps the record in step. */
export interface DeadLetterStore {
  count(): Promise<number>;
  /** 404 when there is no such dead letter. */
  get(id: string): Promise<StoredDeadLetter>;
  /** Newest first; `items` (also in `budget`, as JSON) end early where the budget is full. */
  list(filter: DeadLetterFilter, page: { limit: number; offset: number }, budget?: PageBudget<StoredDeadLetter>): Promise<{ items: StoredDeadLetter[]; total: number }>;
  /**
   * Oldest first, a batch at a time: up to `limit` matching letters after the
   * cursor `after` (null: from the oldest), as ids and subscriptions; `next`
   * is the cursor of the next batch, null when this one was the last. A
   * letter replayed or discarded meanwhile does not move the cursor.
   */
  matchingIds(filter: DeadLetterFilter, after: string | null, limit: number): Promise<MatchingDeadLetters>;
  /** How many letters match, by subscription (null: a built-in handler's), counted where they are stored. */
  countBySubscription(filter: DeadLetterFilter): Promise<Map<string | null, number>>;
  /**
   * Moves these dead letters back to the queue with a fresh attempt count and
   * their replay count + 1, durably; answers the deliveries it queued, this
   * daemon's to run (a letter already replayed or discarded meanwhile, by this
   * daemon or another, is left out: a dead letter is replayed once).
   */
  replay(ids: readonly string[], now: number): Promise<Delivery[]>;
  /** Removes them; their records say DISCARDED. Answers how many were still dead letters. */
  discard(ids: readonly string[], now: number): Promise<number>;
  /** `dead` while it is one, `queued` while a replay of it is pending, `gone` otherwise. */
  state(id: string): Promise<'dead' | 'queued' | 'gone'>;
  removeWorkspace(workspaceId: string): Promise<void>;
}
