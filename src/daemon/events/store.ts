import type { PlatformEvent } from '../../handlers/sdk.js';
import type { PageBudget } from '../paging.js';
import type { Delivery } from '../dispatch/types.js';
import type { EventPageQuery, RetentionPolicy } from './types.js';
import type { ListedEvent } from './delivery-summary.js';

/** The page's events are in the budget the listing was given, as the JSON it sends. */
export interface EventPage {
  more: boolean;
  /** Where the next page starts (present when there is one): a cursor in the store's own terms, given back as `before`. */
  last?: string;
}

/**
 * The event log, with the deliveries an event causes: `publish` makes the
 * event and its pending deliveries durable together before it resolves (the
 * publisher is answered only then), and answers those this daemon runs now
 * (held by it); the others wait in the store for a claim. Pages are newest first, by a position
 * that stays correct while events keep arriving.
 */
export interface EventStore {
  publish(event: PlatformEvent, deliveries: readonly Delivery[]): Promise<readonly Delivery[]>;
  /** Fills `budget` with the page's events, each with the summary of its deliveries, up to `query.limit`. */
  page(workspaceId: string, query: EventPageQuery, policy: RetentionPolicy, now: number, budget?: PageBudget<ListedEvent>): Promise<EventPage>;
  /** Undefined when the workspace holds no such event (any more). */
  find(workspaceId: string, eventId: string): Promise<PlatformEvent | undefined>;
  /** Removes expired events and the records of their deliveries. */
  applyRetention(policy: RetentionPolicy, now: number): Promise<{ removedEvents: number; removedDeliveries: number }>;
  /** Events stored, expired ones not yet removed included. */
  storedCount(): Promise<number>;
  close(): Promise<void>;
}
