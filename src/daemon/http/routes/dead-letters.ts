import * as v from 'valibot';
import { toPublicDeadLetter, type StoredDeadLetter } from '../../dispatch/types.js';
import { CursorParam, EventKey, jsonObject, QueryInt, Slug } from '../../../contract/schemas.js';
import type { RouteModule } from '../context.js';
import { offsetMeta, startOffset } from '../cursor.js';
import { PageReply } from '../endpoint.js';
import { PageBudget } from '../../paging.js';

const MAX_OFFSET = 1_000_000_000;
const Filter = { workspaceId: v.optional(Slug), eventKey: v.optional(EventKey), extensionKey: v.optional(Slug) };
const ListQuery = v.object({
  ...Filter,
  limit: v.optional(QueryInt(1, 500), '50'),
  offset: v.optional(QueryInt(0, MAX_OFFSET), '0'),
  cursor: CursorParam,
});
const DeadLetterParams = v.object({ id: v.pipe(v.string(), v.uuid('must be a dead letter id')) });
const ReplayMatchingBody = jsonObject({ ...Filter, limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000))) });
const DiscardMatchingBody = jsonObject(Filter);

export const deadLetterRoutes: RouteModule = (routes, { endpoint, services: { deadLetters }, config: { maxPageBytes } }) => {
  routes.get(
    '/api/admin/dead-letters',
    endpoint({
      access: 'admin',
      query: ListQuery,
      handle: async ({ query: { limit, offset: given, cursor, ...filter } }) => {
        const scope = filter.workspaceId ?? '';
        const offset = startOffset(cursor, given, 'dead-letters', scope, MAX_OFFSET);
        const budget = new PageBudget<StoredDeadLetter>(maxPageBytes, (letter) => JSON.stringify(toPublicDeadLetter(letter)));
        const { items, total } = await deadLetters.list(filter, { limit, offset }, budget);
        const more = offset + items.length < total;
        return new PageReply(budget, { total, limit, offset, ...offsetMeta('dead-letters', scope, offset, items.length, more) });
      },
    }),
  );
  routes.post(
    '/api/admin/dead-letters/replay',
    endpoint({
      access: 'admin',
      body: ReplayMatchingBody,
      status: 202,
      handle: async ({ body: { limit, ...filter } }) => deadLetters.replayMatching(filter, limit ?? Number.MAX_SAFE_INTEGER),
    }),
  );
  routes.post(
    '/api/admin/dead-letters/discard',
    endpoint({ access: 'admin', body: DiscardMatchingBody, handle: ({ body }) => deadLetters.discardMatching(body) }),
  );
  routes.get(
    '/api/admin/dead-letters/:id',
    endpoint({ access: 'admin', params: DeadLetterParams, handle: async ({ params }) => toPublicDeadLetter(await deadLetters.get(params.id)) }),
  );
  routes.get(
    '/api/admin/dead-letters/:id/state',
    endpoint({ access: 'admin', params: DeadLetterParams, handle: ({ params }) => deadLetters.state(params.id) }),
  );
  routes.post(
    '/api/admin/dead-letters/:id/replay',
    endpoint({
      access: 'admin',
      params: DeadLetterParams,
      status: 202,
      handle: async ({ params }) => {
        await deadLetters.replay(params.id);
        return null;
      },
    }),
  );
  routes.delete(
    '/api/admin/dead-letters/:id',
    endpoint({ access: 'admin', params: DeadLetterParams, status: 204, handle: ({ params }) => deadLetters.discard(params.id) }),
  );
};
