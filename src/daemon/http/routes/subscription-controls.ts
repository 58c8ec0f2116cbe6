import * as v from 'valibot';
import { HttpUrl, isPlainObject, jsonObject, Slug } from '../../../contract/schemas.js';
import type { RouteModule } from '../context.js';

const SubscriptionParams = v.object({ id: Slug, subscriptionId: v.pipe(v.string(), v.uuid('must be a subscription id')) });
const ChangeSubscriptionBody = v.pipe(
  jsonObject({ enabled: v.optional(v.boolean()), serviceBaseUrl: v.optional(HttpUrl) }),
  v.check((body) => body.enabled !== undefined || body.serviceBaseUrl !== undefined, 'must change enabled or serviceBaseUrl'),
);
const TestBody = jsonObject({
  payload: v.optional(v.custom<Record<string, unknown>>(isPlainObject, 'must be a JSON object')),
});

/** Enabling, disabling, moving, rotating the secret of and testing a subscription (docs/api.md, Subscriptions). */
export const subscriptionControlRoutes: RouteModule = (routes, { endpoint, config, services: { workspaces, events } }) => {
  routes.patch(
    '/api/workspaces/:id/subscriptions/:subscriptionId',
    endpoint({
      access: 'admin',
      params: SubscriptionParams,
      body: ChangeSubscriptionBody,
      handle: ({ params, body }) => workspaces.updateSubscription(params.id, params.subscriptionId, body),
    }),
  );
  routes.post(
    '/api/workspaces/:id/subscriptions/:subscriptionId/rotate-secret',
    endpoint({
      access: 'admin',
      params: SubscriptionParams,
      handle: ({ params }) => workspaces.rotateSecret(params.id, params.subscriptionId, config.subscriptions.secretOverlapMs, Date.now()),
    }),
  );
  routes.post(
    '/api/workspaces/:id/subscriptions/:subscriptionId/test',
    endpoint({
      access: 'admin',
      params: SubscriptionParams,
      body: TestBody,
      status: 202,
      handle: ({ params, body, caller }) => events.sendTest(params.id, params.subscriptionId, body.payload ?? {}, caller.user.email),
    }),
  );
};
