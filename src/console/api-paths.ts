import { paths as contractPaths } from '../contract/paths';

const at = (...segments: string[]) => `/api/${segments.map(encodeURIComponent).join('/')}`;

/**
 * The contract's paths and the delivery-visibility ones (CONTRACT §9) that
 * src/contract/paths.ts does not list yet; these belong there once it does.
 */
export const paths = {
  ...contractPaths,
  events: (id: string) => at('workspaces', id, 'events'),
  event: (id: string, eventId: string) => at('workspaces', id, 'events', eventId),
  deliveries: (id: string) => at('workspaces', id, 'deliveries'),
  workspaceStream: (id: string) => at('workspaces', id, 'stream'),
  adminStream: '/api/admin/stream',
  rotateSecret: (id: string, subscriptionId: string) => at('workspaces', id, 'subscriptions', subscriptionId, 'rotate-secret'),
  testSubscription: (id: string, subscriptionId: string) => at('workspaces', id, 'subscriptions', subscriptionId, 'test'),
  webhookRequests: (key: string) => at('admin', 'webhooks', key, 'requests'),
} as const;
