/**
 * Events beyond their workspace's latest $1 or older than $2, but not those of
 * a delivery still PENDING or DEAD (the row is the queue entry and the dead
 * letter); answers their ids. One transaction with DELETE_DELIVERIES_OF_EVENTS.
 */
export const DELETE_EXPIRED_EVENTS = `DELETE FROM events WHERE seq IN (
    SELECT seq FROM (
      SELECT seq, occurred_at, row_number() OVER (PARTITION BY workspace_id ORDER BY seq DESC) AS rank FROM events
    ) ranked WHERE rank > $1 OR occurred_at < $2
  ) AND NOT EXISTS (SELECT 1 FROM deliveries WHERE event_id = events.id AND status IN ('PENDING', 'DEAD'))
  RETURNING id`;

/** The records of the removed events' deliveries. $1 event ids. */
export const DELETE_DELIVERIES_OF_EVENTS = 'DELETE FROM deliveries WHERE event_id = ANY($1::uuid[])';
