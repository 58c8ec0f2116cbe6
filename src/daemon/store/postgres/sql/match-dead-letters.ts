import { DEAD_LETTER_FILTER, DEAD_LETTERS_WITH_EVENTS } from './dead-letter-filter.js';

/** Every letter a filter selects, oldest first, with their events (DEAD_LETTER_FILTER's parameters). */
export const MATCH_DEAD_LETTERS = `${DEAD_LETTERS_WITH_EVENTS} WHERE ${DEAD_LETTER_FILTER} ORDER BY d.dead_at, d.seq`;
