import { toPublicDeliveryRecord } from '../../dispatch/types.js';
import type { HttpContext } from '../context.js';
import { checkRange, decodeCursor, encodeCursor } from '../cursor.js';
import { PageReply, Reply, type Handlers } from '../endpoint.js';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { PageBudget } from '../../paging.js';

/** Where the page stopped, in the event store's own terms: the store reads it (and refuses one it cannot). */
const isEventCursor = (position: unknown): position is string => typeof position === 'string';

export const eventRoutes = ({ services: { events }, config: { maxPageBytes } }: HttpContext) =>
  ({
    publishEvent: async ({ params, body, caller }) => {
      const { eventId } =
        caller.kind === 'extension'
          ? await events.publishFromExtension(caller, params.id, body)
          : await events.publish(params.id, body, { actor: caller.user.email, publishedBy: caller.user.id, depth: 1 });
      return new Reply(null, { eventId });
    },
    listEvents: async ({ params, query: { cursor, ...query } }) => {
      checkRange(query.since, query.until);
      const before = cursor === undefined ? undefined : decodeCursor(cursor, 'events', params.id, isEventCursor);
      const budget = new PageBudget<PlatformEvent>(maxPageBytes);
      const { last } = await events.list(params.id, { ...query, before }, budget);
      const nextCursor = last ? encodeCursor('events', params.id, last) : undefined;
      return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
    },
    getEvent: async ({ params }) => {
      const { deliveries, ...event } = await events.show(params.id, params.eventId);
      return { ...event, deliveries: deliveries.map(toPublicDeliveryRecord) };
    },
  }) satisfies Partial<Handlers>;
