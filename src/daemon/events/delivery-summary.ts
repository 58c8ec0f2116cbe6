import type { PlatformEvent } from '../../handlers/sdk.js';
import type { DeliveryFilter } from '../../contract/requests.js';
import type { DeliveryStatus } from '../dispatch/types.js';

/** How an event's deliveries stand, counted by status (see decisions: "The events list's delivery summary"). */
export interface DeliverySummary {
  delivered: number;
  pending: number;
  dead: number;
  discarded: number;
}

/** An event as the events list shows it. */
export type ListedEvent = PlatformEvent & { deliverySummary: DeliverySummary };

/** The summary's field for each status (keys in the order the answer shows them). */
const FIELD_OF: Record<DeliveryStatus, keyof DeliverySummary> = { SUCCEEDED: 'delivered', PENDING: 'pending', DEAD: 'dead', DISCARDED: 'discarded' };

export const noDeliveries = (): DeliverySummary => ({ delivered: 0, pending: 0, dead: 0, discarded: 0 });

/** Counts one more delivery of the status into `summary`. */
export function countDelivery(summary: DeliverySummary, status: DeliveryStatus): void {
  summary[FIELD_OF[status]] += 1;
}

/**
 * `failed`: at least one dead delivery (what an operator chasing failures
 * looks for; a discarded one was already dealt with); `pending`: at least one
 * still to run; `delivered`: at least one, and every one succeeded; `none`:
 * the event reached no subscriber.
 */
export function matchesDeliveryFilter(summary: DeliverySummary, filter: DeliveryFilter): boolean {
  const total = summary.delivered + summary.pending + summary.dead + summary.discarded;
  switch (filter) {
    case 'failed':
      return summary.dead > 0;
    case 'pending':
      return summary.pending > 0;
    case 'delivered':
      return total > 0 && summary.delivered === total;
    case 'none':
      return total === 0;
  }
}
