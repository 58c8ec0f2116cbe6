import * as v from 'valibot';
import { toPublicDeliveryRecord } from '../../dispatch/types.js';
import { PublishEventBody } from '../../events/schemas.js';
import { CursorParam, EventKey, QueryInstant, QueryInt, Slug } from '../../../contract/schemas.js';
import type { RouteModule } from '../context.js';
import { checkRange, decodeCursor, encodeCursor } from '../cursor.js';
import { workspaceMember } from '../access.js';
import { PageReply, Reply } from '../endpoint.js';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { PageBudget } from '../../paging.js';

const WorkspaceParams = v.object({ id: Slug });
const EventParams = v.object({ id: Slug, eventId: v.pipe(v.string(), v.uuid('must be an event id')) });
const EventsQuery = v.object({
  eventKey: v.optional(EventKey),
  since: v.optional(QueryInstant),
  until: v.optional(QueryInstant),
  limit: v.optional(QueryInt(1, 1000), '50'),
  cursor: CursorParam,
});

/** Where the page stopped, in the event store's own terms: the store reads it (and refuses one it cannot). */
const isEventCursor = (position: unknown): position is string => typeof position === 'string';

export const eventRoutes: RouteModule = (routes, { endpoint, services: { workspaces, events }, config: { maxPageBytes } }) => {
  const member = workspaceMember(workspaces);

  routes.post(
    '/api/workspaces/:id/events/publish',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      body: PublishEventBody,
      handle: async ({ params, body, caller }) => {
        const { eventId } = await events.publish(params.id, body, {
          actor: caller.user.email,
          publishedBy: caller.user.id,
          depth: 1,
        });
        return new Reply(null, { eventId });
      },
    }),
  );
  routes.get(
    '/api/workspaces/:id/events',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      query: EventsQuery,
      handle: async ({ params, query: { cursor, ...query } }) => {
        checkRange(query.since, query.until);
        const before = cursor === undefined ? undefined : decodeCursor(cursor, 'events', params.id, isEventCursor);
        const budget = new PageBudget<PlatformEvent>(maxPageBytes);
        const { last } = await events.list(params.id, { ...query, before }, budget);
        const nextCursor = last ? encodeCursor('events', params.id, last) : undefined;
        return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
      },
    }),
  );
  routes.get(
    '/api/workspaces/:id/events/:eventId',
    endpoint({
      access: 'user',
      authorize: member,
      params: EventParams,
      handle: async ({ params }) => {
        const { deliveries, ...event } = await events.show(params.id, params.eventId);
        return { ...event, deliveries: deliveries.map(toPublicDeliveryRecord) };
      },
    }),
  );
};
