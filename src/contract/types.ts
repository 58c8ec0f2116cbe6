/**
 * Response shapes of the HTTP API (CONTRACT §§1-6), for clients. Node-free, so
 * the web console can import it; the daemon's own records live in its domain code.
 */

export interface Envelope<T> {
  code: string;
  message: string | null;
  data: T;
  meta: Record<string, unknown> | null;
  timestamp: string;
}

/** `meta` of a paged list. */
export interface PageMeta {
  total: number;
  limit: number;
  offset: number;
}

export type Role = 'ADMIN' | 'USER';

export interface User {
  id: string;
  email: string;
  fullName: string;
  roles: Role[];
  active: boolean;
}

export interface ExtensionSummary {
  extensionKey: string;
  name: string;
  description: string;
  category: string;
  latestVersion: string | null;
  author: string;
}

export interface ExtensionDetail {
  extensionKey: string;
  name: string;
  description: string;
  category: string;
  latestVersion: string | null;
  versions: { version: string; releaseDate: string; yanked: boolean }[];
  permissions: string[];
}

export interface CategoryCount {
  category: string;
  count: number;
}

export interface Workspace {
  id: string;
  name: string;
  members: string[];
  createdAt: string;
}

export interface Installation {
  workspaceId: string;
  extensionKey: string;
  version: string;
  enabled: boolean;
  installedAt: string;
}

export type SubscriberKind = 'EXTERNAL_SERVICE' | 'IN_PROCESS';

export interface Subscription {
  id: string;
  workspaceId: string;
  eventKey: string;
  extensionKey: string;
  kind: SubscriberKind;
  serviceBaseUrl: string | null;
  createdAt: string;
}

/** Answered once, at creation. */
export interface CreatedSubscription extends Subscription {
  signingSecret: string;
}

export interface PlatformEvent {
  id: string;
  eventKey: string;
  tenantId: string;
  actor: string;
  payload: Record<string, unknown>;
  schemaVersion: string;
  occurredAt: string;
}

export interface DeadLetter {
  id: string;
  deliveryId: string;
  event: PlatformEvent;
  subscriber: { subscriptionId: string; extensionKey: string; kind: SubscriberKind; serviceBaseUrl: string | null };
  attempts: number;
  lastError: { message: string; status: number | null };
  firstAttemptAt: string;
  deadAt: string;
  replayCount: number;
}

export type ConfigFieldType = 'STRING' | 'NUMBER' | 'BOOLEAN' | 'SECRET';

/** A SECRET's value is always `"********"` (or null while unset). */
export interface ConfigField {
  name: string;
  type: ConfigFieldType;
  value: string | number | boolean | null;
  set: boolean;
}

export interface DaemonStatus {
  version: string;
  uptimeSeconds: number;
  pendingDeliveries: number;
  inFlightDeliveries: number;
  oldestPendingAgeMs: number | null;
  deadLetters: number;
  eventsStored: number;
}
