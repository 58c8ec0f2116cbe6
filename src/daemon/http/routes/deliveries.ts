import { toPublicDeliveryRecord, type DeliveryRecord } from '../../dispatch/types.js';
import type { HttpContext } from '../context.js';
import { checkRange, decodeCursor, encodeCursor, isSequence } from '../cursor.js';
import { PageReply, type Handlers } from '../endpoint.js';
import { PageBudget } from '../../paging.js';

export const deliveryRoutes = ({ services: { events }, config: { maxPageBytes } }: HttpContext) =>
  ({
    listDeliveries: async ({ params, query: { cursor, ...query }, caller }) => {
      checkRange(query.since, query.until);
      const before = cursor === undefined ? undefined : decodeCursor(cursor, 'deliveries', params.id, isSequence);
      const budget = new PageBudget<DeliveryRecord>(maxPageBytes, (record) => JSON.stringify(toPublicDeliveryRecord(events.withoutCredentials(record))));
      const { lastSeq, more } = await events.deliveries(params.id, { ...query, before }, budget, caller.kind === 'extension' ? caller : undefined);
      const nextCursor = more && lastSeq !== null ? encodeCursor('deliveries', params.id, lastSeq) : undefined;
      return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
    },
    getDelivery: async ({ params }) => toPublicDeliveryRecord(await events.delivery(params.id, params.deliveryId)),
    redeliverDelivery: ({ params }) => events.redeliver(params.id, params.deliveryId),
  }) satisfies Partial<Handlers>;
