import { qualified, type Prepared } from '../database.js';
import { DELIVERY_COLUMNS } from './delivery-columns.js';

/**
 * Due deliveries no daemon holds, leased to this one, with their events when
 * these are at most $4 bytes of JSON (a larger one is read when it is sent:
 * see FIND_EVENT). $1 this daemon, $2 the lease in ms, $3 how many at most.
 */
export const CLAIM_DELIVERIES: Prepared = {
  name: 'claim-deliveries',
  text: `WITH claimed AS (
           UPDATE deliveries SET lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond'
           WHERE id IN (
             SELECT id FROM deliveries
             WHERE status = 'PENDING' AND due_at <= now() AND (lease_until IS NULL OR lease_until < now())
             ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED
           )
           RETURNING ${DELIVERY_COLUMNS}
         )
         SELECT ${qualified(DELIVERY_COLUMNS, 'claimed')}, CASE WHEN octet_length(events.event::text) <= $4 THEN events.event END AS event
         FROM claimed JOIN events ON events.id = claimed.event_id`,
};
