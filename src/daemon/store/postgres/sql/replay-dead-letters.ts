import { qualified } from '../database.js';
import { DELIVERY_COLUMNS } from './delivery-columns.js';

/**
 * Dead letters back to the queue ($2 due and queued at), leased to this
 * daemon ($3, for $4 ms), with their events. The row lock decides: of two
 * daemons replaying one letter at once, the second finds it PENDING and leaves
 * it. $1 dead letter ids.
 */
export const REPLAY_DEAD_LETTERS = `WITH replayed AS (
    UPDATE deliveries SET status = 'PENDING', replay_count = replay_count + 1, run_attempts = 0, first_attempt_at = NULL,
      last_error = NULL, due_at = $2, enqueued_at = $2, completed_at = NULL, dead_at = NULL,
      lease_owner = $3, lease_until = now() + $4 * interval '1 millisecond'
    WHERE dead_letter_id = ANY($1::uuid[]) AND status = 'DEAD'
    RETURNING ${DELIVERY_COLUMNS}
  )
  SELECT ${qualified(DELIVERY_COLUMNS, 'replayed')}, events.event FROM replayed JOIN events ON events.id = replayed.event_id`;
