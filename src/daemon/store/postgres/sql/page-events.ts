/**
 * A page of a workspace's events, newest first: their keys and sizes only
 * (the column holds the event's JSON text as sent), so that only the events
 * that fit are read (READ_EVENTS). Within the workspace's latest $8 events
 * (the retention policy's count), occurred at or after $2, at or before $3,
 * of key $4 (each null for any), older than the cursor's event $6 (or, when
 * that event is gone, than its time $7), and below seq $9 (the batch before).
 * $1 workspace, $5 how many.
 */
export const PAGE_EVENTS = `WITH kept AS (
    SELECT seq FROM events WHERE workspace_id = $1 ORDER BY seq DESC LIMIT $8
  ), cursor_event AS (SELECT seq FROM events WHERE workspace_id = $1 AND id = $6::uuid)
  SELECT seq AS key, octet_length(event::text) AS bytes FROM events
  WHERE workspace_id = $1 AND seq >= coalesce((SELECT min(seq) FROM kept), 0)
    AND occurred_at >= $2 AND ($3::timestamptz IS NULL OR occurred_at <= $3) AND ($4::text IS NULL OR event_key = $4)
    AND ($6::uuid IS NULL OR CASE WHEN EXISTS (SELECT 1 FROM cursor_event) THEN seq < (SELECT seq FROM cursor_event) ELSE occurred_at < $7 END)
    AND ($9::bigint IS NULL OR seq < $9)
  ORDER BY seq DESC LIMIT $5`;
