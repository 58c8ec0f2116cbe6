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
 * need them: the outbox and the record of each delivery in one. On files
 * every pending delivery is this daemon's (`resumable` at start, retries kept
 * in its own schedule); on a shared store (PostgreSQL) several daemons take
 * due deliveries from one queue with `claim`, each under a lease the store
 * renews while this daemon holds the delivery, and retries go back to the
 * queue.
 */
export interface DeliveryStore {
  /** Deliveries are shared by several daemons: taken with `claim`, retries released to the queue. */
  readonly shared: boolean;
  /** A shared store calls `wake` when other daemons queued or released work (files never do). */
  onWork(wake: () => void): void;
  /**
   * A shared store calls `lost` with a delivery whose lease it could not renew in time (the
   * database did not answer) or that another daemon took over: its attempt in flight must end,
   * since another daemon may start one once the lease lapses (files never do).
   */
  onLeaseLost(lost: (deliveryId: string) => void): void;
  /** Files: every pending delivery, resumed at start. A shared store: none (claim takes them). */
  resumable(): Delivery[];
  /** Up to `limit` due deliveries, leased to this daemon (a shared store; files have none to claim). */
  claim(limit: number): Promise<Delivery[]>;
  /** Whether this run of the delivery is still this daemon's to attempt (not replaced, finished or taken over). */
  holds(delivery: Delivery): boolean;
  /** Delivered: the record says SUCCEEDED, and the delivery leaves the queue once that is durable. */
  succeeded(delivery: Delivery, attempt: NewAttempt): void;
  /** Failed, to be tried again at `delivery.nextAttemptAt` (attempts, lastError and firstAttemptAt already updated). */
  retrying(delivery: Delivery, attempt: NewAttempt): void;
  /**
   * Failed for good (`attempt` null when it was not attempted: the subscriber
   * is inactive): a dead letter. Rejects when the store refused it; the
   * delivery then stays pending and this daemon's.
   */
  dead(delivery: Delivery, attempt: NewAttempt | null, letter: StoredDeadLetter): Promise<void>;
  /** Shutdown aborted an attempt: not counted, and free for the next start (or another daemon). */
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
  /** Fills `budget` with the page's records, up to `query.limit`. */
  list(workspaceId: string, query: DeliveryQuery, budget?: PageBudget<DeliveryRecord>): Promise<DeliveryPage>;
  removeWorkspace(workspaceId: string): Promise<void>;
  close(): Promise<void>;
}

/** Dead letters: deliveries that failed for good, until replayed or discarded; each move keeps the record in step. */
export interface DeadLetterStore {
  count(): Promise<number>;
  /** 404 when there is no such dead letter. */
  get(id: string): Promise<StoredDeadLetter>;
  /** Newest first; `items` (also in `budget`, as JSON) end early where the budget is full. */
  list(filter: DeadLetterFilter, page: { limit: number; offset: number }, budget?: PageBudget<StoredDeadLetter>): Promise<{ items: StoredDeadLetter[]; total: number }>;
  /** Oldest first. */
  matching(filter: DeadLetterFilter): Promise<StoredDeadLetter[]>;
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
