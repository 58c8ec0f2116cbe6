/**
 * Response shapes of the HTTP API (docs/api.md), for clients: the types of
 * the schemas in resources.ts, which the API document is generated from, and
 * of the live streams' items. Node-free, so the web console can import it; the daemon's own records live
 * in its domain code.
 */

import type { PlatformEvent, SubscriberKind } from './resources.js';

export interface Envelope<T> {
  code: string;
  message: string | null;
  data: T;
  meta: Record<string, unknown> | null;
  timestamp: string;
}

/** Every resource's type (each schema's InferOutput), by the schema's name. */
export type * from './resources.js';

/**
 * `data` of an `event.published` item of a live stream: the event, with its
 * payload when the payload's JSON is at most 16 KiB (16,384 bytes); a larger
 * one is left out and `payloadBytes` gives its size (read the event itself,
 * GET /api/workspaces/{id}/events/{eventId}, for the payload).
 */
export type StreamEvent = (PlatformEvent & { payloadBytes?: never }) | (Omit<PlatformEvent, 'payload'> & { payload?: never; payloadBytes: number });

/**
 * `data` of a delivery item of a live stream (`delivery.succeeded`,
 * `delivery.retrying`, `delivery.dead`; docs/api.md, "Live streams"): never
 * the subscriber's URL or signing secret.
 */
export interface StreamDelivery {
  deliveryId: string;
  eventId: string;
  eventKey: string;
  workspaceId: string;
  subscriptionId: string | null;
  extensionKey: string;
  kind: SubscriberKind;
  attempts: number;
  httpStatus?: number;
  error?: string;
  nextAttemptAt?: string;
}

/** `data` of a `subscription.changed` item of a live stream: a subscription enabled or disabled. */
export interface StreamSubscription {
  subscriptionId: string;
  workspaceId: string;
  eventKey: string;
  extensionKey: string;
  kind: SubscriberKind;
  enabled: boolean;
  disabledReason: string | null;
}
