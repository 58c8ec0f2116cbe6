import { qualified } from '../database.js';
import { DELIVERY_COLUMNS } from './delivery-columns.js';

/** Dead letters are DEAD deliveries (`d`), read with their events (`e`). */
export const DEAD_LETTERS_WITH_EVENTS = `SELECT ${qualified(DELIVERY_COLUMNS, 'd')}, e.event FROM deliveries d JOIN events e ON e.id = d.event_id`;

/**
 * Which dead letters a filter selects: $1 workspace, $2 event key, $3
 * extension (each null for any). Qualified: the statements join events, which
 * has columns of the same names.
 */
export const DEAD_LETTER_FILTER = `d.status = 'DEAD' AND ($1::text IS NULL OR d.workspace_id = $1) AND ($2::text IS NULL OR d.event_key = $2)
  AND ($3::text IS NULL OR d.extension_key = $3)`;
