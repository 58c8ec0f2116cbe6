import * as v from 'valibot';
import { EventKey, PublishEventBody } from '../../events/schemas.js';
import { QueryInt, Slug } from '../../validation.js';
import type { RouteModule } from '../context.js';
import { checkRange, decodeCursor, encodeCursor } from '../cursor.js';
import { workspaceMember } from './access.js';
import { QueryInstant } from './deliveries.js';
import { PageReply, Reply } from '../endpoint.js';
import type { PlatformEvent } from '../../../handlers/sdk.js';
import { PageBudget } from '../../paging.js';

const WorkspaceParams = v.object({ id: Slug });
const EventsQuery = v.object({
  eventKey: v.optional(EventKey),
  since: v.optional(QueryInstant),
  until: v.optional(QueryInstant),
  limit: v.optional(QueryInt(1, 1000), '50'),
  cursor: v.optional(v.pipe(v.string(), v.maxLength(300, 'is not a cursor of this listing'))),
});

/** An event's position in the listing: its segment, occurredAt (ms) and id. */
const EVENT_POSITION = /^(\d{1,9}):(\d{1,15}):([0-9a-f-]{36})$/;
const isEventPosition = (position: unknown): position is string => typeof position === 'string' && EVENT_POSITION.test(position);

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
        const position = cursor === undefined ? undefined : EVENT_POSITION.exec(decodeCursor(cursor, 'events', params.id, isEventPosition))!;
        const before = position && { segment: Number(position[1]), at: Number(position[2]), id: position[3]! };
        const budget = new PageBudget<PlatformEvent>(maxPageBytes);
        const { last } = await events.list(params.id, { ...query, before }, budget);
        const nextCursor = last ? encodeCursor('events', params.id, `${last.segment}:${last.at}:${last.id}`) : undefined;
        return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
      },
    }),
  );
};
