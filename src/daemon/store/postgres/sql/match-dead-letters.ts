import { DEAD_LETTER_FILTER } from './dead-letter-filter.js';

/**
 * A batch of the ids a filter selects, oldest first (DEAD_LETTER_FILTER's
 * parameters, then the cursor: the last row's dead_at as PostgreSQL's own
 * text, to the microsecond, and its seq; both null for the first batch; then
 * the batch size).
 */
export const MATCH_DEAD_LETTER_IDS = `SELECT d.dead_letter_id, d.subscription_id, d.dead_at::text AS dead_at, d.seq::text AS seq FROM deliveries d
  WHERE ${DEAD_LETTER_FILTER} AND ($4::timestamptz IS NULL OR (d.dead_at, d.seq) > ($4::timestamptz, $5::bigint))
  ORDER BY d.dead_at, d.seq LIMIT $6`;

/** How many dead letters a filter selects, by subscription (DEAD_LETTER_FILTER's parameters). */
export const COUNT_DEAD_LETTERS_BY_SUBSCRIPTION = `SELECT d.subscription_id, count(*)::int AS count FROM deliveries d
  WHERE ${DEAD_LETTER_FILTER} GROUP BY d.subscription_id`;
