/** Events by seq, newest first, each with its deliveries counted by status (see DeliverySummary). $1 seqs. */
export const READ_EVENTS = `SELECT e.seq, e.event, s.delivered, s.pending, s.dead, s.discarded FROM events e
  CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.status = 'SUCCEEDED')::int AS delivered, count(*) FILTER (WHERE d.status = 'PENDING')::int AS pending,
      count(*) FILTER (WHERE d.status = 'DEAD')::int AS dead, count(*) FILTER (WHERE d.status = 'DISCARDED')::int AS discarded
    FROM deliveries d WHERE d.event_id = e.id
  ) s
  WHERE e.seq = ANY($1::bigint[]) ORDER BY e.seq DESC`;
