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

export interface VersionRecord {
  version: string;
  /** UTC calendar date of publication, YYYY-MM-DD. */
  releaseDate: string;
  yanked: boolean;
  artifactUrl: string;
  manifestUrl: string | null;
  requiresPlatform: string | null;
  requiresSdk: string | null;
  changelog: string | null;
}

export type AuditAction = 'create' | 'update' | 'publish' | 'yank' | 'unyank';

export interface AuditRecord {
  id: string;
  at: string;
  actor: { id: string; email: string };
  action: AuditAction;
  extensionKey: string;
  version?: string;
  reason?: string;
  /** create and update: each field set or changed, with its value before and after. */
  changes?: Record<string, { from: unknown; to: unknown }>;
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
  /** With credentials masked: `https://****@host/...`. */
  serviceBaseUrl: string | null;
  /** Where deliveries are POSTed: `{serviceBaseUrl}/events`. */
  deliveryUrl: string | null;
  createdAt: string;
  enabled: boolean;
  /** Why it is disabled (by an administrator, or after failing too long); null when enabled. */
  disabledReason: string | null;
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
  /** The id of the user whose session published it (absent on older events). */
  publishedBy?: string;
  payload: Record<string, unknown>;
  schemaVersion: string;
  occurredAt: string;
}

export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'DEAD' | 'DISCARDED';

export interface DeliveryAttempt {
  number: number;
  startedAt: string;
  durationMs: number;
  outcome: 'SUCCESS' | 'RETRY' | 'FAILED';
  httpStatus?: number;
  error?: string;
  /** The first bytes of the subscriber's answer. */
  responseExcerpt?: string;
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  workspaceId: string;
  /** Null for built-in plugins that receive an event without a subscription (chat). */
  subscriptionId: string | null;
  extensionKey: string;
  kind: SubscriberKind;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  nextAttemptAt?: string;
  createdAt: string;
  completedAt?: string;
}

/** `GET /api/workspaces/{id}/events/{eventId}`. */
export interface EventWithDeliveries extends PlatformEvent {
  deliveries: DeliveryRecord[];
}

export interface ChatMessage {
  id: string;
  channel: string;
  message: string;
  sender: string;
  publishedBy: string;
  eventId: string;
  postedAt: string;
}

export interface WebhookRequestEntry {
  id: string;
  receivedAt: string;
  outcome: 'ACCEPTED' | 'REJECTED' | 'FAILED' | 'DUPLICATE';
  reason: string;
  eventId?: string;
  headers: Record<string, string>;
  bodyExcerpt: string;
}

export interface DeadLetter {
  id: string;
  deliveryId: string;
  event: PlatformEvent;
  subscriber: { subscriptionId: string | null; extensionKey: string; kind: SubscriberKind; serviceBaseUrl: string | null };
  attempts: number;
  lastError: { message: string; status: number | null };
  firstAttemptAt: string | null;
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
