/**
 * A page of a workspace's events, newest first (by seq: the event cursor on
 * PostgreSQL is the seq of a page's last event): their keys and sizes only
 * (the column holds the event's JSON text as sent), so that only the events
 * that fit are read (READ_EVENTS). Within the workspace's latest $7 events
 * (the retention policy's count), occurred at or after $2, at or before $3,
 * of key $4 (each null for any), below seq $6 (the cursor, or the last row of
 * the batch before), whose deliveries stand as $8 says (null for any; see
 * matchesDeliveryFilter: each test is a probe of deliveries_by_event). $1
 * workspace, $5 how many.
 */
export const PAGE_EVENTS = `WITH kept AS (
    SELECT seq FROM events WHERE workspace_id = $1 ORDER BY seq DESC LIMIT $7
  )
  SELECT seq AS key, octet_length(event::text) AS bytes FROM events
  WHERE workspace_id = $1 AND seq >= coalesce((SELECT min(seq) FROM kept), 0)
    AND occurred_at >= $2 AND ($3::timestamptz IS NULL OR occurred_at <= $3) AND ($4::text IS NULL OR event_key = $4)
    AND ($6::bigint IS NULL OR seq < $6)
    AND CASE $8::text
      WHEN 'failed' THEN EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id AND d.status = 'DEAD')
      WHEN 'pending' THEN EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id AND d.status = 'PENDING')
      WHEN 'delivered' THEN EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)
        AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id AND d.status <> 'SUCCEEDED')
      WHEN 'none' THEN NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)
      ELSE true
    END
  ORDER BY seq DESC LIMIT $5`;
