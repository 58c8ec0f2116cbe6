import type { HttpContext } from '../context.js';
import type { Handlers } from '../endpoint.js';

/** Enabling, disabling, moving, rotating the secret of and testing a subscription (docs/api.md, Subscriptions). */
export const subscriptionControlRoutes = ({ config, services: { subscriptions, events } }: HttpContext) =>
  ({
    updateSubscription: ({ params, body }) => subscriptions.updateSubscription(params.id, params.subscriptionId, body),
    rotateSigningSecret: ({ params }) => subscriptions.rotateSecret(params.id, params.subscriptionId, config.subscriptions.secretOverlapMs, Date.now()),
    testSubscription: ({ params, body, caller }) => events.sendTest(params.id, params.subscriptionId, body.payload ?? {}, caller.user.email),
  }) satisfies Partial<Handlers>;
