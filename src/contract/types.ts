/**
 * Response shapes of the HTTP API (CONTRACT §§1-12), for clients: the types of
 * the schemas in resources.ts, which the API document is generated from.
 * Node-free, so the web console can import it; the daemon's own records live
 * in its domain code.
 */

export interface Envelope<T> {
  code: string;
  message: string | null;
  data: T;
  meta: Record<string, unknown> | null;
  timestamp: string;
}

export type {
  AuditAction,
  AuditRecord,
  CategoryCount,
  ChannelSummary,
  ChatMessage,
  ConfigField,
  ConfigFieldType,
  CreatedSubscription,
  CursorMeta,
  DaemonStatus,
  DeadLetter,
  DeadLetterState,
  DeliveryAttempt,
  DeliveryRecord,
  DeliveryStatus,
  DiscardedDeadLetters,
  EventWithDeliveries,
  ExtensionConfig,
  ExtensionDetail,
  ExtensionSummary,
  Health,
  Installation,
  PageMeta,
  PlatformEvent,
  PublishedMeta,
  Readiness,
  ReplayedDeadLetters,
  Role,
  RotatedSecret,
  SubscriberKind,
  Subscription,
  TestDelivery,
  User,
  VersionRecord,
  WarningsMeta,
  WebhookRequestEntry,
  Workspace,
} from './resources.js';
