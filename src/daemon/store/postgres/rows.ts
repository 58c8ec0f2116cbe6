import type { PlatformEvent } from '../../../handlers/sdk.js';
import type { NewAttempt } from '../../dispatch/store.js';
import { CarriedEvent, type Delivery, type DeliveryAttempt, type DeliveryError, type DeliveryRecord, type DeliveryStatus, type StoredDeadLetter } from '../../dispatch/types.js';
import type { SubscriberKind } from '../../workspaces/types.js';

/**
 * Rows of the events domain's tables (migrations 0007 and 0013), each defined once, and
 * what they are as the domain's objects.
 */

/**
 * A row of `deliveries`: timestamps as `Time` and the sequence as `Seq`, which
 * differ by direction (see DeliveryRow, ImportedDeliveryRow). The lease columns
 * (lease_owner, lease_until) are the lease keeper's: never read into a row.
 */
interface DeliveryColumns<Time, Seq> {
  seq: Seq;
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
  /** Attempts of this run (a replay starts again from 0). */
  run_attempts: number;
  /** Recorded attempts of every run: the number of the last one. */
  attempt_count: number;
  replay_count: number;
  due_at: Time;
  created_at: Time;
  enqueued_at: Time;
  completed_at: Time | null;
  first_attempt_at: Time | null;
  last_error: DeliveryError | null;
  dead_letter_id: string | null;
  dead_at: Time | null;
  /** The delivery this one sends again (migration 0013). */
  redelivery_of: string | null;
}

/** As pg reads it (sql/delivery-columns.ts names the columns): dates, and the bigint as a string. */
export type DeliveryRow = DeliveryColumns<Date, string>;

/** As `platform db import` writes it: the record's creation sequence on files (delivery cursors hold it), ISO timestamps, and the attempts of every run. */
export type ImportedDeliveryRow = DeliveryColumns<string, number> & { attempts: readonly DeliveryAttempt[] };

/** A row of `events`, as pg reads it. */
export interface EventRow {
  seq: string;
  workspace_id: string;
  id: string;
  event_key: string;
  occurred_at: Date;
  /** The event's JSON as published (the column is json: key order kept). */
  event: PlatformEvent;
}

/** A row of `delivery_attempts`. */
export interface DeliveryAttemptRow {
  delivery_id: string;
  number: number;
  attempt: NewAttempt;
}

/** A delivery read with its event (a claim, a replay, a dead letter). */
export type DeliveryWithEvent = DeliveryRow & Pick<EventRow, 'event'>;

const iso = (date: Date | null) => (date === null ? null : date.toISOString());

/** The columns a publish inserts for a delivery (see sql/publish-events.ts). */
export function deliveryColumns(delivery: Delivery) {
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

/** The delivery of a row; its event from the row, or `stored` where the row left it out. */
export function deliveryOf(row: DeliveryRow & { event: PlatformEvent | null }, stored?: () => Promise<Buffer>): Delivery {
  if (row.event === null && !stored) throw new Error(`delivery ${row.id} was read without its event`);
  return {
    id: row.id,
    event: row.event === null ? CarriedEvent.stored(row.event_id, row.workspace_id, row.event_key, stored!) : CarriedEvent.of(row.event),
    depth: row.depth,
    subscriber: { subscriptionId: row.subscription_id, extensionKey: row.extension_key, kind: row.kind, serviceBaseUrl: row.service_base_url },
    attempts: row.run_attempts,
    nextAttemptAt: row.due_at.getTime(),
    enqueuedAt: row.enqueued_at.toISOString(),
    firstAttemptAt: iso(row.first_attempt_at),
    lastError: row.last_error,
    replayCount: row.replay_count,
    ...(row.redelivery_of === null ? {} : { redeliveryOf: row.redelivery_of }),
    ...(row.dead_letter_id === null ? {} : { deadLetterId: row.dead_letter_id }),
  };
}

export function recordOf(row: DeliveryRow, attempts: DeliveryAttempt[]): DeliveryRecord {
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
    ...(row.redelivery_of === null ? {} : { redeliveryOf: row.redelivery_of }),
  };
}

export function letterOfRow(row: DeliveryWithEvent): StoredDeadLetter {
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
