import { DEAD_LETTER_FILTER, DEAD_LETTERS_WITH_EVENTS } from './dead-letter-filter.js';

/** Newest first, with their events: the first batch of a page, at an offset. DEAD_LETTER_FILTER's parameters, $4 how many, $5 the offset. */
export const LIST_DEAD_LETTERS = `${DEAD_LETTERS_WITH_EVENTS} WHERE ${DEAD_LETTER_FILTER} ORDER BY d.dead_at DESC, d.seq DESC LIMIT $4 OFFSET $5`;

/**
 * A later batch of the page: after the last row read ($4 its dead_at, $5 its
 * seq), not at an offset (a letter dying meanwhile would shift offsets and
 * show a letter twice on one page). $6 how many.
 */
export const LIST_DEAD_LETTERS_AFTER = `${DEAD_LETTERS_WITH_EVENTS}
  WHERE ${DEAD_LETTER_FILTER} AND (d.dead_at, d.seq) < ($4::timestamptz, $5::bigint) ORDER BY d.dead_at DESC, d.seq DESC LIMIT $6`;

/** The listing's total (DEAD_LETTER_FILTER's parameters). */
export const COUNT_DEAD_LETTERS_MATCHING = `SELECT count(*) AS total FROM deliveries d WHERE ${DEAD_LETTER_FILTER}`;
