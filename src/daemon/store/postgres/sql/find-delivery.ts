import { DELIVERY_COLUMNS } from './delivery-columns.js';

/** $1 workspace, $2 delivery id. */
export const FIND_DELIVERY = `SELECT ${DELIVERY_COLUMNS} FROM deliveries WHERE workspace_id = $1 AND id = $2`;
