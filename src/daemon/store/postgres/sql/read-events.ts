/** Events by seq, newest first. $1 seqs. */
export const READ_EVENTS = 'SELECT seq, event FROM events WHERE seq = ANY($1::bigint[]) ORDER BY seq DESC';
