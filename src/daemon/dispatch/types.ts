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

/**
 * The event a delivery carries. Published in this run, it is at hand. Read
 * back from storage, it brings only what routing needs (id, workspace, key)
 * and reads its body when asked, each time, keeping nothing: the dispatcher
 * asks once the subscriber's connection is up, so a subscriber that is down
 * costs no payload reads, and a retried large payload is never held between
 * attempts.
 */
export class CarriedEvent {
  private constructor(
    readonly id: string,
    readonly tenantId: string,
    readonly eventKey: string,
    private readonly parsed: PlatformEvent | null,
    private readonly read: (() => Promise<Buffer>) | null,
  ) {}

  private bytes: Buffer | null = null;

  static of(event: PlatformEvent): CarriedEvent {
    return new CarriedEvent(event.id, event.tenantId, event.eventKey, event, null);
  }

  /** An event in storage: `read` answers its body (see `body`). */
  static stored(id: string, tenantId: string, eventKey: string, read: () => Promise<Buffer>): CarriedEvent {
    return new CarriedEvent(id, tenantId, eventKey, null, read);
  }

  /** What a subscriber receives: the PlatformEvent's JSON plus workspaceId, last. Rejects with PayloadUnreadable. */
  async body(): Promise<Buffer> {
    if (this.read) {
      try {
        return await this.read();
      } catch (error) {
        throw new PayloadUnreadable(error);
      }
    }
    return (this.bytes ??= Buffer.from(JSON.stringify({ ...this.parsed!, workspaceId: this.tenantId })));
  }

  /** The event published or replayed in this run; null for one in storage (see `object`). */
  get atHand(): PlatformEvent | null {
    return this.parsed;
  }

  /** The event as an object (parsed from its body when it is stored). */
  async object(): Promise<PlatformEvent> {
    if (this.parsed) return this.parsed;
    const { workspaceId: _workspaceId, ...event } = JSON.parse((await this.body()).toString('utf8')) as PlatformEvent & { workspaceId: string };
    return event;
  }
}

/** A stored event's body could not be read back. */
export class PayloadUnreadable extends Error {
  override name = 'PayloadUnreadable';
  constructor(cause: unknown) {
    super(`the event's payload could not be read: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** One event on its way to one subscriber. */
export interface Delivery {
  /** Sent as webhook-id: stable across retries and replays, so receivers can deduplicate. */
  id: string;
  event: CarriedEvent;
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
  /** The delivery this one sends again, by an operator's request (see EventService.redeliver). */
  redeliveryOf?: string;
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

/** The dead letter of a delivery of `event` that failed for good with `error` (a replayed one keeps its letter's id). */
export function deadLetterOf(delivery: Delivery, event: PlatformEvent, error: DeliveryError, deadAt: number): StoredDeadLetter {
  return {
    id: delivery.deadLetterId ?? randomUUID(),
    deliveryId: delivery.id,
    event,
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

/** A delivery record as the API shows it: the event key is kept for filtering only. */
export const toPublicDeliveryRecord = ({ eventKey: _eventKey, ...record }: DeliveryRecord) => record;

/** The dead letters `filter` selects (every field it sets must match). */
export const matchesDeadLetterFilter = (filter: DeadLetterFilter) => (letter: StoredDeadLetter) =>
  (filter.workspaceId === undefined || letter.event.tenantId === filter.workspaceId) &&
  (filter.eventKey === undefined || letter.event.eventKey === filter.eventKey) &&
  (filter.extensionKey === undefined || letter.subscriber.extensionKey === filter.extensionKey);
