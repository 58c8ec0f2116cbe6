/** $1 dead letter ids, $2 when (their records' completed_at). */
export const DISCARD_DEAD_LETTERS = `UPDATE deliveries SET status = 'DISCARDED', completed_at = $2 WHERE dead_letter_id = ANY($1::uuid[]) AND status = 'DEAD'`;
