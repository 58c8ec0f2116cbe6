import type { Prepared } from '../database.js';

/**
 * Claims a key for a publish, answering a row only when it did: a new key; a
 * kept one past its lifetime; or a claim whose lease lapsed (its daemon
 * stopped renewing it) and whose event was never recorded, or whose lifetime
 * is over anyway. The conflict is the database's, so of two daemons one wins.
 * $1 workspace, $2 key digest, $3 body hash, $4 event id, $5 claim token,
 * $6 the lease in ms, $7 the key's lifetime in ms.
 */
export const CLAIM_IDEMPOTENCY_KEY: Prepared = {
  name: 'claim-idempotency-key',
  text: `INSERT INTO idempotency_keys AS k (workspace_id, key_digest, body_hash, event_id, claim_token, lease_until, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond', now() + $7 * interval '1 millisecond')
         ON CONFLICT (workspace_id, key_digest) DO UPDATE
           SET body_hash = EXCLUDED.body_hash, event_id = EXCLUDED.event_id, claim_token = EXCLUDED.claim_token,
               lease_until = EXCLUDED.lease_until, expires_at = EXCLUDED.expires_at
           WHERE (k.claim_token IS NULL AND k.expires_at <= now())
              OR (k.claim_token IS NOT NULL AND k.lease_until <= now()
                  AND (k.expires_at <= now() OR NOT EXISTS (SELECT 1 FROM events e WHERE e.id = k.event_id)))
         RETURNING 1`,
};
