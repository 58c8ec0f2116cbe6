/** A removed workspace's deliveries (dead letters and attempts with them), then its events; one transaction. $1 workspace. */
export const DELETE_WORKSPACE_DELIVERIES = 'DELETE FROM deliveries WHERE workspace_id = $1';
export const DELETE_WORKSPACE_EVENTS = 'DELETE FROM events WHERE workspace_id = $1';
