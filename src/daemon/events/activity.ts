import type { PlatformEvent } from '../../handlers/sdk.js';
import type { Delivery } from '../dispatch/types.js';
import type { PublicSubscription } from '../workspaces/types.js';
import type { StreamDelivery, StreamSubscription } from '../../contract/types.js';

export type DeliveryActivity = 'delivery.succeeded' | 'delivery.retrying' | 'delivery.dead';
export type ActivityType = 'event.published' | DeliveryActivity | 'subscription.changed';

export interface ActivityItem {
  id: number;
  type: ActivityType;
  workspaceId: string;
  /** The event key, so that a stream can filter without parsing the data. */
  eventKey: string;
  /** Bytes of the item's data (JSON), for the ring's budget. */
  size: number;
  /** The item as a server-sent event (`id`, `event`, `data`), encoded once for every stream. */
  readonly frame: Buffer;
}

export interface ActivityListener {
  item(item: ActivityItem): void;
  /** The feed closed (the daemon stops): the listener ends its stream. */
  closed(): void;
}

/** The latest 1,000 items are kept for resuming, within this many bytes (an event may be 256 KiB). */
const RING_ITEMS = 1_000;
const RING_BYTES = 32 * 1024 * 1024;

/**
 * What happens in the daemon, as it happens, for live streams: a typed
 * publish/subscribe with a ring of the latest items for Last-Event-ID.
 * Ids start at the start time in microseconds, so that they keep increasing
 * across a restart and a client's Last-Event-ID from before it asks for
 * everything the new daemon has.
 */
export class ActivityFeed {
  private readonly ring: ActivityItem[] = [];
  private ringBytes = 0;
  private nextId: number;
  private readonly listeners = new Set<ActivityListener>();
  private open = true;

  constructor(now: () => number = Date.now) {
    this.nextId = now() * 1000;
  }

  eventPublished(event: PlatformEvent): void {
    this.add('event.published', event.tenantId, event.eventKey, event);
  }

  delivery(type: DeliveryActivity, delivery: Delivery, extra: Partial<StreamDelivery> = {}): void {
    const { event, subscriber } = delivery;
    const summary: StreamDelivery = {
      deliveryId: delivery.id,
      eventId: event.id,
      eventKey: event.eventKey,
      workspaceId: event.tenantId,
      subscriptionId: subscriber.subscriptionId,
      extensionKey: subscriber.extensionKey,
      kind: subscriber.kind,
      attempts: delivery.attempts,
      ...extra,
    };
    this.add(type, event.tenantId, event.eventKey, summary);
  }

  /** Enabled or disabled, by hand or automatically. */
  subscriptionChanged(subscription: PublicSubscription): void {
    const { id, workspaceId, eventKey, extensionKey, kind, enabled, disabledReason } = subscription;
    const summary: StreamSubscription = { subscriptionId: id, workspaceId, eventKey, extensionKey, kind, enabled, disabledReason };
    this.add('subscription.changed', workspaceId, eventKey, summary);
  }

  /** Items after `lastId` still in the ring, oldest first (all of them for an id older than the ring). */
  since(lastId: number): ActivityItem[] {
    return this.ring.filter((item) => item.id > lastId);
  }

  /** Returns the unsubscribe function; on a closed feed the listener is closed at once. */
  subscribe(listener: ActivityListener): () => void {
    if (!this.open) {
      listener.closed();
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Ends every stream: shutdown is not held up by clients that stay connected. */
  close(): void {
    this.open = false;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener.closed();
  }

  private add(type: ActivityType, workspaceId: string, eventKey: string, data: unknown): void {
    const item = sseItem(this.nextId++, type, workspaceId, eventKey, JSON.stringify(data));
    this.ring.push(item);
    this.ringBytes += item.size;
    while (this.ring.length > RING_ITEMS || (this.ringBytes > RING_BYTES && this.ring.length > 1)) {
      this.ringBytes -= this.ring.shift()!.size;
    }
    for (const listener of this.listeners) listener.item(item);
  }
}

/** An item whose frame is encoded when a stream first needs it; the JSON is let go then. */
function sseItem(id: number, type: ActivityType, workspaceId: string, eventKey: string, json: string): ActivityItem {
  let data: string | null = json;
  let frame: Buffer | undefined;
  return {
    id,
    type,
    workspaceId,
    eventKey,
    size: json.length,
    get frame() {
      frame ??= Buffer.from(`id: ${id}\nevent: ${type}\ndata: ${data}\n\n`);
      data = null;
      return frame;
    },
  };
}
