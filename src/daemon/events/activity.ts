import type { PlatformEvent } from '../../handlers/sdk.js';
import type { Delivery } from '../dispatch/types.js';
import type { PublicSubscription } from '../workspaces/types.js';
import type { StreamDelivery, StreamEvent, StreamSubscription } from '../../contract/types.js';

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
  /** For an item appended on this daemon: its place among this daemon's appends (NewActivity.appendNo). */
  appendNo?: number;
}

export interface ActivityListener {
  item(item: ActivityItem): void;
  /** The feed closed (the daemon stops): the listener ends its stream. */
  closed(): void;
}

/**
 * An event's payload travels on live streams only while its JSON is at most
 * this many bytes; a larger one is announced by its size (`payloadBytes`) and
 * read from the event listing. An item is then at most about 17 KiB: a
 * consumer's unread budget holds dozens, and the history below a few MiB per
 * hundred, whatever the events weigh (a payload may be 256 KiB).
 */
export const STREAM_PAYLOAD_BYTES = 16 * 1024;

/**
 * Every daemon keeps the latest 1,000 items for resuming, within this many
 * bytes: a safety bound, out of reach while items stay as small as the
 * payload limit above makes them (1,000 of them are about 17 MiB at most).
 */
export const KEPT_ITEMS = 1_000;
export const KEPT_BYTES = 32 * 1024 * 1024;

/** An item before the log gave it its id. */
export interface NewActivity {
  type: ActivityType;
  workspaceId: string;
  eventKey: string;
  /** The item's data as JSON. */
  json: string;
  /**
   * This daemon's count of appends, this one included: lets a stream that
   * opens before an earlier append has its id (a shared log gives ids after a
   * round trip) tell that item from later ones.
   */
  appendNo: number;
}

/**
 * Where activity items get their ids and reach every daemon that shares the
 * log (store/file/activity.ts: this daemon alone; store/postgres/activity.ts:
 * every daemon on the database). Ids increase in the order items reach
 * followers, on every daemon alike, so that a Last-Event-ID means the same
 * place in the history on each.
 */
export interface ActivityLog {
  /**
   * Resolves with the items kept from before (oldest first, the latest
   * KEPT_ITEMS at most); from then on `onItems` hears every item appended
   * after them, on this daemon or any other sharing the log, once each and
   * in id order.
   */
  follow(onItems: (items: ActivityItem[]) => void): Promise<ActivityItem[]>;
  /** Gives the item the next id; it reaches `onItems` (at once, or after a round trip on a shared log). */
  append(entry: NewActivity): void;
  /** Resolves once every item that had an id when it was called has reached `onItems`. */
  caughtUp(): Promise<void>;
}

interface Follower {
  listener: ActivityListener;
  /** Items up to this id were seen already (the client's Last-Event-ID), or came before the stream. */
  after: number;
  /**
   * This daemon's appends up to this number came before the stream: the
   * client never asked for them. One arriving later (its id came after a
   * round trip) moves `after` up to it.
   */
  appendedBefore: number;
}

/**
 * What happens on the platform, as it happens, for live streams: a typed
 * publish/subscribe over the activity log, with a ring of the latest items
 * for Last-Event-ID. Items from other daemons sharing the log arrive here
 * too, in the same order as everywhere.
 */
export class ActivityFeed {
  private readonly ring: ActivityItem[] = [];
  private ringBytes = 0;
  /** The highest id heard (0: none yet). */
  private newestId = 0;
  private readonly followers = new Set<Follower>();
  /** Items appended on this daemon so far. */
  private appended = 0;
  private open = true;

  private constructor(private readonly log: ActivityLog) {}

  /** Loads the kept history and follows the log. */
  static async open(log: ActivityLog): Promise<ActivityFeed> {
    const feed = new ActivityFeed(log);
    feed.keep(await log.follow((items) => feed.received(items)));
    return feed;
  }

  eventPublished(event: PlatformEvent): void {
    const json = JSON.stringify(event);
    // Within the bound as a whole, its payload is too: only a larger event is measured and maybe cut.
    const carried = Buffer.byteLength(json) <= STREAM_PAYLOAD_BYTES ? json : JSON.stringify(streamEvent(event));
    this.append('event.published', event.tenantId, event.eventKey, carried);
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
    this.append(type, event.tenantId, event.eventKey, JSON.stringify(summary));
  }

  /** Enabled or disabled, by hand or automatically. */
  subscriptionChanged(subscription: PublicSubscription): void {
    const { id, workspaceId, eventKey, extensionKey, kind, enabled, disabledReason } = subscription;
    const summary: StreamSubscription = { subscriptionId: id, workspaceId, eventKey, extensionKey, kind, enabled, disabledReason };
    this.append('subscription.changed', workspaceId, eventKey, JSON.stringify(summary));
  }

  private append(type: ActivityType, workspaceId: string, eventKey: string, json: string): void {
    this.appended += 1;
    this.log.append({ type, workspaceId, eventKey, json, appendNo: this.appended });
  }

  /**
   * Hands the listener the kept items after `lastEventId` (every kept item
   * for an id older than them), then every new item after it. An id ahead of
   * what this daemon has heard came from another daemon that is ahead: items
   * up to it are held back until heard, so none is repeated. An id still
   * ahead once every issued item has been heard was never issued by this
   * log (a client of another platform, or an id from before the clock was
   * set back): the stream then goes on from there, with what arrived
   * meanwhile. A stream without a Last-Event-ID, or with one never issued,
   * gets nothing appended on this daemon before it opened.
   * Returns the unsubscribe function; on a closed feed the listener is closed at once.
   */
  follow(lastEventId: number | null, listener: ActivityListener): () => void {
    if (!this.open) {
      listener.closed();
      return () => undefined;
    }
    const follower: Follower = { listener, after: lastEventId ?? this.newestId, appendedBefore: lastEventId === null ? this.appended : 0 };
    if (lastEventId !== null) {
      for (const item of this.ring) if (item.id > lastEventId) listener.item(item);
      if (lastEventId > this.newestId) {
        const heardAtStart = this.newestId;
        const appendedAtStart = this.appended;
        this.log.caughtUp().then(
          () => {
            if (lastEventId <= this.newestId || !this.followers.has(follower)) return;
            // Never issued: what arrived while that was being found out was held back; it is new to this client.
            follower.after = heardAtStart;
            follower.appendedBefore = appendedAtStart;
            for (const item of this.ring) if (item.id > heardAtStart) this.offer(follower, item);
          },
          // Unknown whether the id was issued: holding back stays safe (nothing repeated).
          () => undefined,
        );
      }
    }
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }

  /** Ends every stream: shutdown is not held up by clients that stay connected. */
  close(): void {
    this.open = false;
    const followers = [...this.followers];
    this.followers.clear();
    for (const { listener } of followers) listener.closed();
  }

  private received(items: ActivityItem[]): void {
    this.keep(items);
    for (const follower of this.followers) for (const item of items) this.offer(follower, item);
  }

  private offer(follower: Follower, item: ActivityItem): void {
    if (item.appendNo !== undefined && item.appendNo <= follower.appendedBefore) follower.after = Math.max(follower.after, item.id);
    else if (item.id > follower.after) follower.listener.item(item);
  }

  private keep(items: ActivityItem[]): void {
    for (const item of items) {
      this.ring.push(item);
      this.ringBytes += item.size;
      this.newestId = item.id;
    }
    while (this.ring.length > KEPT_ITEMS || (this.ringBytes > KEPT_BYTES && this.ring.length > 1)) {
      this.ringBytes -= this.ring.shift()!.size;
    }
  }
}

/** The event as live streams carry it: without a payload over STREAM_PAYLOAD_BYTES, and with its size instead. */
function streamEvent(event: PlatformEvent): StreamEvent {
  const payloadBytes = Buffer.byteLength(JSON.stringify(event.payload));
  if (payloadBytes <= STREAM_PAYLOAD_BYTES) return event;
  const { payload: _payload, ...rest } = event;
  return { ...rest, payloadBytes };
}

/**
 * An item whose frame is encoded when a stream first needs it; the JSON is
 * let go then. Items read back from a shared log have no append number.
 */
export function activityItem(id: number, { type, workspaceId, eventKey, json, appendNo }: Omit<NewActivity, 'appendNo'> & { appendNo?: number }): ActivityItem {
  let data: string | null = json;
  let frame: Buffer | undefined;
  return {
    id,
    type,
    workspaceId,
    eventKey,
    size: json.length,
    appendNo,
    get frame() {
      frame ??= Buffer.from(`id: ${id}\nevent: ${type}\ndata: ${data}\n\n`);
      data = null;
      return frame;
    },
  };
}
