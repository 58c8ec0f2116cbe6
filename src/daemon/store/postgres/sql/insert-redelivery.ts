import type { Prepared } from '../database.js';

/**
 * Queues one redelivery of a recorded event, leased to this daemon (it runs
 * it). $1 the delivery's columns (see deliveryColumns), $2 the delivery it
 * sends again, $3 this daemon, $4 the lease in ms.
 */
export const INSERT_REDELIVERY: Prepared = {
  name: 'insert-redelivery',
  text: `INSERT INTO deliveries (id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url,
                                depth, status, due_at, created_at, enqueued_at, redelivery_of, lease_owner, lease_until)
         SELECT id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth, 'PENDING',
                due_at, enqueued_at, enqueued_at, $2, $3::uuid, now() + $4 * interval '1 millisecond'
         FROM json_to_record($1::json) AS d(id text, workspace_id text, event_id uuid, event_key text, subscription_id text,
              extension_key text, kind text, service_base_url text, depth integer, due_at timestamptz, enqueued_at timestamptz)`,
};
