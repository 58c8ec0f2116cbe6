import * as v from 'valibot';
import {
  AuditRecord,
  CategoryCount,
  ChannelSummary,
  ChatMessage,
  CreatedSubscription,
  CursorMeta,
  DaemonStatus,
  DeadLetter,
  DeadLetterState,
  DeletedWorkspace,
  DeliveryRecord,
  DiscardedDeadLetters,
  EventWithDeliveries,
  ExtensionConfig,
  ExtensionDetail,
  ExtensionSummary,
  Health,
  Installation,
  OffsetMeta,
  PageMeta,
  PlatformEvent,
  PublishedMeta,
  Readiness,
  ReplayedDeadLetters,
  RotatedSecret,
  Subscription,
  TestDelivery,
  User,
  VersionRecord,
  WebhookRequestEntry,
  WarningsMeta,
  Workspace,
} from './resources.js';

/** The `data` and `meta` of a route's success envelope. */
export interface SuccessShape {
  data: v.GenericSchema;
  meta: v.GenericSchema;
}

const answers = (data: v.GenericSchema, meta: v.GenericSchema = v.null()): SuccessShape => ({ data, meta });
const nothing = answers(v.null());

/**
 * Every route that answers success with the envelope, by "METHOD pattern" as
 * the router registers it. Routes answering 204 or something other than the
 * envelope (a stream, an archive, metrics, the API document) are not here.
 * The API document takes each route's success schema from this table, and
 * fails to build for a route missing from it.
 */
export const successShapes: Record<string, SuccessShape> = {
  'GET /api/health': answers(Health),
  'GET /api/health/ready': answers(Readiness),

  'POST /api/auth/login': answers(User),
  'GET /api/auth/me': answers(User),
  'PUT /api/auth/me/password': nothing,
  'POST /api/auth/logout': nothing,

  'POST /api/admin/users': answers(User),
  'GET /api/admin/users': answers(v.array(User)),
  'PATCH /api/admin/users/:id': answers(User),
  'POST /api/admin/users/:id/password': answers(User),

  'GET /api/marketplace/extensions': answers(v.array(ExtensionSummary), PageMeta),
  'GET /api/marketplace/extensions/:key': answers(ExtensionDetail),
  'GET /api/marketplace/extensions/:key/versions/:version': answers(VersionRecord),
  'GET /api/marketplace/categories': answers(v.array(CategoryCount)),
  'POST /api/admin/marketplace/extensions': answers(ExtensionDetail),
  'PUT /api/admin/marketplace/extensions/:key': answers(ExtensionDetail),
  'POST /api/admin/marketplace/extensions/:key/versions': answers(VersionRecord),
  'PUT /api/admin/marketplace/extensions/:key/versions/:version/unyank': answers(VersionRecord),
  'GET /api/admin/audit': answers(v.array(AuditRecord), OffsetMeta),
  'GET /api/admin/marketplace/extensions/:key/config': answers(ExtensionConfig),
  'PUT /api/admin/marketplace/extensions/:key/config': answers(ExtensionConfig),

  'POST /api/admin/workspaces': answers(Workspace),
  'GET /api/workspaces': answers(v.array(Workspace)),
  'GET /api/workspaces/:id': answers(Workspace),
  'PATCH /api/admin/workspaces/:id': answers(Workspace),
  'DELETE /api/admin/workspaces/:id': answers(DeletedWorkspace),
  'PUT /api/admin/workspaces/:id/members/:userId': answers(Workspace),

  'POST /api/workspaces/:id/extensions': answers(Installation),
  'GET /api/workspaces/:id/extensions': answers(v.array(Installation)),
  'PATCH /api/workspaces/:id/extensions/:key': answers(Installation),

  'POST /api/workspaces/:id/subscriptions': answers(CreatedSubscription, v.nullable(WarningsMeta)),
  'GET /api/workspaces/:id/subscriptions': answers(v.array(Subscription)),
  'PATCH /api/workspaces/:id/subscriptions/:subscriptionId': answers(Subscription),
  'POST /api/workspaces/:id/subscriptions/:subscriptionId/rotate-secret': answers(RotatedSecret),
  'POST /api/workspaces/:id/subscriptions/:subscriptionId/test': answers(TestDelivery),

  'POST /api/workspaces/:id/events/publish': answers(v.null(), PublishedMeta),
  'GET /api/workspaces/:id/events': answers(v.array(PlatformEvent), CursorMeta),
  'GET /api/workspaces/:id/events/:eventId': answers(EventWithDeliveries),
  'GET /api/workspaces/:id/deliveries': answers(v.array(DeliveryRecord), CursorMeta),

  'GET /api/workspaces/:id/chat/channels': answers(v.array(ChannelSummary)),
  'GET /api/workspaces/:id/chat/channels/:channel/messages': answers(v.array(ChatMessage), CursorMeta),

  'GET /api/admin/dead-letters': answers(v.array(DeadLetter), PageMeta),
  'GET /api/admin/dead-letters/:id': answers(DeadLetter),
  'GET /api/admin/dead-letters/:id/state': answers(DeadLetterState),
  'POST /api/admin/dead-letters/:id/replay': nothing,
  'POST /api/admin/dead-letters/replay': answers(ReplayedDeadLetters),
  'POST /api/admin/dead-letters/discard': answers(DiscardedDeadLetters),

  'GET /api/admin/status': answers(DaemonStatus),

  // A declarative verifier publishes (meta.eventId) or recognises a duplicate; a plugin's handler answers what it returns.
  'POST /api/webhooks/:extensionKey': answers(
    v.unknown(),
    v.nullable(v.union([PublishedMeta, v.strictObject({ duplicate: v.literal(true) })])),
  ),
  'GET /api/admin/webhooks/:extensionKey/requests': answers(v.array(WebhookRequestEntry), CursorMeta),
};
