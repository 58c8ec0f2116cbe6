import { randomUUID } from 'node:crypto';
import type { DeliveryRecord as PublicDeliveryRecord, DeliveryStatus } from '../../contract/types.js';
import type { PlatformEvent } from '../../handlers/sdk.js';
import type { SubscriberKind } from '../workspaces/types.js';

export interface SubscriberRef {
  /** Null for built-in plugins that receive an event without a subscription (chat). */
  subscriptionId: string | null;
  extensionKey: string;
  kind: SubscriberKind;
  serviceBaseUrl: string | null;
}

export interface DeliveryError {
  message: string;
  /** The subscriber's HTTP status, when it answered. */
  status: number | null;
}

/** One event on its way to one subscriber. */
export interface Delivery {
  /** Sent as webhook-id: stable across retries and replays, so receivers can deduplicate. */
  id: string;
  event: PlatformEvent;
  /** Position in an event chain: 1 for an event published from outside. */
  depth: number;
  subscriber: SubscriberRef;
  attempts: number;
  /** Epoch milliseconds. */
  nextAttemptAt: number;
  enqueuedAt: string;
  firstAttemptAt: string | null;
  lastError: DeliveryError | null;
  replayCount: number;
  /** The dead letter this delivery replays: if it fails again, it comes back under the same id. */
  deadLetterId?: string;
}

/** The dead-letter record of the contract. */
export interface DeadLetter {
  id: string;
  deliveryId: string;
  event: PlatformEvent;
  subscriber: SubscriberRef;
  attempts: number;
  lastError: DeliveryError;
  firstAttemptAt: string | null;
  deadAt: string;
  replayCount: number;
}

export interface DeadLetterFilter {
  workspaceId?: string | undefined;
  eventKey?: string | undefined;
  extensionKey?: string | undefined;
}

export type { DeliveryAttempt, DeliveryStatus } from '../../contract/types.js';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'SUCCEEDED', 'DEAD', 'DISCARDED'];

/** The delivery record of the contract, plus the event's key (deliveries are filtered by it; answers leave it out). */
export interface DeliveryRecord extends PublicDeliveryRecord {
  eventKey: string;
}

export const RESPONSE_EXCERPT_BYTES = 2048;

export interface DeliveryQuery {
  status?: DeliveryStatus | undefined;
  subscriptionId?: string | undefined;
  eventKey?: string | undefined;
  /** Epoch ms, inclusive. */
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  /** Only records created before this position (from a cursor). */
  before?: number | undefined;
}

/** Kept with the record so that a replay resumes the event chain where it was. */
export interface StoredDeadLetter extends DeadLetter {
  depth: number;
}

/** The dead letter of a delivery that failed for good with `error` (a replayed one keeps its letter's id). */
export function deadLetterOf(delivery: Delivery, error: DeliveryError, deadAt: number): StoredDeadLetter {
  return {
    id: delivery.deadLetterId ?? randomUUID(),
    deliveryId: delivery.id,
    event: delivery.event,
    subscriber: delivery.subscriber,
    attempts: delivery.attempts,
    lastError: error,
    firstAttemptAt: delivery.firstAttemptAt,
    deadAt: new Date(deadAt).toISOString(),
    replayCount: delivery.replayCount,
    depth: delivery.depth,
  };
}

export const toPublicDeadLetter = ({ depth: _depth, ...visible }: StoredDeadLetter): DeadLetter => visible;

/** The dead letters `filter` selects (every field it sets must match). */
export const matchesDeadLetterFilter = (filter: DeadLetterFilter) => (letter: StoredDeadLetter) =>
  (filter.workspaceId === undefined || letter.event.tenantId === filter.workspaceId) &&
  (filter.eventKey === undefined || letter.event.eventKey === filter.eventKey) &&
  (filter.extensionKey === undefined || letter.subscriber.extensionKey === filter.extensionKey);
