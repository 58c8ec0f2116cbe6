/** $1 workspace, $2 event id (a uuid). */
export const FIND_EVENT = 'SELECT event FROM events WHERE workspace_id = $1 AND id = $2::uuid';
