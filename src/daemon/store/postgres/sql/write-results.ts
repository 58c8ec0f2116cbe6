import type { Prepared } from '../database.js';

/**
 * Results of attempts, each releasing its lease (only this daemon's lease: one
 * taken over is left alone). $1 the results as JSON, $2 this daemon.
 */
export const WRITE_RESULTS: Prepared = {
  name: 'write-delivery-results',
  text: `WITH r AS (
           SELECT id, status, attempt::json, due_at, run_attempts, first_attempt_at, last_error::json, completed_at, dead_letter_id, dead_at
           FROM json_to_recordset($1::json) AS r(id text, status text, attempt text, due_at timestamptz, run_attempts integer,
             first_attempt_at timestamptz, last_error text, completed_at timestamptz, dead_letter_id uuid, dead_at timestamptz)
         ), changed AS (
           UPDATE deliveries d SET status = r.status, due_at = r.due_at, run_attempts = r.run_attempts,
             first_attempt_at = r.first_attempt_at, last_error = r.last_error, completed_at = r.completed_at,
             dead_letter_id = coalesce(r.dead_letter_id, d.dead_letter_id), dead_at = r.dead_at,
             attempt_count = d.attempt_count + (r.attempt IS NOT NULL)::integer, lease_owner = NULL, lease_until = NULL
           FROM r WHERE d.id = r.id AND d.lease_owner = $2 AND d.status = 'PENDING'
           RETURNING d.id, d.attempt_count
         )
         INSERT INTO delivery_attempts (delivery_id, number, attempt)
         SELECT changed.id, changed.attempt_count, r.attempt FROM changed JOIN r ON r.id = changed.id WHERE r.attempt IS NOT NULL`,
};
