import * as v from 'valibot';
import { DELIVERY_STATUSES, toPublicDeliveryRecord, type DeliveryRecord } from '../../dispatch/types.js';
import { EventKey, QueryInstant, QueryInt, Slug } from '../../../contract/schemas.js';
import type { RouteModule } from '../context.js';
import { checkRange, decodeCursor, encodeCursor, isSequence } from '../cursor.js';
import { PageReply } from '../endpoint.js';
import { PageBudget } from '../../paging.js';
import { workspaceMember } from '../access.js';

const DeliveriesQuery = v.object({
  status: v.optional(v.picklist(DELIVERY_STATUSES, `must be one of ${DELIVERY_STATUSES.join(', ')}`)),
  subscriptionId: v.optional(v.pipe(v.string(), v.maxLength(100, 'must be at most 100 characters'))),
  eventKey: v.optional(EventKey),
  since: v.optional(QueryInstant),
  until: v.optional(QueryInstant),
  limit: v.optional(QueryInt(1, 500), '50'),
  cursor: v.optional(v.pipe(v.string(), v.maxLength(200, 'is not a cursor of this listing'))),
});

export const deliveryRoutes: RouteModule = (routes, { endpoint, services: { workspaces, events }, config: { maxPageBytes } }) => {
  const member = workspaceMember(workspaces);

  routes.get(
    '/api/workspaces/:id/deliveries',
    endpoint({
      access: 'user',
      authorize: member,
      params: v.object({ id: Slug }),
      query: DeliveriesQuery,
      handle: async ({ params, query: { cursor, ...query } }) => {
        checkRange(query.since, query.until);
        const before = cursor === undefined ? undefined : decodeCursor(cursor, 'deliveries', params.id, isSequence);
        const budget = new PageBudget<DeliveryRecord>(maxPageBytes, (record) => JSON.stringify(toPublicDeliveryRecord(events.withoutCredentials(record))));
        const { lastSeq, more } = await events.deliveries(params.id, { ...query, before }, budget);
        const nextCursor = more && lastSeq !== null ? encodeCursor('deliveries', params.id, lastSeq) : undefined;
        return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
      },
    }),
  );
};
