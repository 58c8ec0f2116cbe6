import { EventKey, problemWith, Slug } from '../contract/schemas';
import type { CreatedSubscription, Subscription, SubscriberKind } from '../contract/types';
import { ApiError, call } from './api';

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
export async function createSubscription(workspaceId: string, draft: SubscriptionDraft): Promise<CreatedSubscription> {
  check('Event key', problemWith(EventKey, draft.eventKey));
  check('Extension key', problemWith(Slug, draft.extensionKey));
  const body = {
    eventKey: draft.eventKey,
    extensionKey: draft.extensionKey,
    kind: draft.kind,
    serviceBaseUrl: draft.kind === 'EXTERNAL_SERVICE' ? draft.serviceBaseUrl : undefined,
  };
  return (await call('createSubscription', { params: { id: workspaceId }, body })).data;
}

/** The path parameters that name a subscription. */
const named = (subscription: Subscription) => ({ id: subscription.workspaceId, subscriptionId: subscription.id });

export const setEnabled = async (subscription: Subscription, enabled: boolean) =>
  (await call('updateSubscription', { params: named(subscription), body: { enabled } })).data;

/** The new secret; until the overlap ends, deliveries carry signatures by the old one too. */
export const rotateSecret = async (subscription: Subscription) =>
  (await call('rotateSigningSecret', { params: named(subscription) })).data.signingSecret;

/**
 * Sends a `platform.test` event to this subscription only, and answers the
 * test event's id, so that the page can lead to its delivery (null if its
 * record is not listed yet).
 */
export async function sendTest(subscription: Subscription): Promise<string | null> {
  const { deliveryId } = (await call('testSubscription', { params: named(subscription), body: {} })).data;
  const { data: records } = await call('listDeliveries', { params: { id: subscription.workspaceId }, query: { subscriptionId: subscription.id, limit: 20 } });
  return records.find((record) => record.id === deliveryId)?.eventId ?? null;
}

/** Names a subscription in a sentence or a control's description: `orders.created to crm`. */
export const describe = (subscription: Subscription) => `${subscription.eventKey} to ${subscription.extensionKey}`;
