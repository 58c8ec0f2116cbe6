import { MAX_DEAD_LETTER_OFFSET } from '../../../contract/requests.js';
import { toPublicDeadLetter, type StoredDeadLetter } from '../../dispatch/types.js';
import type { HttpContext } from '../context.js';
import { offsetMeta, startOffset } from '../cursor.js';
import { PageReply, type Handlers } from '../endpoint.js';
import { PageBudget } from '../../paging.js';

export const deadLetterRoutes = ({ services: { deadLetters }, config: { maxPageBytes } }: HttpContext) =>
  ({
    listDeadLetters: async ({ query: { limit, offset: given, cursor, ...filter } }) => {
      const scope = filter.workspaceId ?? '';
      const offset = startOffset(cursor, given, 'dead-letters', scope, MAX_DEAD_LETTER_OFFSET);
      const budget = new PageBudget<StoredDeadLetter>(maxPageBytes, (letter) => JSON.stringify(toPublicDeadLetter(letter)));
      const { items, total } = await deadLetters.list(filter, { limit, offset }, budget);
      const more = offset + items.length < total;
      return new PageReply(budget, { total, limit, offset, ...offsetMeta('dead-letters', scope, offset, items.length, more) });
    },
    replayDeadLetters: ({ body: { limit, ...filter } }) => deadLetters.replayMatching(filter, limit ?? Number.MAX_SAFE_INTEGER),
    discardDeadLetters: ({ body }) => deadLetters.discardMatching(body),
    getDeadLetter: async ({ params }) => toPublicDeadLetter(await deadLetters.get(params.id)),
    getDeadLetterState: ({ params }) => deadLetters.state(params.id),
    replayDeadLetter: async ({ params }) => {
      await deadLetters.replay(params.id);
      return null;
    },
    discardDeadLetter: ({ params }) => deadLetters.discard(params.id),
  }) satisfies Partial<Handlers>;
