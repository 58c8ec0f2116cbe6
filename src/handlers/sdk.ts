/**
 * The plugin SDK: everything an in-process plugin may rely on. A plugin file in
 * the plugins folder default-exports a `Plugin`. The SDK version is compared
 * with a catalog version's `requiresSdk` and shown by GET /api/health.
 */
export const SDK_VERSION = '1.0.0';

/** An event as recorded by the platform (the PlatformEvent of the interface). */
export interface PlatformEvent {
  id: string;
  eventKey: string;
  /** The workspace the event was published into. */
  tenantId: string;
  actor: string;
  /**
   * Who really published it, whatever the actor says: a user id, `webhook:<extensionKey>`
   * for an inbound webhook, `plugin:<extensionKey>` for a plugin's handler. Absent on
   * events recorded before it was introduced.
   */
  publishedBy: string;
  payload: Record<string, unknown>;
  schemaVersion: string | null;
  /** ISO 8601, UTC. */
  occurredAt: string;
  /** For an event from an inbound webhook: the provider's own delivery id (e.g. X-GitHub-Delivery). */
  sourceId?: string;
}

export interface PluginContext {
  /** The extension's configuration values by name, SECRET values decrypted. */
  config: Readonly<Record<string, unknown>>;
  /**
   * Publishes an event into a workspace as this extension. Events published
   * while handling an event form a chain, cut at depth 8.
   */
  publish(workspaceId: string, eventKey: string, payload?: Record<string, unknown>): Promise<{ eventId: string }>;
}

export interface EventHandler {
  /**
   * Asynchronous handlers run on a bounded executor after the publisher got its
   * answer, and are retried on failure. Synchronous ones run before the answer;
   * a failure is dead-lettered (the publish still succeeds).
   */
  async?: boolean;
  handle(event: PlatformEvent, context: PluginContext): unknown | Promise<unknown>;
}

export interface WebhookRequest {
  /** The body exactly as received. */
  rawBody: Buffer;
  /** The body parsed: always a JSON object. */
  body: Record<string, unknown>;
  /** Header values by lowercased name. */
  headers: Record<string, string>;
}

export interface Plugin {
  extensionKey: string;
  events?: Record<string, EventHandler>;
  /**
   * Handles POST /api/webhooks/{extensionKey}. Throw an error whose `code` is
   * "WEBHOOK_REJECTED" to answer 401; any other error answers 500.
   */
  webhook?(request: WebhookRequest, context: PluginContext): unknown | Promise<unknown>;
}
