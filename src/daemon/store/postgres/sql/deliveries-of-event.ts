import { DELIVERY_COLUMNS } from './delivery-columns.js';

/** $1 workspace, $2 event id. */
export const DELIVERIES_OF_EVENT = `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE workspace_id = $1 AND event_id = $2::uuid ORDER BY seq`;
