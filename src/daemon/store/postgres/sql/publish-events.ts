import type { Prepared } from '../database.js';

/**
 * Publishes a group of events with their deliveries in one statement. Ids are
 * made by the daemon, so running it again after a lost answer inserts only
 * what the first run did not commit (see PostgresEventStore.settledPublish).
 * $1 events, $2 deliveries (each `leased` or not), $3 this daemon, $4 the lease in ms.
 */
export const PUBLISH_EVENTS: Prepared = {
  name: 'publish-events',
  text: `WITH published AS (
           INSERT INTO events (workspace_id, id, event_key, occurred_at, event)
           SELECT workspace_id, id, event_key, occurred_at, event::json
           FROM json_to_recordset($1::json) AS e(workspace_id text, id uuid, event_key text, occurred_at timestamptz, event text)
           ON CONFLICT (id) DO NOTHING
         )
         INSERT INTO deliveries (id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url,
                                 depth, status, due_at, created_at, enqueued_at, lease_owner, lease_until)
         SELECT id, workspace_id, event_id, event_key, subscription_id, extension_key, kind, service_base_url, depth, 'PENDING',
                due_at, enqueued_at, enqueued_at,
                CASE WHEN leased THEN $3::uuid END, CASE WHEN leased THEN now() + $4 * interval '1 millisecond' END
         FROM json_to_recordset($2::json) AS d(id text, workspace_id text, event_id uuid, event_key text, subscription_id text,
              extension_key text, kind text, service_base_url text, depth integer, due_at timestamptz, enqueued_at timestamptz, leased boolean)
         ON CONFLICT (id) DO NOTHING`,
};
