/** The recorded attempts of deliveries, in order. $1 delivery ids. */
export const READ_ATTEMPTS = 'SELECT delivery_id, number, attempt FROM delivery_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, number';
