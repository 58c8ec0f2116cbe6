import type { RouteModule } from '../context.js';
import { PLATFORM_VERSION } from '../../version.js';

export const statusRoutes: RouteModule = (routes, { endpoint, services: { dispatcher, deadLetters, events, startedAt } }) => {
  routes.get(
    '/api/admin/status',
    endpoint({
      access: 'admin',
      handle: async () => {
        const dispatch = await dispatcher.stats();
        return {
          version: PLATFORM_VERSION,
          uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
          pendingDeliveries: dispatch.pending,
          inFlightDeliveries: dispatch.inFlight,
          oldestPendingAgeMs: dispatch.oldestPendingAgeMs,
          deadLetters: await deadLetters.count(),
          eventsStored: await events.storedEvents(),
        };
      },
    }),
  );
};
