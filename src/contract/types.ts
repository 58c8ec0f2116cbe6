/**
 * Response shapes of the HTTP API (docs/api.md), for clients: the types of
 * the schemas in resources.ts, which the API document is generated from, and
 * of the live streams' items. Node-free, so the web console can import it; the daemon's own records live
 * in its domain code.
 */

import type { SubscriberKind } from './resources.js';

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
