import { PLATFORM_VERSION } from '../../version.js';
import type { HttpContext } from '../context.js';
import type { Handlers } from '../endpoint.js';

export const statusRoutes = ({ services: { dispatcher, deadLetters, events, startedAt } }: HttpContext) =>
  ({
    getDaemonStatus: async () => {
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
  }) satisfies Partial<Handlers>;
