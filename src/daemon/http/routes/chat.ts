import * as v from 'valibot';
import { QueryInt, Slug } from '../../validation.js';
import type { RouteModule } from '../context.js';
import { workspaceMember } from './access.js';

const WorkspaceParams = v.object({ id: Slug });
const ChannelParams = v.object({ id: Slug, channel: v.pipe(v.string(), v.minLength(1), v.maxLength(200)) });
/** A channel keeps up to 10,000 messages; one answer carries at most this many (each may be 10,000 characters). */
const MESSAGES_PER_ANSWER = 1000;
const MessagesQuery = v.object({ limit: v.optional(QueryInt(1, MESSAGES_PER_ANSWER), '50') });

export const chatRoutes: RouteModule = (routes, { endpoint, services: { workspaces, chat } }) => {
  const member = workspaceMember(workspaces);

  routes.get(
    '/api/workspaces/:id/chat/channels',
    endpoint({
      access: 'user',
      authorize: member,
      params: WorkspaceParams,
      handle: ({ params }) => chat.channels(params.id),
    }),
  );
  routes.get(
    '/api/workspaces/:id/chat/channels/:channel/messages',
    endpoint({
      access: 'user',
      authorize: member,
      params: ChannelParams,
      query: MessagesQuery,
      handle: ({ params, query }) => chat.messages(params.id, params.channel, query.limit),
    }),
  );
};
