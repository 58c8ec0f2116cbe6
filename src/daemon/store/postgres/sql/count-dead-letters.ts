/** Every dead letter. */
export const COUNT_DEAD_LETTERS = `SELECT count(*) AS count FROM deliveries WHERE status = 'DEAD'`;
