import * as v from 'valibot';
import type { JsonSchema, Manifest } from './manifest.js';

/**
 * What the HTTP API answers (docs/api.md), as valibot schemas: the
 * OpenAPI document describes each route's `data` and `meta` from them
 * (responses.ts), and the types the CLI, the console and the daemon share are
 * inferred from them (types.ts). Objects are strict: an answer has exactly
 * these fields, and test/openapi.test.ts checks real answers against them.
 * Node-free, so that the console can import it.
 */

const Instant = v.pipe(v.string(), v.isoTimestamp());
const Count = v.pipe(v.number(), v.integer(), v.minValue(0));

export const Role = v.picklist(['ADMIN', 'USER']);
export type Role = v.InferOutput<typeof Role>;

export const User = v.strictObject({
  id: v.string(),
  email: v.string(),
  fullName: v.string(),
  roles: v.array(Role),
  active: v.boolean(),
});
export type User = v.InferOutput<typeof User>;

export const ExtensionSummary = v.strictObject({
  extensionKey: v.string(),
  name: v.string(),
  description: v.string(),
  category: v.string(),
  latestVersion: v.nullable(v.string()),
  /** The current full name of the user who created the extension. */
  author: v.string(),
});
export type ExtensionSummary = v.InferOutput<typeof ExtensionSummary>;

/**
 * A JSON object typed as `T` and documented by a named JSON Schema of the API
 * document's components, which is not a valibot schema (the manifest's).
 */
const documentedJson = <T>(component: string) =>
  v.pipe(v.looseObject({}), v.metadata({ documentedAs: { $ref: `#/components/schemas/${component}` } })) as unknown as v.GenericSchema<T>;

/** A version's manifest, as published: see GET /api/schemas/extension-manifest.json. */
export const ManifestDocument = documentedJson<Manifest>('ExtensionManifest');

export const VersionRecord = v.strictObject({
  version: v.string(),
  /** UTC calendar date of publication, YYYY-MM-DD. */
  releaseDate: v.pipe(v.string(), v.isoDate()),
  yanked: v.boolean(),
  artifactUrl: v.string(),
  manifestUrl: v.nullable(v.string()),
  requiresPlatform: v.nullable(v.string()),
  requiresSdk: v.nullable(v.string()),
  changelog: v.nullable(v.string()),
  /** What the version declares (permissions, events, configuration); null when it was published without one. */
  manifest: v.nullable(ManifestDocument),
});
export type VersionRecord = v.InferOutput<typeof VersionRecord>;

export const ExtensionDetail = v.strictObject({
  extensionKey: v.string(),
  name: v.string(),
  description: v.string(),
  category: v.string(),
  latestVersion: v.nullable(v.string()),
  /** Newest first, by semver precedence. */
  versions: v.array(v.strictObject({ version: v.string(), releaseDate: v.pipe(v.string(), v.isoDate()), yanked: v.boolean() })),
  permissions: v.array(v.string()),
  /**
   * With `?platformVersion=` and/or `?sdkVersion=`: the highest non-yanked
   * version whose requirements those versions meet (stable before
   * prerelease), or null when none does.
   */
  compatibleVersion: v.optional(v.nullable(v.string())),
});
export type ExtensionDetail = v.InferOutput<typeof ExtensionDetail>;

export const CategoryCount = v.strictObject({ category: v.string(), count: Count });
export type CategoryCount = v.InferOutput<typeof CategoryCount>;

export const AuditAction = v.picklist(['create', 'update', 'publish', 'yank', 'unyank']);
export type AuditAction = v.InferOutput<typeof AuditAction>;

export const AuditRecord = v.strictObject({
  id: v.string(),
  at: Instant,
  /** `fullName` is the user's name now, for showing; absent once the user is deleted (`email` was theirs at the time). */
  actor: v.strictObject({ id: v.string(), email: v.string(), fullName: v.optional(v.string()) }),
  action: AuditAction,
  extensionKey: v.string(),
  version: v.optional(v.string()),
  reason: v.optional(v.string()),
  /** create and update: each field set or changed, with its value before and after. */
  changes: v.optional(v.record(v.string(), v.strictObject({ from: v.unknown(), to: v.unknown() }))),
});
export type AuditRecord = v.InferOutput<typeof AuditRecord>;

export const Workspace = v.strictObject({
  id: v.string(),
  name: v.string(),
  /** User ids. */
  members: v.array(v.string()),
  createdAt: Instant,
});
export type Workspace = v.InferOutput<typeof Workspace>;

/** A member of a workspace, named: what its other members may know of them. */
export const WorkspaceMember = v.strictObject({ id: v.string(), email: v.string(), fullName: v.string() });
export type WorkspaceMember = v.InferOutput<typeof WorkspaceMember>;

/** The answer to a workspace's deletion: `clearedWebhooks` names the extensions whose webhook.workspaceId named it and was removed (force only). */
export const DeletedWorkspace = v.strictObject({ id: v.string(), clearedWebhooks: v.array(v.string()) });
export type DeletedWorkspace = v.InferOutput<typeof DeletedWorkspace>;

export const Installation = v.strictObject({
  workspaceId: v.string(),
  extensionKey: v.string(),
  version: v.string(),
  enabled: v.boolean(),
  installedAt: Instant,
  /** The permissions of the installed version's manifest that an ADMIN granted. */
  grantedPermissions: v.array(v.string()),
  /** The required configuration fields of the installed version's manifest that are not set. */
  missingConfiguration: v.array(v.string()),
});
export type Installation = v.InferOutput<typeof Installation>;

export const SubscriberKind = v.picklist(['EXTERNAL_SERVICE', 'IN_PROCESS']);
export type SubscriberKind = v.InferOutput<typeof SubscriberKind>;

const subscriptionEntries = {
  id: v.string(),
  workspaceId: v.string(),
  eventKey: v.string(),
  extensionKey: v.string(),
  kind: SubscriberKind,
  /** With credentials masked: `https://****@host/...`. */
  serviceBaseUrl: v.nullable(v.string()),
  /** Where deliveries are POSTed: `{serviceBaseUrl}/events`. */
  deliveryUrl: v.nullable(v.string()),
  createdAt: Instant,
  enabled: v.boolean(),
  /** Why it is disabled (by an administrator, or after failing too long); null when enabled. */
  disabledReason: v.nullable(v.string()),
};

export const Subscription = v.strictObject(subscriptionEntries);
export type Subscription = v.InferOutput<typeof Subscription>;

/** Answered once, at creation: the only time the signing secret is shown. */
export const CreatedSubscription = v.strictObject({ ...subscriptionEntries, signingSecret: v.string() });
export type CreatedSubscription = v.InferOutput<typeof CreatedSubscription>;

/**
 * An install or an installation's change: the subscriptions its manifest made
 * now, each with its signing secret (shown this once), and, at install of a
 * version whose manifest publishes events, the extension's installation token
 * (shown this once).
 */
export const InstalledExtension = v.strictObject({
  ...Installation.entries,
  subscriptions: v.array(CreatedSubscription),
  installationToken: v.optional(v.string()),
});
export type InstalledExtension = v.InferOutput<typeof InstalledExtension>;

/** A new installation token, shown this once; the old one no longer works. */
export const RotatedInstallationToken = v.strictObject({ installationToken: v.string() });
export type RotatedInstallationToken = v.InferOutput<typeof RotatedInstallationToken>;

/** What an extension's service reads with its installation token: its installation, and its configuration with SECRET values in clear. */
export const OwnInstallation = v.strictObject({
  workspaceId: v.string(),
  extensionKey: v.string(),
  version: v.string(),
  grantedPermissions: v.array(v.string()),
  configuration: v.record(v.string(), v.unknown()),
});
export type OwnInstallation = v.InferOutput<typeof OwnInstallation>;

/** A personal API token, as listed: never with its secret. */
export const ApiToken = v.strictObject({
  id: v.string(),
  /** The user it acts as. */
  userId: v.string(),
  name: v.string(),
  scopes: v.array(v.string()),
  /** The workspaces it is limited to; null: every workspace its user may use. */
  workspaces: v.nullable(v.array(v.string())),
  createdAt: Instant,
  expiresAt: Instant,
  /** The last request made with it (to the minute); null when never used. */
  lastUsedAt: v.nullable(Instant),
});
export type ApiToken = v.InferOutput<typeof ApiToken>;

/** A new token: `token` (`plt_` and 43 base64url characters) is shown this once. */
export const CreatedApiToken = v.strictObject({ ...ApiToken.entries, token: v.string() });
export type CreatedApiToken = v.InferOutput<typeof CreatedApiToken>;

/** A rotated signing secret, shown this once. */
export const RotatedSecret = v.strictObject({ signingSecret: v.string() });
export type RotatedSecret = v.InferOutput<typeof RotatedSecret>;

/** The delivery a subscription test queued. */
export const TestDelivery = v.strictObject({ deliveryId: v.string() });
export type TestDelivery = v.InferOutput<typeof TestDelivery>;

/** `POST /api/workspaces/{id}/deliveries/{deliveryId}/redeliver`: the new delivery, queued. */
export const Redelivery = v.strictObject({ deliveryId: v.string() });
export type Redelivery = v.InferOutput<typeof Redelivery>;

const eventEntries = {
  id: v.string(),
  eventKey: v.string(),
  /** The workspace the event was published into. */
  tenantId: v.string(),
  actor: v.string(),
  /** Who really published it: a user id, `webhook:<key>`, `plugin:<key>` or `platform`; absent on older events. */
  publishedBy: v.optional(v.string()),
  payload: v.record(v.string(), v.unknown()),
  schemaVersion: v.nullable(v.string()),
  occurredAt: Instant,
  /** For an event from an inbound webhook: the provider's own delivery id. */
  sourceId: v.optional(v.string()),
};

export const PlatformEvent = v.strictObject(eventEntries);
export type PlatformEvent = v.InferOutput<typeof PlatformEvent>;

/** A PlatformEvent's own fields, in the order a subscriber receives them (answers that carry an event add fields of their own). */
export const PLATFORM_EVENT_FIELDS = Object.keys(eventEntries) as ReadonlyArray<keyof PlatformEvent>;

export const DeliveryStatus = v.picklist(['PENDING', 'SUCCEEDED', 'DEAD', 'DISCARDED']);
export type DeliveryStatus = v.InferOutput<typeof DeliveryStatus>;

export const DeliveryAttempt = v.strictObject({
  number: Count,
  startedAt: Instant,
  durationMs: v.number(),
  outcome: v.picklist(['SUCCESS', 'RETRY', 'FAILED']),
  httpStatus: v.optional(v.pipe(v.number(), v.integer())),
  error: v.optional(v.string()),
  /** The first bytes of the subscriber's answer. */
  responseExcerpt: v.optional(v.string()),
  /**
   * The HTTP request the attempt sent: where to (credentials in the URL as
   * `****`) and its headers as sent, names lowercased (an Authorization
   * header's credentials as `****`). Its body is the event. Absent when no
   * request went out (the connection failed, an in-process handler, an
   * attempt recorded by an earlier version).
   */
  request: v.optional(v.strictObject({ url: v.string(), headers: v.record(v.string(), v.string()) })),
  /** The headers of the subscriber's answer, names lowercased; absent without an answer. */
  response: v.optional(v.strictObject({ headers: v.record(v.string(), v.string()) })),
});
export type DeliveryAttempt = v.InferOutput<typeof DeliveryAttempt>;

export const DeliveryRecord = v.strictObject({
  id: v.string(),
  eventId: v.string(),
  workspaceId: v.string(),
  /** Null for built-in plugins that receive an event without a subscription (chat). */
  subscriptionId: v.nullable(v.string()),
  extensionKey: v.string(),
  kind: SubscriberKind,
  status: DeliveryStatus,
  attempts: v.array(DeliveryAttempt),
  nextAttemptAt: v.optional(Instant),
  createdAt: Instant,
  completedAt: v.optional(Instant),
  /** The delivery this one sends again (`…/deliveries/{deliveryId}/redeliver`); absent on a delivery made by a publish. */
  redeliveryOf: v.optional(v.string()),
});
export type DeliveryRecord = v.InferOutput<typeof DeliveryRecord>;

/**
 * How an event's deliveries stand, counted by status: SUCCEEDED is delivered,
 * PENDING pending (queued or retrying), DEAD dead (a dead letter), DISCARDED
 * discarded (a dead letter an operator gave up on).
 */
export const DeliverySummary = v.strictObject({ delivered: Count, pending: Count, dead: Count, discarded: Count });
export type DeliverySummary = v.InferOutput<typeof DeliverySummary>;

/** The summary in words, as the console and the CLI show it: "2 delivered · 1 dead", counts of 0 left out; "no deliveries" when all are. */
export function describeDeliverySummary(summary: DeliverySummary): string {
  const parts = (['delivered', 'pending', 'dead', 'discarded'] as const).filter((status) => summary[status] > 0).map((status) => `${summary[status]} ${status}`);
  return parts.length === 0 ? 'no deliveries' : parts.join(' · ');
}

/** An event as the events list shows it: with how its deliveries stand (always sent; absent only from an older daemon). */
export const ListedEvent = v.strictObject({ ...eventEntries, deliverySummary: v.optional(DeliverySummary) });
export type ListedEvent = v.InferOutput<typeof ListedEvent>;

/** `GET /api/workspaces/{id}/events/{eventId}`: the event and the record of each delivery it caused. */
export const EventWithDeliveries = v.strictObject({
  ...eventEntries,
  /** The full name of the user `publishedBy` names, as it is now; absent for a webhook, plugin or the platform, or a deleted user. */
  publisherName: v.optional(v.string()),
  deliveries: v.array(DeliveryRecord),
});
export type EventWithDeliveries = v.InferOutput<typeof EventWithDeliveries>;

export const ChannelSummary = v.strictObject({ channel: v.string(), messageCount: Count, lastMessageAt: Instant });
export type ChannelSummary = v.InferOutput<typeof ChannelSummary>;

export const ChatMessage = v.strictObject({
  id: v.string(),
  channel: v.string(),
  message: v.string(),
  sender: v.string(),
  /** As on the notification event. */
  publishedBy: v.string(),
  eventId: v.string(),
  postedAt: Instant,
});
export type ChatMessage = v.InferOutput<typeof ChatMessage>;

export const WebhookRequestEntry = v.strictObject({
  id: v.string(),
  receivedAt: Instant,
  outcome: v.picklist(['ACCEPTED', 'REJECTED', 'FAILED', 'DUPLICATE']),
  reason: v.string(),
  eventId: v.optional(v.string()),
  /** As received (names lowercased), signatures and keys as `****`. */
  headers: v.record(v.string(), v.string()),
  bodyExcerpt: v.string(),
});
export type WebhookRequestEntry = v.InferOutput<typeof WebhookRequestEntry>;

export const DeadLetter = v.strictObject({
  id: v.string(),
  deliveryId: v.string(),
  event: PlatformEvent,
  subscriber: v.strictObject({
    subscriptionId: v.nullable(v.string()),
    extensionKey: v.string(),
    kind: SubscriberKind,
    serviceBaseUrl: v.nullable(v.string()),
  }),
  attempts: Count,
  lastError: v.strictObject({ message: v.string(), status: v.nullable(v.pipe(v.number(), v.integer())) }),
  firstAttemptAt: v.nullable(Instant),
  deadAt: Instant,
  replayCount: Count,
});
export type DeadLetter = v.InferOutput<typeof DeadLetter>;

/** Where a dead letter stands, for following a replay. */
export const DeadLetterState = v.strictObject({ state: v.picklist(['dead', 'queued', 'gone']) });
export type DeadLetterState = v.InferOutput<typeof DeadLetterState>;

export const ReplayedDeadLetters = v.strictObject({ replayed: Count, skipped: Count });
export type ReplayedDeadLetters = v.InferOutput<typeof ReplayedDeadLetters>;

export const DiscardedDeadLetters = v.strictObject({ discarded: Count });
export type DiscardedDeadLetters = v.InferOutput<typeof DiscardedDeadLetters>;

export const ConfigFieldType = v.picklist(['STRING', 'NUMBER', 'BOOLEAN', 'SECRET']);
export type ConfigFieldType = v.InferOutput<typeof ConfigFieldType>;

/** A SECRET's value is always `"********"` (or null while unset). */
export const ConfigField = v.strictObject({
  name: v.string(),
  type: ConfigFieldType,
  value: v.union([v.string(), v.number(), v.boolean(), v.null()]),
  set: v.boolean(),
});
export type ConfigField = v.InferOutput<typeof ConfigField>;

export const ExtensionConfig = v.strictObject({ fields: v.array(ConfigField) });
export type ExtensionConfig = v.InferOutput<typeof ExtensionConfig>;

export const DaemonStatus = v.strictObject({
  version: v.string(),
  uptimeSeconds: Count,
  pendingDeliveries: Count,
  inFlightDeliveries: Count,
  oldestPendingAgeMs: v.nullable(v.number()),
  deadLetters: Count,
  eventsStored: Count,
});
export type DaemonStatus = v.InferOutput<typeof DaemonStatus>;

export const Health = v.strictObject({ status: v.literal('ok'), version: v.string(), sdkVersion: v.string() });
export type Health = v.InferOutput<typeof Health>;

export const Readiness = v.strictObject({ status: v.literal('ready') });
export type Readiness = v.InferOutput<typeof Readiness>;

/**
 * `meta` of a list paged by offset. A page ends at `limit` or at the byte limit of a page, whichever
 * comes first: `nextOffset` (and the same position as an opaque `nextCursor`) is where the next page
 * starts, absent on the last page.
 */
const NextPage = { nextOffset: v.optional(Count), nextCursor: v.optional(v.string()) };
export const PageMeta = v.strictObject({ total: Count, limit: Count, offset: Count, ...NextPage });
export type PageMeta = v.InferOutput<typeof PageMeta>;

/** `meta` of a list paged by offset that does not count its matches (the audit trail). */
export const OffsetMeta = v.strictObject({ limit: Count, offset: Count, ...NextPage });
export type OffsetMeta = v.InferOutput<typeof OffsetMeta>;

/** `meta` of a list paged by cursor: `nextCursor` is absent on the last page. */
export const CursorMeta = v.strictObject({ limit: Count, nextCursor: v.optional(v.string()) });
export type CursorMeta = v.InferOutput<typeof CursorMeta>;

/**
 * `meta` of an accepted publish: the event's id; `idempotentReplay: true` when
 * the answer repeats that of an earlier publish with the same `Idempotency-Key`
 * (and nothing was published this time).
 */
export const PublishedMeta = v.strictObject({ eventId: v.string(), idempotentReplay: v.optional(v.literal(true)) });

/** An event type of the catalog: built-in, or declared by the manifests of an extension's versions. */
export const EventType = v.strictObject({
  eventKey: v.string(),
  /** The extension that publishes it (`platform` for the daemon's own). */
  extensionKey: v.string(),
  /** As the newest manifest that declares it describes it ('' when none does). */
  description: v.string(),
  /** Lowest first; publishing without a schemaVersion uses the last. */
  schemaVersions: v.array(v.string()),
});
export type EventType = v.InferOutput<typeof EventType>;

const JsonSchemaDocument = v.pipe(
  v.union([v.looseObject({}), v.boolean()]),
  v.metadata({ documentedAs: { type: ['object', 'boolean'], description: 'A JSON Schema (2020-12).' } }),
) as unknown as v.GenericSchema<JsonSchema>;

export const EventTypeDetail = v.strictObject({ ...EventType.entries, schemas: v.record(v.string(), JsonSchemaDocument) });
export type EventTypeDetail = v.InferOutput<typeof EventTypeDetail>;
export type PublishedMeta = v.InferOutput<typeof PublishedMeta>;

/** `meta` of a subscription made for an extension that is not installed: nothing is delivered until it is. */
export const WarningsMeta = v.strictObject({ warnings: v.array(v.string()) });
export type WarningsMeta = v.InferOutput<typeof WarningsMeta>;

/**
 * `data` of an `event.published` item of a live stream: the event, with its
 * payload when the payload's JSON is at most 16 KiB (16,384 bytes); a larger
 * one is left out and `payloadBytes` gives its size (read the event itself,
 * GET /api/workspaces/{id}/events/{eventId}, for the payload).
 */
const { payload: _payload, ...eventWithoutPayload } = eventEntries;
export const StreamEvent = v.union([
  v.strictObject({ ...eventEntries, payloadBytes: v.optional(v.never()) }),
  v.strictObject({ ...eventWithoutPayload, payload: v.optional(v.never()), payloadBytes: Count }),
]);
export type StreamEvent = v.InferOutput<typeof StreamEvent>;

/**
 * `data` of a delivery item of a live stream (`delivery.succeeded`,
 * `delivery.retrying`, `delivery.dead`): never the subscriber's URL or signing secret.
 */
export const StreamDelivery = v.strictObject({
  deliveryId: v.string(),
  eventId: v.string(),
  eventKey: v.string(),
  workspaceId: v.string(),
  subscriptionId: v.nullable(v.string()),
  extensionKey: v.string(),
  kind: SubscriberKind,
  attempts: Count,
  httpStatus: v.optional(v.pipe(v.number(), v.integer())),
  error: v.optional(v.string()),
  nextAttemptAt: v.optional(Instant),
});
export type StreamDelivery = v.InferOutput<typeof StreamDelivery>;

/** `data` of a `subscription.changed` item of a live stream: a subscription enabled or disabled. */
export const StreamSubscription = v.strictObject({
  subscriptionId: v.string(),
  workspaceId: v.string(),
  eventKey: v.string(),
  extensionKey: v.string(),
  kind: SubscriberKind,
  enabled: v.boolean(),
  disabledReason: v.nullable(v.string()),
});
export type StreamSubscription = v.InferOutput<typeof StreamSubscription>;

/** One item of a live stream, as its `id:`, `event:` and `data:` lines carry it (`data` is JSON). */
export const StreamItem = v.union([
  v.strictObject({ id: v.string(), event: v.literal('event.published'), data: StreamEvent }),
  v.strictObject({ id: v.string(), event: v.picklist(['delivery.succeeded', 'delivery.retrying', 'delivery.dead']), data: StreamDelivery }),
  v.strictObject({ id: v.string(), event: v.literal('subscription.changed'), data: StreamSubscription }),
]);
export type StreamItem = v.InferOutput<typeof StreamItem>;

/** One problem with a request's input: where (a field path; empty for the whole body) and what. */
export const ValidationIssue = v.strictObject({ path: v.string(), message: v.string() });
export type ValidationIssue = v.InferOutput<typeof ValidationIssue>;

/**
 * `meta` of an error answer: the request's id (its access line has it) and,
 * by error, the problems with the input (400), the limit that was exceeded
 * (413) or why the daemon is not ready (503).
 */
export const ErrorMeta = v.looseObject({
  requestId: v.string(),
  issues: v.optional(v.array(ValidationIssue)),
  limit: v.optional(Count),
  reasons: v.optional(v.array(v.string())),
  /** 409 CONSENT_REQUIRED: the permissions the version asks for. */
  permissions: v.optional(v.array(v.string())),
  /** 403 for an API token: the scope the route needs. */
  requiredScope: v.optional(v.string()),
});
export type ErrorMeta = v.InferOutput<typeof ErrorMeta>;

/**
 * The resources the API document names (components.schemas), by name: a
 * route's schema refers to them rather than repeating them.
 */
export const namedResources = {
  User,
  ExtensionSummary,
  ExtensionDetail,
  VersionRecord,
  CategoryCount,
  AuditRecord,
  Workspace,
  WorkspaceMember,
  DeletedWorkspace,
  Installation,
  InstalledExtension,
  RotatedInstallationToken,
  OwnInstallation,
  ApiToken,
  CreatedApiToken,
  Subscription,
  CreatedSubscription,
  RotatedSecret,
  TestDelivery,
  Redelivery,
  PlatformEvent,
  DeliverySummary,
  ListedEvent,
  DeliveryAttempt,
  DeliveryRecord,
  EventWithDeliveries,
  ChannelSummary,
  ChatMessage,
  WebhookRequestEntry,
  DeadLetter,
  DeadLetterState,
  ReplayedDeadLetters,
  DiscardedDeadLetters,
  ConfigField,
  ExtensionConfig,
  DaemonStatus,
  Health,
  Readiness,
  PageMeta,
  OffsetMeta,
  CursorMeta,
  PublishedMeta,
  EventType,
  EventTypeDetail,
  WarningsMeta,
  ValidationIssue,
  ErrorMeta,
  StreamEvent,
  StreamDelivery,
  StreamSubscription,
  StreamItem,
};
