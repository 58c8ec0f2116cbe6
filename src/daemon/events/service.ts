import { randomUUID } from 'node:crypto';
import type { PlatformEvent, PluginContext } from '../../handlers/sdk.js';
import type { DeliveryQuery, DeliveryRecord } from '../dispatch/types.js';
import { conflict, DomainError, notFound } from '../errors.js';
import type { HandlerRun } from '../dispatch/dispatcher.js';
import type { DeliveryPage, DeliveryStore } from '../dispatch/store.js';
import { CarriedEvent, type Delivery, type SubscriberRef } from '../dispatch/types.js';
import type { Logger } from '../log.js';
import type { DisabledSubscription, SubscriptionService } from '../workspaces/subscriptions.js';
import type { SubscriberRegistry } from '../workspaces/registry.js';
import type { PageBudget } from '../paging.js';
import type { DomainMetrics } from '../metrics.js';
import type { PluginRegistry } from '../plugins/registry.js';
import { parseOrThrow } from '../validation.js';
import type { WorkspaceService } from '../workspaces/service.js';
import type { ExtensionCaller, InstallationService } from '../workspaces/installations.js';
import type { StoredSubscription } from '../workspaces/types.js';
import type { ActivityFeed } from './activity.js';
import type { EventPageQuery, RetentionPolicy } from './types.js';
import type { EventPage, EventStore } from './store.js';
import type { ListedEvent } from './delivery-summary.js';
import { PublishEventBody } from '../../contract/requests.js';
import { checkPayload, type PublishEventInput } from './schemas.js';

/** An event published from outside has depth 1; an event published by a handler of a depth-n event has n + 1. */
const MAX_CHAIN_DEPTH = 8;

/** What publishing needs of the dispatcher (built beside this service, in services.ts). */
export interface DispatchPort {
  /** Deliveries the store holds for this daemon, to run when a slot is free. */
  enqueue(deliveries: readonly Delivery[]): void;
  /** Runs one delivery at once (a synchronous in-process handler, before the publisher is answered). */
  runNow(delivery: Delivery): Promise<void>;
}

export interface EventServiceDependencies {
  events: EventStore;
  deliveries: DeliveryStore;
  workspaces: WorkspaceService;
  subscriptions: SubscriptionService;
  /** What an extension's installation token may publish and read. */
  installations: Pick<InstallationService, 'assertMayPublish' | 'assertOwnSubscription'>;
  /** Memory of the subscribers, for masking their credentials in what deliveries recorded. */
  subscribers: SubscriberRegistry;
  plugins: PluginRegistry;
  /** The configuration an extension's handlers see in their context. */
  configFor(extensionKey: string): Readonly<Record<string, unknown>>;
  /** A user's full name, for who published an event (undefined: no such user now). */
  fullNameOf(userId: string): string | undefined;
  dispatch: DispatchPort;
  retention: RetentionPolicy;
  /** The event types with schemas: a payload of a typed key must match its schema. */
  eventTypes: EventTypeChecker;
  /** PLATFORM_MAX_PAYLOAD: bytes of JSON. */
  maxPayloadBytes: number;
  logger: Logger;
  metrics: DomainMetrics;
  /** Live streams see every published event and every delivery outcome. */
  activity: ActivityFeed;
  now?: () => number;
}

/** What publishing asks of the event-type catalog (catalog/event-types.ts). */
export interface EventTypeChecker {
  /** The schemaVersion to record (the highest when none is given); throws 400 when the payload does not match. */
  check(eventKey: string, schemaVersion: string | undefined, payload: Record<string, unknown>): string | null;
}

/** An event before it is recorded: what the publisher decides; `record` adds its id and time. */
type EventDraft = Omit<PlatformEvent, 'id' | 'occurredAt'>;

/** The daemon itself, publishing what it noticed. */
const PLATFORM_ORIGIN: Origin = { actor: 'platform', publishedBy: 'platform', depth: 1 };

/** Who publishes: the default actor, who is recorded as publishedBy, and the position in an event chain. */
export interface Origin {
  actor: string;
  publishedBy: string;
  depth: number;
  /** The provider's delivery id of an inbound webhook call, kept on the event. */
  sourceId?: string;
  /** The event's id, when the publisher chose it beforehand (an idempotent publish records it with its key first); else a new one. */
  eventId?: string;
}

/**
 * Publishing: an event is validated, recorded in the event log, and handed to
 * its subscribers through the durable outbox. The publisher is answered only
 * once the event and all its deliveries are on disk, and after synchronous
 * in-process handlers ran; everything else is the dispatcher's.
 */
export class EventService {
  private readonly now: () => number;

  constructor(private readonly deps: EventServiceDependencies) {
    this.now = deps.now ?? Date.now;
  }

  /** The dispatcher disabled a subscription that kept failing: the daemon says so in its workspace. */
  async subscriptionDisabled({ workspaceId, subscriptionId, extensionKey, reason }: DisabledSubscription): Promise<void> {
    this.deps.logger.info(`subscription ${subscriptionId} of ${extensionKey} in ${workspaceId} disabled: ${reason}`);
    const payload = { subscriptionId, extensionKey, reason };
    await this.publish(workspaceId, { eventKey: 'platform.subscription.disabled', payload }, PLATFORM_ORIGIN);
  }

  async publish(workspaceId: string, input: PublishEventInput, origin: Origin): Promise<{ eventId: string }> {
    // Both reads at once: on PostgreSQL each is a round trip that every publish waits for.
    const [, active] = await Promise.all([this.deps.workspaces.assertExists(workspaceId), this.deps.subscriptions.activeSubscriptions(workspaceId, input.eventKey)]);
    // Every path in (HTTP, webhook, plugin) passes the same checks, before anything is recorded.
    const payload = checkPayload(input.payload ?? {}, this.deps.maxPayloadBytes);
    const schemaVersion = this.deps.eventTypes.check(input.eventKey, input.schemaVersion, payload);
    await this.deps.plugins.admit(workspaceId, input.eventKey, payload);

    const draft: EventDraft = {
      eventKey: input.eventKey,
      tenantId: workspaceId,
      actor: input.actor ?? origin.actor,
      publishedBy: origin.publishedBy,
      payload,
      schemaVersion,
      ...(origin.sourceId === undefined ? {} : { sourceId: origin.sourceId }),
    };
    const { event } = await this.record(draft, origin.depth, (event) => this.subscribersOf(event, active), origin.eventId);
    return { eventId: event.id };
  }

  /**
   * An extension's own service publishes with its installation token: into
   * its workspace, only the event keys its manifest publishes (403), as
   * `extension:<key>`, the actor defaulting to the key.
   */
  async publishFromExtension(caller: ExtensionCaller, workspaceId: string, input: PublishEventInput, eventId?: string): Promise<{ eventId: string }> {
    await this.deps.installations.assertMayPublish(caller, workspaceId, input.eventKey);
    const origin: Origin = { actor: caller.extensionKey, publishedBy: `extension:${caller.extensionKey}`, depth: 1 };
    return this.publish(workspaceId, input, eventId === undefined ? origin : { ...origin, eventId });
  }

  /** Newest first, every retained event with the summary of its deliveries, into `budget`; see EventStore.page. */
  async list(workspaceId: string, query: EventPageQuery, budget: PageBudget<ListedEvent>): Promise<EventPage> {
    await this.deps.workspaces.assertExists(workspaceId);
    return this.deps.events.page(workspaceId, query, this.deps.retention, this.now(), budget);
  }

  /**
   * A `platform.test` event delivered to one subscription only, whatever its
   * event key; the event is recorded like any other.
   */
  async sendTest(workspaceId: string, subscriptionId: string, payload: Record<string, unknown>, actor: string): Promise<{ deliveryId: string }> {
    const subscription = await this.deps.subscriptions.subscription(workspaceId, subscriptionId);
    const checked = checkPayload(payload, this.deps.maxPayloadBytes);
    const { id, extensionKey, kind, serviceBaseUrl } = subscription;
    const draft: EventDraft = { eventKey: 'platform.test', tenantId: workspaceId, actor, publishedBy: PLATFORM_ORIGIN.publishedBy, payload: checked, schemaVersion: null };
    const { deliveries } = await this.record(draft, PLATFORM_ORIGIN.depth, () => [{ subscriptionId: id, extensionKey, kind, serviceBaseUrl }]);
    return { deliveryId: deliveries[0]!.id };
  }

  /** The event with the record of every delivery it caused. */
  async show(workspaceId: string, eventId: string): Promise<PlatformEvent & { publisherName?: string; deliveries: DeliveryRecord[] }> {
    await this.deps.workspaces.assertExists(workspaceId);
    const event = await this.deps.events.find(workspaceId, eventId);
    if (!event) throw notFound(`event ${eventId} not found in workspace ${workspaceId}`);
    const deliveries = await this.deps.deliveries.ofEvent(workspaceId, eventId);
    // Read now, not stored: a renamed user shows their current name; a deleted one, none (publishedBy stays).
    const publisherName = event.publishedBy === undefined ? undefined : this.deps.fullNameOf(event.publishedBy);
    return { ...event, ...(publisherName === undefined ? {} : { publisherName }), deliveries: deliveries.map((record) => this.withoutCredentials(record)) };
  }

  /** One delivery record of the workspace, whatever its status; 404 when the workspace has none of that id. */
  async delivery(workspaceId: string, deliveryId: string): Promise<DeliveryRecord> {
    await this.deps.workspaces.assertExists(workspaceId);
    const record = await this.deps.deliveries.find(workspaceId, deliveryId);
    if (!record) throw notFound(`delivery ${deliveryId} not found in workspace ${workspaceId}`);
    return this.withoutCredentials(record);
  }

  /**
   * Sends a delivery again, whatever its status: a new delivery (own id, so
   * its own `webhook-id`) of the same event to the same subscription or
   * plugin, recording `redeliveryOf`, queued durably like any delivery before
   * this resolves and then the dispatcher's (retries, dead letter). 404 for a
   * delivery the workspace does not have; 409, with nothing queued, when its
   * subscriber no longer receives deliveries or its event is no longer kept.
   * It starts an event chain of its own (depth 1), as an operator's action.
   */
  async redeliver(workspaceId: string, deliveryId: string): Promise<{ deliveryId: string }> {
    const original = await this.delivery(workspaceId, deliveryId);
    const subscriber = await this.currentSubscriber(original);
    const event = await this.deps.events.find(workspaceId, original.eventId);
    if (!event) throw conflict(`cannot redeliver ${deliveryId}: its event ${original.eventId} is no longer kept`);
    const delivery: Delivery = { ...newDelivery(CarriedEvent.of(event), PLATFORM_ORIGIN.depth, subscriber, this.now()), redeliveryOf: original.id };
    this.deps.dispatch.enqueue(await this.deps.deliveries.redeliver(delivery));
    return { deliveryId: delivery.id };
  }

  /** The subscriber of a recorded delivery as it is now; 409 when it no longer receives deliveries. */
  private async currentSubscriber(record: DeliveryRecord): Promise<SubscriberRef> {
    const refuse = (why: string) => conflict(`cannot redeliver ${record.id}: ${why}`);
    const { subscriptionId, extensionKey, workspaceId } = record;
    if (subscriptionId === null) {
      if (!this.deps.plugins.handlerFor(extensionKey, record.eventKey)) throw refuse(`${extensionKey} no longer handles ${record.eventKey}`);
      return builtInSubscriber(extensionKey);
    }
    let subscription: Awaited<ReturnType<SubscriptionService['subscription']>>;
    try {
      subscription = await this.deps.subscriptions.subscription(workspaceId, subscriptionId);
    } catch (error) {
      if (error instanceof DomainError && error.code === 'NOT_FOUND') throw refuse('subscription deleted');
      throw error;
    }
    const inactive = this.deps.subscribers.inactivity(subscriptionId);
    if (inactive) throw refuse(inactive);
    return subscriberOf(subscription);
  }

  /** The delivery records of a workspace; an extension's service reads those of one of its own subscriptions only (403). */
  async deliveries(workspaceId: string, query: DeliveryQuery, budget: PageBudget<DeliveryRecord>, extension?: ExtensionCaller): Promise<DeliveryPage> {
    if (extension) await this.deps.installations.assertOwnSubscription(extension, workspaceId, query.subscriptionId);
    await this.deps.workspaces.assertExists(workspaceId);
    return this.deps.deliveries.list(workspaceId, query, budget);
  }

  /**
   * A delivery record as it is shown: excerpts are recorded with the
   * subscription's credentials masked; those recorded by an earlier version
   * are masked here. A page of records is serialised with it.
   */
  withoutCredentials(record: DeliveryRecord): DeliveryRecord {
    if (!record.attempts.some((attempt) => attempt.responseExcerpt !== undefined)) return record;
    const mask = this.deps.subscribers.credentialMaskOf(record.subscriptionId);
    return {
      ...record,
      attempts: record.attempts.map((attempt) =>
        attempt.responseExcerpt === undefined ? attempt : { ...attempt, responseExcerpt: mask(attempt.responseExcerpt) },
      ),
    };
  }

  /** Expired events go, and the records of their deliveries with them. */
  async applyRetention(): Promise<{ removedEvents: number; removedDeliveries: number }> {
    return this.deps.events.applyRetention(this.deps.retention, this.now());
  }

  storedEvents(): Promise<number> {
    return this.deps.events.storedCount();
  }

  /**
   * Makes the event (id, time) and a delivery to each of its subscribers,
   * records them durably, counts and shows the event, and hands the
   * deliveries over: synchronous in-process handlers run before this
   * resolves, everything else is the dispatcher's. Every event the daemon
   * records, published or sent as a test, passes here.
   */
  private async record(
    draft: EventDraft,
    depth: number,
    subscribers: (event: PlatformEvent) => SubscriberRef[],
    eventId: string = randomUUID(),
  ): Promise<{ event: PlatformEvent; deliveries: Delivery[] }> {
    const now = this.now();
    const event: PlatformEvent = {
      id: eventId,
      eventKey: draft.eventKey,
      tenantId: draft.tenantId,
      actor: draft.actor,
      publishedBy: draft.publishedBy,
      payload: draft.payload,
      schemaVersion: draft.schemaVersion,
      occurredAt: new Date(now).toISOString(),
      ...(draft.sourceId === undefined ? {} : { sourceId: draft.sourceId }),
    };
    const carried = CarriedEvent.of(event);
    const deliveries = subscribers(event).map((subscriber) => newDelivery(carried, depth, subscriber, now));
    const held = await this.deps.events.publish(event, deliveries);
    this.deps.metrics.eventPublished();
    this.deps.activity.eventPublished(event);

    // In-process deliveries are always held: synchronous handlers run before the publisher is answered.
    const synchronous = held.filter((delivery) => this.isSynchronous(delivery));
    this.deps.dispatch.enqueue(held.filter((delivery) => !synchronous.includes(delivery)));
    for (const delivery of synchronous) await this.deps.dispatch.runNow(delivery);
    return { event, deliveries };
  }

  /** The workspace's active subscriptions to the event, plus built-ins that receive it everywhere (once per extension). */
  private subscribersOf(event: PlatformEvent, active: readonly StoredSubscription[]): SubscriberRef[] {
    const subscribers = active.map(subscriberOf);
    for (const extensionKey of this.deps.plugins.receiversEverywhere(event.eventKey)) {
      const subscribed = subscribers.some((s) => s.kind === 'IN_PROCESS' && s.extensionKey === extensionKey);
      if (!subscribed) subscribers.push(builtInSubscriber(extensionKey));
    }
    return subscribers;
  }

  private isSynchronous(delivery: Delivery): boolean {
    if (delivery.subscriber.kind !== 'IN_PROCESS') return false;
    const handler = this.deps.plugins.handlerFor(delivery.subscriber.extensionKey, delivery.event.eventKey);
    return handler !== undefined && handler.async !== true;
  }

  /**
   * The context of a plugin handler run. Its publish extends the chain of the
   * event being handled (parentDepth 0 for a webhook call) and refuses, recording
   * why, beyond MAX_CHAIN_DEPTH: that ends loops of handlers triggering each other.
   * Its events are publishedBy `webhook:<key>` from a webhook handler, else `plugin:<key>`.
   */
  pluginContext(extensionKey: string, parentDepth: number): HandlerRun {
    let cut: string | null = null;
    const publishedBy = `${parentDepth === 0 ? 'webhook' : 'plugin'}:${extensionKey}`;
    const context: PluginContext = {
      config: this.deps.configFor(extensionKey),
      publish: async (workspaceId, eventKey, payload) => {
        if (parentDepth >= MAX_CHAIN_DEPTH) {
          cut = `event chain cut at depth ${MAX_CHAIN_DEPTH}: ${extensionKey} tried to publish ${eventKey}`;
          throw new Error(cut);
        }
        // A plugin is an edge too: its arguments are validated like a request body.
        const input = parseOrThrow(PublishEventBody, { eventKey, ...(payload === undefined ? {} : { payload }) });
        return this.publish(workspaceId, input, { actor: extensionKey, publishedBy, depth: parentDepth + 1 });
      },
    };
    return { context, chainCut: () => cut };
  }
}

/** Who a subscription's deliveries go to. */
const subscriberOf = ({ id, extensionKey, kind, serviceBaseUrl }: Pick<StoredSubscription, 'id' | 'extensionKey' | 'kind' | 'serviceBaseUrl'>): SubscriberRef => ({
  subscriptionId: id,
  extensionKey,
  kind,
  serviceBaseUrl,
});

/** A built-in plugin that receives an event without a subscription (chat). */
const builtInSubscriber = (extensionKey: string): SubscriberRef => ({ subscriptionId: null, extensionKey, kind: 'IN_PROCESS', serviceBaseUrl: null });

/** A delivery of the event to one subscriber, due at once. */
export function newDelivery(event: CarriedEvent, depth: number, subscriber: SubscriberRef, now: number): Delivery {
  return {
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    event,
    depth,
    subscriber,
    attempts: 0,
    nextAttemptAt: now,
    enqueuedAt: new Date(now).toISOString(),
    firstAttemptAt: null,
    lastError: null,
    replayCount: 0,
  };
}
