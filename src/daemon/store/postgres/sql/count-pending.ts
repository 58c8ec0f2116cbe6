/** Every daemon's pending deliveries, and when the oldest was queued. */
export const COUNT_PENDING = `SELECT count(*) AS count, min(enqueued_at) AS oldest FROM deliveries WHERE status = 'PENDING'`;
