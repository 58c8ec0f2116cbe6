import { DEAD_LETTERS_WITH_EVENTS } from './dead-letter-filter.js';

/** A dead letter with its event. $1 its id (null when it is not a uuid: none). */
export const GET_DEAD_LETTER = `${DEAD_LETTERS_WITH_EVENTS} WHERE d.dead_letter_id = $1::uuid AND d.status = 'DEAD'`;
