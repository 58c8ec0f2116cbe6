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
