import type { ChatMessage } from '../../chat/store.js';
import type { HttpContext } from '../context.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { PageReply, type Handlers } from '../endpoint.js';
import { PageBudget } from '../../paging.js';

const isMessageId = (position: unknown): position is string => typeof position === 'string' && position.length <= 100;

export const chatRoutes = ({ services: { chat }, config: { maxPageBytes } }: HttpContext) =>
  ({
    listChatChannels: ({ params }) => chat.channels(params.id),
    listChatMessages: async ({ params, query: { limit, cursor } }) => {
      const listing = `${params.id}/${params.channel}`;
      const before = cursor === undefined ? undefined : decodeCursor(cursor, 'chat', listing, isMessageId);
      const budget = new PageBudget<ChatMessage>(maxPageBytes);
      const { oldest } = await chat.messages(params.id, params.channel, { limit, before }, budget);
      return new PageReply(budget, { limit, ...(oldest === undefined ? {} : { nextCursor: encodeCursor('chat', listing, oldest) }) });
    },
  }) satisfies Partial<Handlers>;
