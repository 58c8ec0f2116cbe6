import type { DeliveryFilter } from '../../contract/requests.js';

export interface RetentionPolicy {
  maxAgeMs: number;
  maxPerWorkspace: number;
}

export interface EventPageQuery {
  eventKey?: string | undefined;
  /** Only events whose deliveries stand so (see matchesDeliveryFilter). */
  deliveries?: DeliveryFilter | undefined;
  /** Epoch ms, inclusive. */
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  /**
   * Where the previous page stopped: the cursor its store answered
   * (EventPage.last), opaque here; the store that made it reads it, and
   * refuses one it cannot read with the 400 of any foreign cursor.
   */
  before?: string | undefined;
}
