import type { Prepared } from '../database.js';

/**
 * A key that could not be claimed, as it stands: kept (`claim_token` null) or
 * claimed, whether its time is up, and whether its claim's event was recorded.
 * $1 workspace, $2 key digest.
 */
export const READ_IDEMPOTENCY_KEY: Prepared = {
  name: 'read-idempotency-key',
  text: `SELECT body_hash, event_id, claim_token, lease_until <= now() AS lapsed, expires_at <= now() AS expired,
                EXISTS (SELECT 1 FROM events e WHERE e.id = k.event_id) AS published
         FROM idempotency_keys k WHERE workspace_id = $1 AND key_digest = $2`,
};
