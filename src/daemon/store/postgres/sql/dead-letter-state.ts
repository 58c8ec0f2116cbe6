/** The status of the delivery a dead letter was (DEAD while it is one). $1 its id. */
export const DEAD_LETTER_STATE = 'SELECT status FROM deliveries WHERE dead_letter_id = $1::uuid';
