import * as v from 'valibot';
import { CursorParam, QueryInt, Slug } from '../../../contract/schemas.js';
import type { ChatMessage } from '../../chat/store.js';
import type { RouteModule } from '../context.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { PageReply } from '../endpoint.js';
import { PageBudget } from '../../paging.js';
import { workspaceMember } from '../access.js';

const WorkspaceParams = v.object({ id: Slug });
const ChannelParams = v.object({ id: Slug, channel: v.pipe(v.string(), v.minLength(1), v.maxLength(200)) });
/** A channel keeps up to 10,000 messages; one page carries at most this many, and no more bytes than PLATFORM_MAX_PAGE_BYTES. */
const MESSAGES_PER_ANSWER = 1000;
const MessagesQuery = v.object({ limit: v.optional(QueryInt(1, MESSAGES_PER_ANSWER), '50'), cursor: CursorParam });
const isMessageId = (position: unknown): position is string => typeof position === 'string' && position.length <= 100;

export const chatRoutes: RouteModule = (routes, { endpoint, services: { workspaces, chat }, config: { maxPageBytes } }) => {
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
      handle: async ({ params, query: { limit, cursor } }) => {
        const listing = `${params.id}/${params.channel}`;
        const before = cursor === undefined ? undefined : decodeCursor(cursor, 'chat', listing, isMessageId);
        const budget = new PageBudget<ChatMessage>(maxPageBytes);
        const { oldest } = await chat.messages(params.id, params.channel, { limit, before }, budget);
        return new PageReply(budget, { limit, ...(oldest === undefined ? {} : { nextCursor: encodeCursor('chat', listing, oldest) }) });
      },
    }),
  );
};
