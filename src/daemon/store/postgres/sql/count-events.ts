export const COUNT_EVENTS = 'SELECT count(*) AS count FROM events';
