import { toPublicDeliveryRecord } from '../../dispatch/types.js';
import type { HttpContext } from '../context.js';
import { checkRange, decodeCursor, encodeCursor } from '../cursor.js';
import { PageReply, Reply, type Handlers } from '../endpoint.js';
import type { ListedEvent } from '../../events/delivery-summary.js';
import { PageBudget } from '../../paging.js';

/** Where the page stopped, in the event store's own terms: the store reads it (and refuses one it cannot). */
const isEventCursor = (position: unknown): position is string => typeof position === 'string';

export const eventRoutes = ({ services: { events, idempotency }, config: { maxPageBytes } }: HttpContext) =>
  ({
    publishEvent: async ({ params, body, headers, rawBody, caller }) => {
      // A user publishes as themself; an extension's service (its installation token) as the extension, within its manifest.
      const publish = (eventId?: string) =>
        caller.kind === 'extension'
          ? events.publishFromExtension(caller, params.id, body, eventId)
          : events.publish(params.id, body, { actor: caller.user.email, publishedBy: caller.user.id, depth: 1, ...(eventId === undefined ? {} : { eventId }) });
      const key = headers['Idempotency-Key'];
      if (key === undefined) {
        const { eventId } = await publish();
        return new Reply(null, { eventId });
      }
      // "The same body" is the same bytes: the hash is of rawBody, as received.
      const { eventId, replayed } = await idempotency.publish(params.id, key, rawBody, (eventId) => publish(eventId));
      return new Reply(null, replayed ? { eventId, idempotentReplay: true } : { eventId });
    },
    listEvents: async ({ params, query: { cursor, ...query } }) => {
      checkRange(query.since, query.until);
      const before = cursor === undefined ? undefined : decodeCursor(cursor, 'events', params.id, isEventCursor);
      const budget = new PageBudget<ListedEvent>(maxPageBytes);
      const { last } = await events.list(params.id, { ...query, before }, budget);
      const nextCursor = last ? encodeCursor('events', params.id, last) : undefined;
      return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
    },
    getEvent: async ({ params }) => {
      const { deliveries, ...event } = await events.show(params.id, params.eventId);
      return { ...event, deliveries: deliveries.map(toPublicDeliveryRecord) };
    },
  }) satisfies Partial<Handlers>;
