import { EventKey, problemWith, Slug } from '../contract/schemas';
import type { CreatedSubscription, DeliveryRecord, Subscription, SubscriberKind } from '../contract/types';
import { api, ApiError } from './api';
import { paths } from '../contract/paths';

export interface SubscriptionDraft {
  eventKey: string;
  extensionKey: string;
  kind: SubscriberKind;
  serviceBaseUrl: string;
}

export const emptyDraft = (): SubscriptionDraft => ({ eventKey: '', extensionKey: '', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: '' });

const check = (label: string, problem: string | null) => {
  if (problem) throw new ApiError(`${label} ${problem}`, 'VALIDATION_ERROR', 400);
};

/** Answers the subscription with its signing secret, the only time the daemon shows it. */
export function createSubscription(workspaceId: string, draft: SubscriptionDraft): Promise<CreatedSubscription> {
  check('Event key', problemWith(EventKey, draft.eventKey));
  check('Extension key', problemWith(Slug, draft.extensionKey));
  return api.post<CreatedSubscription>(paths.subscriptions(workspaceId), {
    eventKey: draft.eventKey,
    extensionKey: draft.extensionKey,
    kind: draft.kind,
    serviceBaseUrl: draft.kind === 'EXTERNAL_SERVICE' ? draft.serviceBaseUrl : undefined,
  });
}

export const setEnabled = (subscription: Subscription, enabled: boolean) =>
  api.patch<Subscription>(paths.subscription(subscription.workspaceId, subscription.id), { enabled });

/** The new secret; until the overlap ends, deliveries carry signatures by the old one too. */
export const rotateSecret = async (subscription: Subscription) =>
  (await api.post<{ signingSecret: string }>(paths.rotateSecret(subscription.workspaceId, subscription.id))).signingSecret;

/**
 * Sends a `platform.test` event to this subscription only, and answers the
 * test event's id, so that the page can lead to its delivery (null if its
 * record is not listed yet).
 */
export async function sendTest(subscription: Subscription): Promise<string | null> {
  const { deliveryId } = await api.post<{ deliveryId: string }>(paths.testSubscription(subscription.workspaceId, subscription.id), {});
  const records = await api.get<DeliveryRecord[]>(paths.deliveries(subscription.workspaceId), { subscriptionId: subscription.id, limit: 20 });
  return records.find((record) => record.id === deliveryId)?.eventId ?? null;
}

/** Names a subscription in a sentence or a control's description: `orders.created to crm`. */
export const describe = (subscription: Subscription) => `${subscription.eventKey} to ${subscription.extensionKey}`;
