import type { Prepared } from '../database.js';

/** Answers the ids whose lease is still this daemon's, renewed. $1 ids, $2 this daemon, $3 the lease in ms. */
export const RENEW_LEASES: Prepared = {
  name: 'renew-delivery-leases',
  text: `UPDATE deliveries SET lease_until = now() + $3 * interval '1 millisecond'
         WHERE id = ANY($1::text[]) AND lease_owner = $2 AND status = 'PENDING' RETURNING id`,
};
