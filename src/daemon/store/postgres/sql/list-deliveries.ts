import { DELIVERY_COLUMNS } from './delivery-columns.js';

/** Newest first. $1 workspace, $2 status, $3 subscription, $4 event key, $5 since, $6 until (each null for any), $7 before this seq, $8 how many. */
export const LIST_DELIVERIES = `SELECT ${DELIVERY_COLUMNS} FROM deliveries
  WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR subscription_id = $3)
    AND ($4::text IS NULL OR event_key = $4) AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at <= $6)
    AND ($7::bigint IS NULL OR seq < $7)
  ORDER BY seq DESC LIMIT $8`;
