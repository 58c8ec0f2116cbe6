import * as v from 'valibot';
import { EventKey, PublishEventBody } from '../../events/schemas.js';
import { QueryInt, Slug } from '../../validation.js';
import type { RouteModule } from '../context.js';
import { workspaceMember } from './access.js';
import { Reply } from '../endpoint.js';

const WorkspaceParams = v.object({ id: Slug });
const EventsQuery = v.object({
  eventKey: v.optional(EventKey),
  limit: v.optional(QueryInt(1, 1000), '50'),
  offset: v.optional(QueryInt(0, 1_000_000_000), '0'),
});

export const eventRoutes: RouteModule = (routes, { endpoint, services: { workspaces, events } }) => {
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
      handle: ({ params, query }) => events.recent(params.id, query),
    }),
  );
};
